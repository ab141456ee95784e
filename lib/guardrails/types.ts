/**
 * The contracts of guardrails (issue 27): what a recognizer finds in a text, what a guardrail decides about a
 * request's or an answer's texts, and the phases it runs in. The built-in PII recognizers (pii/), the external
 * services (external/), masking and its reversal (mask.ts) and the request path all speak these types.
 *
 * @module
 */

/** When a guardrail looks: at what the model is sent, at what it says, or both. */
export type GuardrailPhase = "input" | "output";

/** One match of a recognizer in a text: its type (`EMAIL`, `CREDIT_CARD`, …) and its span, `[start, end)`. */
export interface Finding {
  readonly type: string;
  readonly start: number;
  readonly end: number;
}

/**
 * A built-in recognizer: finds every match of its type in a text, with no context words needed. Pure and
 * synchronous; bounded in time by the text's length (no backtracking blow-up on hostile text).
 */
export interface Recognizer {
  /** Upper-case type name, used in placeholders (`<EMAIL_1>`) and policy outcomes (`EMAIL`). */
  readonly type: string;
  find(text: string): Finding[];
  /** For a recognizer whose values can be longer than a stream's window (a private key, a JWT). */
  readonly long?: LongValues;
}

/**
 * How a stream, whose text arrives in pieces (holdback.ts), sees a value longer than its window whole: it holds
 * the text from where such a value begins until the value ends (up to a cap), and past the cap it masks or
 * refuses the value and what continues it.
 */
export interface LongValues {
  /**
   * Where a value begins that the end of `text` may leave unfinished — more text could complete it, or extend
   * it past where `find` would end it — or -1.
   */
  unfinished(text: string): number;
  /**
   * `text` continues a value cut at the cap: `ended` with the value's `end` in it, or, while its end has not
   * come, `end` the characters sure to be the value (a tail that may start its end marker, `-----END PRIV`,
   * left out to be read again with more text).
   */
  rest(text: string): { readonly end: number; readonly ended: boolean };
}

/** What a guardrail service decided about a list of texts. */
export type Verdict =
  | { readonly action: "allow" }
  /** Refuse: `reason` is shown to the client; `categories` (never the matched text) go to the policy outcome. */
  | { readonly action: "deny"; readonly reason: string; readonly categories: readonly string[] }
  /** Allow, with these texts instead (same count and order as asked); `categories` as for deny. */
  | { readonly action: "replace"; readonly texts: readonly string[]; readonly categories: readonly string[] }
  /** Allow, and record that something matched (categories only). */
  | { readonly action: "flag"; readonly categories: readonly string[] };

/** What an external guardrail is asked. */
export interface GuardrailInput {
  readonly phase: GuardrailPhase;
  /** The alias the request names. */
  readonly alias: string;
  /** The token's name (never its secret). */
  readonly token: string;
  /** Every text the phase covers, in a stable order (messages, system/instructions, tool arguments, …). */
  readonly texts: readonly string[];
}

/** An external guardrail service: one call per phase per request, bounded by `signal`. */
export interface GuardrailService {
  check(input: GuardrailInput, signal: AbortSignal): Promise<Verdict>;
}

/**
 * A guardrail as the request path runs it, resolved from `guardrails:` (lib/config/guardrails_schema.ts): its
 * phases, its action, and either the built-in PII recognizers it applies or the external service it calls,
 * with that call's timeout and failure mode. Attached by name to aliases and tokens.
 *
 * @module
 */
import type { Scrubber } from "../secrets/scrubber.ts";
import type { GuardrailPhase, GuardrailService } from "./types.ts";

/** What a guardrail does with what it finds: refuse, replace it with typed placeholders, or only record it. */
export type GuardrailAction = "deny" | "mask" | "flag";

export interface ResolvedGuardrail {
  readonly name: string;
  readonly phases: ReadonlySet<GuardrailPhase>;
  readonly action: GuardrailAction;
  /** `mask` on input: give the values back in the answer (the model never sees them, the client does). */
  readonly reverse: boolean;
  /** Shown to the client on a denial, instead of the generic message. */
  readonly message: string | null;
  /** Built-in: the PII types it recognizes. */
  readonly pii: readonly string[] | null;
  /** External: the service, how long one call may take, and what its failure means. */
  readonly service: GuardrailService | null;
  readonly timeoutMs: number;
  readonly onFailure: "fail_open" | "fail_closed";
  /**
   * The config's scrubber: an external service's categories and reason are its own text, and one that quotes
   * the credential it was sent must not put it in the usage record, the admin API or a client's error.
   */
  readonly scrubber: Scrubber;
}

/** How one guardrail went for one request and phase: the usage record's own shape (never the matched text). */
export type { GuardrailOutcome } from "../usage/record.ts";

/** The guardrails that apply to a request in `phase`: the alias's, then the token's, each name once. */
export function guardrailsFor(
  phase: GuardrailPhase,
  ...lists: (readonly ResolvedGuardrail[] | null | undefined)[]
): ResolvedGuardrail[] {
  const out: ResolvedGuardrail[] = [];
  const seen = new Set<string>();
  for (const list of lists) {
    for (const g of list ?? []) {
      if (!g.phases.has(phase) || seen.has(g.name)) continue;
      seen.add(g.name);
      out.push(g);
    }
  }
  return out;
}

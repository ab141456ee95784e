/**
 * Content rules of an alias: deny a request whose text matches a pattern, or redact the matches before the
 * request goes upstream. Rules see every text the client sends to the model: string message contents and
 * the text parts of array contents (any role), plain-text documents, what earlier assistant turns said besides
 * their content (`reasoning_content`, refusals), or the strings of an embeddings `input` (and the `title`s a Gemini
 * embed request carries to a Gemini target beside it); for a body passed through to a native target, the same
 * texts where that API keeps them (each API's `native_texts.ts`), and those only a native target reads.
 *
 * Token-id embeddings input has no text to match, so an alias with rules refuses it (400
 * `token_input_not_checkable`) rather than let a denied text through as ids. Not covered, by design: tool-call
 * arguments and non-text parts (images, audio, files other than plain text).
 *
 * @module
 */
import type { Endpoint } from "../config/schema.ts";
import type { ResolvedContentRule } from "../config/types.ts";
import type { JsonObject } from "../openai/types.ts";
import { isTokenInput, type TextSlot, textSlots } from "./text_slots.ts";
import { PolicyDenied, tokenInputUnreadable } from "./denied.ts";

/** What the content rules did to a request that they did not deny. */
export type ContentDecision =
  | { readonly outcome: "allow" }
  /** `rules` are the redact rules that matched, as `alias.content:<name>`. */
  | { readonly outcome: "modify"; readonly rules: readonly string[] };

/** The rule name a content rule is reported under. */
export function contentRuleName(rule: ResolvedContentRule): string {
  return `alias.content:${rule.name}`;
}

function globalRegex(regex: RegExp): RegExp {
  return regex.global ? regex : new RegExp(regex.source, `${regex.flags}g`);
}

/**
 * `text` with every redact rule of `rules` applied in order, as {@linkcode applyContentRules} applies them (deny
 * rules are not judged here): for a body passed through natively, whose texts the policy saw in the chat form.
 */
export function redactText(text: string, rules: readonly ResolvedContentRule[]): string {
  for (const rule of rules) {
    if (rule.action === "redact") text = text.replace(globalRegex(rule.regex), () => rule.replacement);
  }
  return text;
}

/**
 * `body` (a request passed through to a native target) with every redact rule applied to the texts
 * `slotsOf` finds in it, as {@linkcode applyContentRules} applied them to its chat form, then what the input
 * guardrails made of each (`guarded`: a text as redacted → as they left it, `RequestGuardrails.nativeRewrites`).
 * The body is not changed: its items are the client's, stored with the response and sent again to the next
 * target on a fallback, and a second redaction is not always the first's (a replacement may match again). When
 * a text changes, a copy is changed and returned; otherwise `body` itself.
 */
export function redactedBody(
  body: JsonObject,
  slotsOf: (body: JsonObject) => readonly TextSlot[],
  rules: readonly ResolvedContentRule[],
  guarded?: ReadonlyMap<string, string>,
): JsonObject {
  if (guarded === undefined && !rules.some((r) => r.action === "redact")) return body;
  const slots = slotsOf(body);
  const redacted = slots.map((slot) => {
    const text = redactText(slot.text, rules);
    return guarded?.get(text) ?? text;
  });
  if (slots.every((slot, i) => slot.text === redacted[i])) return body;
  const copy = structuredClone(body);
  // The same description over the copy finds the same texts in the same order.
  slotsOf(copy).forEach((slot, i) => {
    if (redacted[i] !== slot.text) slot.write(redacted[i]);
  });
  return copy;
}

/** A text a native target reads, as the content rules judge it: read only (the native body is redacted apart). */
export type NativeText = Pick<TextSlot, "param" | "text">;

/**
 * The texts `slotsOf` finds in a client's `body`, for `PolicyRequest.nativeTexts`, when `native` (something judges
 * them and the alias has a target that reads the body natively: `readsNativeTexts` in lib/http/accounting.ts):
 * an alias with no such target sends only the chat form, whose texts the policy reads anyway.
 */
export function nativeTextsOf(
  body: JsonObject,
  slotsOf: (body: JsonObject) => readonly TextSlot[],
  native: boolean,
): NativeText[] | undefined {
  return native ? slotsOf(body).map(({ param, text }) => ({ param, text })) : undefined;
}

/**
 * Applies an alias's content rules to a request body, in place.
 *
 * Deny rules are judged first, in config order, on the text as the client sent it (so no redaction can hide
 * a match from them): the first that matches throws a {@linkcode PolicyDenied} — 400
 * `invalid_request_error`, code `content_policy_violation`, `param` naming the first text it matched in —
 * with the rule's message or a generic one. The matched text is never echoed. Then every redact rule, in
 * order, replaces all its matches with its `replacement`, taken literally (`$1` is not expanded).
 *
 * `native` are the texts of the client's body as a native target would read it (a Responses reasoning item no
 * assistant turn follows, a plain-text file only a native target reads, have no chat form): deny rules judge
 * them after the chat form's, and a redact rule that matches one modifies the request (the native body is
 * redacted when it is built, {@linkcode redactedBody}). `carried` are texts the request carries beside its body
 * (`PolicyRequest.carriedTexts`): judged and redacted in place as the body's own.
 */
export function applyContentRules(
  endpoint: Endpoint,
  body: JsonObject | undefined,
  rules: readonly ResolvedContentRule[],
  native: readonly NativeText[] = [],
  carried: readonly TextSlot[] = [],
): ContentDecision {
  if (!body || rules.length === 0) return { outcome: "allow" };
  if (isTokenInput(endpoint, body)) {
    throw tokenInputUnreadable(contentRuleName(rules[0]), "the content rules");
  }
  // A Responses, Messages or Gemini request reaches the policy in the chat form; what it carries beside it is
  // read after its body's texts, and rewritten as they are.
  const slots = carried.length === 0 ? textSlots(endpoint, body) : [...textSlots(endpoint, body), ...carried];
  if (slots.length === 0 && native.length === 0) return { outcome: "allow" };
  for (const rule of rules) {
    if (rule.action !== "deny") continue;
    const hit = slots.find((slot) => slot.text.search(rule.regex) !== -1) ??
      native.find((text) => text.text.search(rule.regex) !== -1);
    if (!hit) continue;
    const message = rule.message ?? `This request was rejected by the content policy (rule ${rule.name}).`;
    throw new PolicyDenied(400, message, contentRuleName(rule), {
      type: "invalid_request_error",
      code: "content_policy_violation",
      param: hit.param,
    });
  }
  const matched: string[] = [];
  for (const rule of rules) {
    if (rule.action !== "redact") continue;
    const regex = globalRegex(rule.regex);
    let any = native.some((text) => text.text.search(regex) !== -1);
    for (const slot of slots) {
      if (slot.text.search(regex) === -1) continue;
      any = true;
      slot.text = slot.text.replace(regex, () => rule.replacement);
      slot.write(slot.text);
    }
    if (any) matched.push(contentRuleName(rule));
  }
  return matched.length > 0 ? { outcome: "modify", rules: matched } : { outcome: "allow" };
}

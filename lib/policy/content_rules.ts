/**
 * Content rules of an alias: deny a request whose text matches a pattern, or redact the matches before the
 * request goes upstream. Rules see every text the client sends to the model: string message contents and
 * the text parts of array contents (any role), what earlier assistant turns said besides their content
 * (`reasoning_content`, refusals), or the strings of an embeddings `input`.
 *
 * Not covered, by design: token-id embeddings input (there is no text to match), tool-call arguments and
 * non-text parts (images, audio, files).
 *
 * @module
 */
import type { Endpoint } from "../config/schema.ts";
import type { ResolvedContentRule } from "../config/types.ts";
import type { JsonObject } from "../openai/types.ts";
import { textSlots } from "./text_slots.ts";
import { PolicyDenied } from "./denied.ts";

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
 * Applies an alias's content rules to a request body, in place.
 *
 * Deny rules are judged first, in config order, on the text as the client sent it (so no redaction can hide
 * a match from them): the first that matches throws a {@linkcode PolicyDenied} — 400
 * `invalid_request_error`, code `content_policy_violation`, `param` naming the first text it matched in —
 * with the rule's message or a generic one. The matched text is never echoed. Then every redact rule, in
 * order, replaces all its matches with its `replacement`, taken literally (`$1` is not expanded).
 */
export function applyContentRules(
  endpoint: Endpoint,
  body: JsonObject | undefined,
  rules: readonly ResolvedContentRule[],
): ContentDecision {
  if (!body || rules.length === 0) return { outcome: "allow" };
  // A Responses, Messages or Gemini request reaches the policy in the chat form.
  const slots = textSlots(endpoint, body);
  if (slots.length === 0) return { outcome: "allow" };
  for (const rule of rules) {
    if (rule.action !== "deny") continue;
    const hit = slots.find((slot) => slot.text.search(rule.regex) !== -1);
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
    let any = false;
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

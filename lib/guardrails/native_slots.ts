/**
 * The texts a native target reads, for the input guardrails. A request passed through to a target that speaks
 * its API natively (a Responses body to an OpenAI target with `native_responses`, a Messages body to Claude, a
 * Gemini body to Gemini) carries texts the chat form has no place for: a Responses reasoning item no assistant
 * turn follows, a plain-text `input_file`, a Messages document of content blocks or a tool result's document, a
 * Gemini model turn's thought. Each client API says where its native body keeps its texts (its
 * `native_texts.ts`, `PolicyRequest.nativeTexts`, which the content rules judge too); the guardrails judge the
 * ones no chat text already holds beside the chat form's, and what they made of every text the native body holds
 * is kept for the native body's builders (`RequestGuardrails.nativeRewrites`): a native target, or a vendor's
 * token count, is never sent a value a guardrail masked.
 *
 * @module
 */
import { type NativeText, redactText } from "../policy/content_rules.ts";
import type { TextSlot } from "../policy/text_slots.ts";
import type { ResolvedContentRule } from "../config/types.ts";

/** What the guardrails changed of a request's texts, once they ran. */
export interface NativeChanges {
  /**
   * Each text of the native body, as the content rules left it, that a guardrail changed → as it left it;
   * undefined when none changed.
   */
  readonly rewrites?: ReadonlyMap<string, string>;
  /**
   * Whether a text of the chat form changed: a native body cannot be trusted to carry that change (a tool call's
   * arguments, a thinking block's text, two Gemini parts the chat form joined are no text of it), so the request
   * is served over the chat form.
   */
  readonly chatChanged: boolean;
}

/** The native texts the guardrails judge beside the chat form's, and what they made of them. */
export interface NativeSlots {
  /** The native texts no chat slot holds (each once), to run after the chat form's. */
  readonly slots: TextSlot[];
  /** Once the guardrails ran: what they changed. */
  changes(): NativeChanges;
}

/**
 * `native` (the client's texts, as sent) as the input guardrails read them: redacted by `rules` first, as the
 * native body is built ({@linkcode redactText}; the chat slots were redacted in place), then judged only where no
 * slot of `chat` holds the same text, which the run judges once (a text is judged alike wherever it is: its
 * placeholders are the same). `chat` are read again after the run, so a chat text a guardrail changed is changed
 * in the native body too.
 */
export function nativeSlots(
  native: readonly NativeText[],
  rules: readonly ResolvedContentRule[],
  chat: readonly TextSlot[],
): NativeSlots {
  const before = chat.map((slot) => slot.text);
  const texts = new Set<string>();
  const held = new Set(before);
  const slots: TextSlot[] = [];
  const sent: string[] = [];
  for (const { param, text } of native) {
    const redacted = redactText(text, rules);
    texts.add(redacted);
    if (held.has(redacted)) continue;
    held.add(redacted);
    sent.push(redacted);
    // Written nowhere: the native body is built per target, later, from the client's (rewrites()).
    slots.push({ param, text: redacted, write() {} });
  }
  return {
    slots,
    changes() {
      const changed = new Map<string, string>();
      const note = (was: string, now: string) => {
        if (was !== now && texts.has(was) && !changed.has(was)) changed.set(was, now);
      };
      chat.forEach((slot, i) => note(before[i], slot.text));
      slots.forEach((slot, i) => note(sent[i], slot.text));
      return {
        ...(changed.size > 0 ? { rewrites: changed } : {}),
        chatChanged: chat.some((slot, i) => slot.text !== before[i]),
      };
    },
  };
}

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
 * A change to a chat text lands in the native body by its text: the native slots that hold the same text, as
 * the content rules left it, get what the guardrails made of it. That is exact when the native body holds the
 * text whole as often as the chat form does and the chat text is no copy of something else. Where it is not (a
 * chat text made by joining several native texts, a tool call's arguments, which the chat form serializes anew,
 * a Messages thinking block's text, whose signature covers it), the change cannot be placed, and the request is
 * served over the chat form; {@linkcode NativeSlots.lost} then names what that form goes without.
 *
 * @module
 */
import type { Endpoint } from "../config/schema.ts";
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
   * Whether a chat text changed in a way the native body cannot carry exactly (see the module's doc), so the
   * request is served over the chat form.
   */
  readonly unplaced: boolean;
}

/** The native texts the guardrails judge beside the chat form's, and what they made of them. */
export interface NativeSlots {
  /** The native texts no chat slot holds (each once), to run after the chat form's. */
  readonly slots: TextSlot[];
  /** Once the guardrails ran: what they changed. */
  changes(): NativeChanges;
  /**
   * The params of the native texts the chat form holds nowhere (neither whole nor inside a text it joined),
   * each once, in the native body's order: what a native target served over the chat form goes without.
   */
  lost(): string[];
}

/** A tool call's arguments (a custom call's input, a legacy `function_call`'s): serialized anew by the chat form. */
const TOOL_ARGUMENTS =
  /\.(?:tool_calls\[\d+\]\.(?:function\.arguments|custom\.input)|function_call\.arguments)$/;

/**
 * Whether the chat text at `param` is one no native text holds as its own, even when their texts are equal: a
 * tool call's arguments (an object natively: Messages' `input`, Gemini's `args`, or a string the chat form
 * re-serializes), a Messages thinking block's text (signed, left alone natively).
 */
function twinless(endpoint: Endpoint, param: string): boolean {
  return TOOL_ARGUMENTS.test(param) || (endpoint === "messages" && param.endsWith(".reasoning_content"));
}

/** How many times each text occurs in `texts`. */
function counted(texts: Iterable<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const text of texts) counts.set(text, (counts.get(text) ?? 0) + 1);
  return counts;
}

/**
 * `native` (the client's texts, as sent) as the input guardrails read them: redacted by `rules` first, as the
 * native body is built ({@linkcode redactText}; the chat slots were redacted in place), then judged only where no
 * slot of `chat` holds the same text, which the run judges once (a text is judged alike wherever it is: its
 * placeholders are the same). `chat` are read again after the run, so a chat text a guardrail changed is changed
 * in the native body too, where it can be placed. `endpoint`: the client API, whose chat params say where a chat
 * text came from.
 */
export function nativeSlots(
  native: readonly NativeText[],
  rules: readonly ResolvedContentRule[],
  chat: readonly TextSlot[],
  endpoint: Endpoint,
): NativeSlots {
  const before = chat.map((slot) => slot.text);
  const redacted = native.map(({ text }) => redactText(text, rules));
  const held = new Set(before);
  const slots: TextSlot[] = [];
  const sent: string[] = [];
  native.forEach(({ param }, i) => {
    const text = redacted[i];
    if (held.has(text)) return;
    held.add(text);
    sent.push(text);
    // Written nowhere: the native body is built per target, later, from the client's (rewrites()).
    slots.push({ param, text, write() {} });
  });
  return {
    slots,
    changes() {
      const changed = new Map<string, string>();
      const touched = new Set<string>();
      chat.forEach((slot, i) => {
        if (slot.text !== before[i]) touched.add(before[i]);
      });
      let unplaced = false;
      if (touched.size > 0) {
        // Each changed text: what every chat slot holding it became (null: not all alike, since the native body
        // cannot tell them apart, or one is no native text's twin), and how many chat slots hold it.
        const outcome = new Map<string, { now: string | null; chats: number }>();
        chat.forEach((slot, i) => {
          const was = before[i];
          if (!touched.has(was)) return;
          const now = twinless(endpoint, slot.param) ? null : slot.text;
          const seen = outcome.get(was);
          if (seen === undefined) outcome.set(was, { now, chats: 1 });
          else {
            seen.chats++;
            if (seen.now !== now) seen.now = null;
          }
        });
        const natives = counted(redacted.filter((text) => touched.has(text)));
        // Placed where the native body holds the text as often as the chat form: each chat text has its twin.
        for (const [was, { now, chats }] of outcome) {
          if (now !== null && (natives.get(was) ?? 0) >= chats) changed.set(was, now);
          else unplaced = true;
        }
      }
      slots.forEach((slot, i) => {
        if (slot.text !== sent[i]) changed.set(sent[i], slot.text);
      });
      return { ...(changed.size > 0 ? { rewrites: changed } : {}), unplaced };
    },
    lost() {
      const exact = new Set(before);
      // One text to search: a native text the chat form joined with others is inside one of its texts.
      const joined = before.join("\u0000");
      const params = new Set<string>();
      native.forEach(({ param }, i) => {
        const text = redacted[i];
        if (text === "" || exact.has(text) || joined.includes(text)) return;
        params.add(param);
      });
      return [...params];
    },
  };
}

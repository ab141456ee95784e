/**
 * What an answer can say beside the texts the output checks read (`SAID_FIELDS` and tool calls:
 * lib/openai/said_fields.ts), kept from a request whose answer they check. Decided once, at admission, on the
 * chat form every client API routes (only chat completions can ask for either in it: Responses'
 * `top_logprobs` and Gemini's `responseLogprobs`, `responseModalities` and `speechConfig` have no place in
 * that form, so under output checks, which send every target that form, they are dropped already):
 *
 * - log probabilities (`logprobs`, `top_logprobs`): the answer's tokens again, each with its text and bytes,
 *   and their likely alternatives. A check that masks a value in the content leaves it spelled out there, and
 *   a stream withheld at a value would have sent its tokens before the error event. The params are not sent
 *   upstream, so the answer has none (`logprobs: null`, as a target without them answers), and are named in
 *   `x-gateway-dropped` and the usage record's `dropped` (`RequestGuardrails.withheld`): what a check read is
 *   all the client gets, and the client is told what it went without.
 * - spoken output (`modalities` with `"audio"`, `audio` settings): the speech says every word, and no check
 *   can hear it, nor mask a value in it; checking its transcript would still deliver the sound. Dropping it
 *   would answer an app that plays the speech with none, so the request is refused (400
 *   `audio_output_not_checkable`, naming the param, before any upstream is called), as token-id input is under
 *   input checks: the client can ask for text.
 *
 * Any output check applies, `flag` too: it records what the answer says, and an unread part would go
 * unrecorded. Upstream output is untrusted, so a checked answer loses either part should its upstream send it
 * unasked ({@linkcode dropUnread}, lib/answer/guarded_answer.ts): what a check read is all the client gets,
 * whatever the upstream does.
 *
 * @module
 */
import { isObject, type JsonObject } from "../openai/types.ts";
import { dropUnreadAnnotations } from "./annotation_texts.ts";
import type { ChunkSource } from "../streams/pull_through.ts";
import { asksAudio, asksLogprobs, SAID_FIELDS } from "../openai/said_fields.ts";
import { PolicyDenied } from "../policy/denied.ts";
import type { ResolvedGuardrail } from "./resolved.ts";
import { guardrailRule } from "./run.ts";

/** The chat form's params that ask for log probabilities. */
const LOGPROB_PARAMS = ["logprobs", "top_logprobs"] as const;

/**
 * Keeps from `chat`, a chat-form request whose answer `output` checks (at least one), what those checks could
 * not read: the log-probability params are removed in place (when the request asks for any, every one it sent,
 * so no lone `top_logprobs` is left for the upstream to refuse) and returned, to be named as dropped; a request
 * for spoken output is refused, the first of `output` named as the rule. An empty list when it asked for
 * neither.
 */
export function withholdUnread(chat: JsonObject, output: readonly ResolvedGuardrail[]): string[] {
  const audio = asksAudio(chat);
  if (audio !== null) throw audioNotCheckable(output[0].name, audio);
  if (!asksLogprobs(chat)) return [];
  const withheld = LOGPROB_PARAMS.filter((param) => chat[param] != null);
  for (const param of LOGPROB_PARAMS) delete chat[param];
  return withheld;
}

/** The 400 for a request of spoken output on an alias or token whose guardrail `name` checks the answer. */
function audioNotCheckable(name: string, param: "modalities" | "audio"): PolicyDenied {
  const ask = param === "modalities" ? `'audio' in 'modalities'` : `'audio'`;
  return new PolicyDenied(
    400,
    `This model's answers are checked by guardrail ${name}, which cannot check spoken output: send the ` +
      `request without ${ask} to get a text answer.`,
    guardrailRule(name),
    { type: "invalid_request_error", code: "audio_output_not_checkable", param },
  );
}

/**
 * The fields of a checked message or delta that reach the client: what the checks read (`SAID_FIELDS`, the tool
 * calls and a legacy `function_call`: lib/guardrails/call_texts.ts), its `role`, and `annotations` (a web
 * search's citations, whose texts the checks read too, less what they do not read: annotation_texts.ts). Anything
 * else an upstream puts there is
 * said where no check reads it: `audio`, and a vendor's copy of the answer's words, as OpenRouter's
 * `reasoning_details` repeats the reasoning it also sends as `reasoning` (read as `reasoning_content`).
 */
const READ_FIELDS: ReadonlySet<string> = new Set([
  ...SAID_FIELDS,
  "role",
  "tool_calls",
  "function_call",
  "annotations",
]);

/**
 * Takes off a checked answer (a completion, or a stream's chunk), in place, what no output check reads, should
 * the upstream send it though the request did not ask ({@linkcode withholdUnread}): each choice's `logprobs`
 * (made `null`, as an answer without them has it) and every field of its message or delta outside
 * {@linkcode READ_FIELDS} (`audio`, a vendor's `reasoning_details`, …). Fields are set rather than deleted: this
 * runs on every chunk of a checked stream (lib/providers/openai/reasoning.ts says why).
 */
export function dropUnread(answer: { readonly choices?: unknown }): void {
  const choices = answer.choices;
  if (!Array.isArray(choices)) return;
  for (const choice of choices) {
    if (!isObject(choice)) continue;
    if (choice.logprobs != null) choice.logprobs = null;
    const said = isObject(choice.message)
      ? choice.message
      : isObject(choice.delta)
      ? choice.delta
      : undefined;
    if (said === undefined) continue;
    for (const field in said) {
      if (!READ_FIELDS.has(field) && said[field] !== undefined) said[field] = undefined;
    }
    dropUnreadAnnotations(said);
  }
}

/** `source`'s chunks, each without what no output check reads ({@linkcode dropUnread}) as it is read. */
export function unreadDropped<T extends { readonly choices?: unknown }>(
  source: ChunkSource<T>,
): ChunkSource<T> {
  return {
    async read() {
      const next = await source.read();
      if (!next.done) dropUnread(next.value);
      return next;
    },
    cancel: (reason) => source.cancel(reason),
  };
}

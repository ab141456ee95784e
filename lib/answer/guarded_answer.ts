/**
 * Output guardrails at the answer runner (lib/guardrails/): a routed answer is checked before the client API
 * renders it, in the chat form. Kept out of the runner's path unless the request has guardrails (one property
 * check), so a request without them pays nothing.
 *
 * @module
 */
import type { RoutedAnswer } from "../http/route_request.ts";
import type { ClientContext } from "../http/context.ts";
import { noteOutcome } from "../http/accounting.ts";
import { chunkTexts, guardChunks, guardCompletion } from "../guardrails/output.ts";
import { dropUnread, unreadDropped } from "../guardrails/unread_output.ts";
import type { RequestGuardrails } from "../guardrails/request.ts";
import type { ChatAnswer, NativeAnswer, RoutedRequest } from "./routed.ts";
import { type AnsweredRequest, completionReported, completionTexts, usageOf } from "./usage.ts";
import { watchedReader } from "./watched_reader.ts";
import { StreamTexts } from "../usage/stream_texts.ts";
import { tokenClassesOf } from "../pricing/cost.ts";
import type { ChatCompletionChunk } from "../openai/types.ts";
import type { ReportedPrompt } from "../openai/reported_prompt.ts";

/**
 * A routed answer under the request's guardrails (lib/guardrails/output.ts): checked, and given back its masked
 * values, in the chat form (a request under guardrails is never passed through natively when its answer is
 * checked). A checked answer goes without what no check reads (log probabilities, audio:
 * lib/guardrails/unread_output.ts), which the request did not ask for, should the upstream send it anyway. Not served from, nor written to, the response cache: an entry holds an answer as it was checked
 * then, and a masked request's placeholders are its own. A stream refused at its first chunk is cancelled and
 * its target's lease released before the 400 goes out.
 *
 * An answer the checks withhold was still answered, and paid for, upstream: its record and the token's budget
 * carry its usage (the upstream's, else counted from what it sent), as any answered request's do, and its record
 * and error name what the request went without (`request.dropped`), as a stream withheld later does. A stream's
 * is kept in `state.received` as it arrives, for the runner to settle with however the stream ends.
 */
export async function guardedAnswer(
  ctx: ClientContext,
  state: RequestGuardrails,
  request: AnsweredRequest & Pick<RoutedRequest, "dropped">,
  answer: Promise<RoutedAnswer<ChatAnswer | NativeAnswer>>,
): Promise<RoutedAnswer<ChatAnswer | NativeAnswer>> {
  const routed = await answer;
  const value = routed.value;
  if (state.output.length === 0 && !state.reverse) return routed;
  const req = { alias: ctx.record.alias ?? "", token: ctx.identity.name, signal: ctx.signal };
  // Checked: the answer loses what no check reads (log probabilities, audio), should the upstream send it unasked.
  const checked = state.output.length > 0;
  if (value.kind === "json") {
    if (checked) dropUnread(value.body);
    // Read before the checks mask the completion in place: the upstream's own words are what it was paid for.
    const reported = completionReported(value.body);
    const texts = reported ? [] : completionTexts(value.body);
    try {
      await guardCompletion(value.body, state, req);
    } catch (err) {
      request.dropped?.(routed.target, routed.headers);
      noteOutcome(ctx, { usage: await usageOf(reported, request, texts) });
      throw err;
    }
    return routed;
  }
  if (value.kind !== "stream") return routed;
  const received: NonNullable<RequestGuardrails["received"]> = { texts: new StreamTexts() };
  state.received = received;
  const receive = (chunk: ChatCompletionChunk) => {
    if (chunk.usage) received.usage = chunk.usage;
    for (const text of chunkTexts(chunk)) received.texts.push(text);
  };
  if (checked) dropUnread(value.stream.first);
  receive(value.stream.first);
  const rest = watchedReader(checked ? unreadDropped(value.stream.rest) : value.stream.rest, {
    value: receive,
  });
  try {
    return {
      ...routed,
      value: { kind: "stream", stream: await guardChunks({ first: value.stream.first, rest }, state, req) },
    };
  } catch (err) {
    await rest.cancel(err).catch(() => {});
    routed.lease.release();
    request.dropped?.(routed.target, routed.headers);
    noteOutcome(ctx, { usage: await receivedUsage(received, request) });
    throw err;
  }
}

/** The usage of what a stream under output guardrails received: the upstream's, else counted from its texts. */
export function receivedUsage(
  received: NonNullable<RequestGuardrails["received"]>,
  request: AnsweredRequest,
  prompt?: ReportedPrompt,
) {
  const usage = received.usage;
  const reported = usage && tokenClassesOf(usage.prompt_tokens, usage.completion_tokens, usage);
  return usageOf(reported, request, received.texts, prompt);
}

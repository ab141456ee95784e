/**
 * Output guardrails at the answer runner (lib/guardrails/): a routed answer is checked before the client API
 * renders it, in the chat form. Kept out of the runner's path unless the request has guardrails (one property
 * check), so a request without them pays nothing.
 *
 * @module
 */
import type { RoutedAnswer } from "../http/route_request.ts";
import type { ClientContext } from "../http/context.ts";
import { guardChunks, guardCompletion } from "../guardrails/output.ts";
import type { RequestGuardrails } from "../guardrails/request.ts";
import type { ChatAnswer, NativeAnswer } from "./routed.ts";

/**
 * A routed answer under the request's guardrails (lib/guardrails/output.ts): checked, and given back its masked
 * values, in the chat form (a request under guardrails is never passed through natively when its answer is
 * checked). Not served from, nor written to, the response cache: an entry holds an answer as it was checked
 * then, and a masked request's placeholders are its own. A stream refused at its first chunk is cancelled and
 * its target's lease released before the 400 goes out.
 */
export async function guardedAnswer(
  ctx: ClientContext,
  state: RequestGuardrails,
  answer: Promise<RoutedAnswer<ChatAnswer | NativeAnswer>>,
): Promise<RoutedAnswer<ChatAnswer | NativeAnswer>> {
  const routed = await answer;
  const value = routed.value;
  if (state.output.length === 0 && !state.reverse) return routed;
  const req = { alias: ctx.record.alias ?? "", token: ctx.identity.name, signal: ctx.signal };
  if (value.kind === "json") {
    await guardCompletion(value.body, state, req);
    return routed;
  }
  if (value.kind !== "stream") return routed;
  try {
    return { ...routed, value: { kind: "stream", stream: await guardChunks(value.stream, state, req) } };
  } catch (err) {
    await value.stream.rest.cancel(err).catch(() => {});
    routed.lease.release();
    throw err;
  }
}

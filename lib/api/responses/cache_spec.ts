/**
 * How the response cache keeps a Responses answer passed through to a `native_responses` target
 * (lib/answer/cached_native.ts): keyed on the client's body, whole when the Response completed (a stream: with
 * `response.completed`), incomplete when it says so. The client gets the gateway's own `resp_…` id on a hit as
 * on a fresh answer, and the upstream's id is kept as it was (a continuation passes it back upstream); the
 * Response's `created_at` (and `completed_at`) on a hit are the hit's time.
 *
 * Whether the upstream was asked to keep the answer (`store`, on unless `false`) is keyed: a hit stored under
 * its new id names the upstream's id for a later `previous_response_id`, which works only where the upstream
 * kept that response. An entry filled with `store: false` serves only `store: false` requests (which the gateway
 * does not store for chaining by upstream id), so every stored hit names a response its upstream holds.
 *
 * @module
 */
import type { NativeCacheSpec, NativeEnding } from "../../answer/runner.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import type { OpenAIBeta } from "../../providers/types.ts";
import { callsClient, isClientCall } from "./client_calls.ts";

/** The events that end a Responses stream. */
const FINAL_EVENTS = new Set(["response.completed", "response.incomplete", "response.failed"]);

/** The stream events that carry one output item whole (`item`), as it starts and as it ends. */
const ITEM_EVENTS: ReadonlySet<unknown> = new Set([
  "response.output_item.added",
  "response.output_item.done",
]);

/**
 * How a Response ended: cut off when it says `incomplete`, whole when `completed`; and whether it hands the
 * client a call to run (client_calls.ts: the same list a traced answer's finish reason reads), in its output or
 * in any item a stream's events carried (an upstream whose final event leaves a streamed item out of its
 * `output` still handed the client that call). One cut off in the middle of its calls is both, and needs both
 * opt-ins (lib/cache/opt_ins.ts).
 */
function endingOf(response: unknown, events: readonly JsonObject[] = []): NativeEnding | undefined {
  if (!isObject(response)) return undefined;
  if (response.status !== "completed" && response.status !== "incomplete") return undefined;
  const streamed = events.some((event) => ITEM_EVENTS.has(event.type) && isClientCall(event.item));
  return [{ calls: streamed || callsClient(response), cut: response.status === "incomplete" }];
}

/**
 * A Response object as a replay at `now` (epoch ms) shows it: created (and, once done, completed) now, in Unix
 * seconds as the upstream wrote them; a time it left out stays out.
 */
function restampResponse(response: JsonObject, now: number): void {
  const seconds = Math.floor(now / 1000);
  if (typeof response.created_at === "number") response.created_at = seconds;
  if (typeof response.completed_at === "number") response.completed_at = seconds;
}

/**
 * The cache spec of a Responses request whose client body is `body`, sent with `openaiBeta` (its `openai-beta`
 * names, which turn on a beta and so change the answer, are keyed when sent; a key without them is as before).
 */
export function responsesCacheSpec(body: JsonObject, openaiBeta: OpenAIBeta | null = null): NativeCacheSpec {
  const store = body.store !== false;
  return {
    api: "responses",
    body,
    keyed: openaiBeta?.header ? { store, beta: openaiBeta.header } : { store },
    isFinal: (event) => typeof event.type === "string" && FINAL_EVENTS.has(event.type),
    ending(values) {
      if (values.length === 1 && values[0].object === "response") return endingOf(values[0]);
      const last = values.at(-1);
      return last?.type === "response.completed" || last?.type === "response.incomplete"
        ? endingOf(last.response, values)
        : undefined;
    },
    // A whole Response, or the one inside a `response.*` event (every event that carries one shows it).
    restamp(value, now) {
      if (value.object === "response") restampResponse(value, now);
      else if (isObject(value.response)) restampResponse(value.response, now);
      return value;
    },
  };
}

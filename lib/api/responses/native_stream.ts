/**
 * The client's body of a Responses stream passed through from a native upstream: each upstream event is
 * forwarded the moment it is read, rewritten ({@linkcode clientEvent}: the gateway's id and alias in every
 * `response.*` event's Response, `sequence_number`s rising by one from 0). A failure or a cut after the stream
 * started ends it with `error` and `response.failed` ({@linkcode failureEvents}, as the translated stream
 * does), never a clean end. One pull-based stage: each pull reads one upstream event, so backpressure and
 * cancellation reach the upstream.
 *
 * @module
 */
import { ClientGoneError, GatewayError } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import {
  clientStreamBody,
  type Peeked,
  type StreamEnding,
  type StreamOutcome,
} from "../../answer/stream_body.ts";
import { clientEvent, clientResponse, type NativeFrame, nativeUsage } from "./native.ts";
import { StreamOutputTexts } from "./output_texts.ts";
import { encodeEvent, failureEvents, type ResponseEvent } from "./stream_events.ts";
import { StreamTexts } from "../../usage/stream_texts.ts";

/** A native event stream whose first event has already been read (routing waited for it). */
export type PeekedEvents = Peeked<JsonObject>;

/** What the stream learnt by the time it ended, for the access log and usage records. */
export interface NativeStreamOutcome extends StreamOutcome {
  /** The upstream's token counts from its final Response. */
  usage?: { prompt: number; completion: number };
}

/**
 * The stream events that end a Response; the Response they carry is the final one, checked to be a Response by
 * the provider's stage (`parseResponsesEvent`) as a whole answer is, so what is sent and stored is one.
 */
const FINAL = new Set(["response.completed", "response.incomplete"]);

/**
 * The client-facing body. `onFinal` gets the final Response (client's form) and the upstream's id of a stream
 * that completed or ended incomplete, before its last event is sent, and the `failed` Response (with no upstream
 * id: a later turn resends the conversation rather than chain onto a failed upstream response) of one that
 * failed, unless its client went away; `onEnd` runs exactly once however the stream ends, after the lease is
 * released.
 */
export function nativeStreamBody(
  stream: PeekedEvents,
  options: StreamEnding<NativeStreamOutcome> & {
    frame: NativeFrame;
    onFinal?: (response: JsonObject, upstreamId: string | null) => void | Promise<void>;
  },
): ReadableStream<Uint8Array> {
  const { frame } = options;
  const outcome: NativeStreamOutcome = { end: "ok", texts: new StreamTexts() };
  const written = new StreamOutputTexts();
  let sequence = 0;
  /** The latest Response the client saw, which `response.failed` continues. */
  let snapshot: JsonObject = clientResponse({
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status: "in_progress",
    output: [],
  }, frame);
  const send = (controller: ReadableStreamDefaultController<Uint8Array>, event: JsonObject) => {
    const out = clientEvent(event, frame, sequence);
    if (out.response !== undefined) snapshot = out.response as JsonObject;
    // Counted once sent: a write the stream budget withholds leaves its number to the error events.
    controller.enqueue(encodeEvent(out as ResponseEvent));
    sequence++;
    return out;
  };
  return clientStreamBody(stream, outcome, options, {
    async pull(controller, next, end) {
      const event = await next();
      if (event === undefined) {
        // The provider's stages end the stream only after a final event, which closed it already.
        throw new GatewayError(502, "The upstream stream ended before its final event.");
      }
      written.push(event, outcome.texts);
      const type = event.type;
      if (typeof type === "string" && FINAL.has(type)) {
        outcome.usage = nativeUsage(event.response);
        const upstream = event.response as JsonObject | undefined;
        const upstreamId = typeof upstream?.id === "string" ? upstream.id : null;
        const final = clientEvent(event, frame, sequence);
        await options.onFinal?.(final.response as JsonObject, upstreamId);
        send(controller, event);
        controller.close();
        end("ok");
        return;
      }
      if (type === "response.failed") {
        // The upstream ended the response as failed itself: forwarded as it is, and the request counts as failed.
        outcome.usage = nativeUsage(event.response);
        await options.onFinal?.(clientEvent(event, frame, sequence).response as JsonObject, null);
        const sent = send(controller, event);
        const error = (sent.response as JsonObject | undefined)?.error as
          | { code?: unknown; message?: unknown }
          | undefined;
        outcome.error = new GatewayError(
          502,
          typeof error?.message === "string" ? error.message : "The upstream response failed.",
          { type: "server_error", code: typeof error?.code === "string" ? error.code : "upstream_error" },
        );
        controller.close();
        end("error");
        return;
      }
      send(controller, event);
    },
    async fail(controller, error) {
      const failed = failureEvents(error, (e) => ({ ...snapshot, status: "failed", error: e }));
      const last = clientEvent(failed.at(-1)!, frame, sequence + failed.length - 1).response as JsonObject;
      if (!(error instanceof ClientGoneError)) await options.onFinal?.(last, null);
      for (const event of failed) send(controller, event);
    },
  });
}

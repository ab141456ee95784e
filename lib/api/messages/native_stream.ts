/**
 * The client's body of a Messages stream passed through from a native upstream (Anthropic, Claude on Bedrock):
 * each upstream event is forwarded the moment it is read, as `event: <type>` + `data:`, `ping`s included, with
 * only `message_start`'s `model` rewritten to the alias ({@linkcode clientMessageEvent}); thinking and signature
 * deltas, citations and beta events go through as they came. A failure or a cut after the stream started ends it
 * with `event: error` carrying Anthropic's error type (the upstream's own, such as `overloaded_error`, when it
 * gave one), never with `message_stop`. When the upstream is silent for a while (Bedrock sends no pings of its
 * own), the client gets a `ping`, as the translated stream does. One pull-based stage: each pull reads one upstream
 * event, so backpressure and cancellation reach the upstream.
 *
 * @module
 */
import { GatewayError } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import {
  clientStreamBody,
  type Peeked,
  type StreamEnding,
  type StreamOutcome,
} from "../../answer/stream_body.ts";
import { clientMessageEvent, type MessagesUsage, pushEventText, readMessagesUsage } from "./native.ts";
import { encodeMessagesEvent, errorEvent, type MessagesEvent, PING } from "./sse.ts";
import { PING_INTERVAL_MS } from "./stream.ts";
import { StreamTexts } from "../../usage/stream_texts.ts";

/** A native event stream whose first event has already been read (routing waited for it). */
export type PeekedMessagesEvents = Peeked<JsonObject>;

/** What the stream learnt by the time it ended, for the access log and usage records. */
export interface NativeMessagesStreamOutcome extends StreamOutcome {
  /**
   * The upstream's counts: `message_start`'s, updated by each `message_delta` (cumulative); null once one of
   * them was not a count (the whole usage is untrusted then).
   */
  usage?: MessagesUsage | null;
}

/**
 * The client-facing body. `onEnd` runs exactly once however the stream ends, after the lease is released; a
 * stream counts as complete only when `message_stop` was sent.
 */
export function nativeMessagesStreamBody(
  stream: PeekedMessagesEvents,
  options: StreamEnding<NativeMessagesStreamOutcome> & {
    alias: string;
    /** Silence before a `ping` (default {@linkcode PING_INTERVAL_MS}). */
    pingMs?: number;
  },
): ReadableStream<Uint8Array> {
  const outcome: NativeMessagesStreamOutcome = { end: "ok", texts: new StreamTexts() };
  return clientStreamBody(stream, outcome, options, {
    idle: { afterMs: options.pingMs ?? PING_INTERVAL_MS, event: encodeMessagesEvent(PING) },
    async pull(controller, next, end) {
      const event = await next();
      // The provider's stages end the stream only after `message_stop`, which closed it already.
      if (event === undefined) throw new GatewayError(502, "The upstream stream ended before message_stop.");
      pushEventText(event, outcome.texts);
      if (event.type === "message_start" || event.type === "message_delta") {
        const usage = event.type === "message_start"
          ? (event.message as JsonObject | undefined)?.usage
          : event.usage;
        // One update whose counts are not counts makes the stream's usage untrusted: the gateway counts it.
        if (usage !== undefined && outcome.usage !== null) {
          outcome.usage =
            readMessagesUsage(usage, event.type === "message_delta" ? outcome.usage : undefined) ??
              null;
        }
      }
      // The provider's stage checked that every event has a string `type`.
      controller.enqueue(encodeMessagesEvent(clientMessageEvent(event, options.alias) as MessagesEvent));
      if (event.type === "message_stop") {
        controller.close();
        end("ok");
      }
    },
    fail: (controller, error) => controller.enqueue(encodeMessagesEvent(errorEvent(error))),
  });
}

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
import { ClientGoneError, GatewayError, scrubError, toGatewayError } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import type { Lease } from "../../routing/health.ts";
import { NO_SECRETS, type Scrubber } from "../../secrets/scrubber.ts";
import type { BudgetGuard } from "../../streams/budget_guard.ts";
import { clientMessageEvent, eventText, type MessagesUsage, readMessagesUsage } from "./native.ts";
import { encodeMessagesEvent, errorEvent, type MessagesEvent, PING } from "./sse.ts";
import { PING_INTERVAL_MS } from "./stream.ts";

/** A native event stream whose first event has already been read (routing waited for it). */
export interface PeekedMessagesEvents {
  first: JsonObject;
  rest: ReadableStreamDefaultReader<JsonObject>;
}

/** What the stream learnt by the time it ended, for the access log and usage records. */
export interface NativeMessagesStreamOutcome {
  end: "ok" | "error" | "cancelled";
  error?: GatewayError;
  /** The upstream's counts: `message_start`'s, updated by each `message_delta` (cumulative). */
  usage?: MessagesUsage;
  firstChunkAt?: number;
  /** What the client received (text, thinking and tool input deltas), to count tokens when no usage came. */
  texts: string[];
}

/**
 * The client-facing body. `onEnd` runs exactly once however the stream ends, after the lease is released; a
 * stream counts as complete only when `message_stop` was sent.
 */
export function nativeMessagesStreamBody(
  stream: PeekedMessagesEvents,
  options: {
    alias: string;
    startedAt: number;
    onEnd: (outcome: NativeMessagesStreamOutcome) => void;
    lease?: Lease;
    scrubber?: Scrubber;
    /** `budget.stop_streams`: checked before every write, as in `clientStreamBody`. */
    budget?: BudgetGuard;
    /** Silence before a `ping` (default {@linkcode PING_INTERVAL_MS}). */
    pingMs?: number;
  },
): ReadableStream<Uint8Array> {
  const outcome: NativeMessagesStreamOutcome = { end: "ok", texts: [] };
  const pingMs = options.pingMs ?? PING_INTERVAL_MS;
  let pending: JsonObject | undefined = stream.first;
  /** A read still running when a ping was sent; the next pull waits on it again. */
  let reading: Promise<ReadableStreamReadResult<JsonObject>> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let ended = false;
  /** The next upstream event, or "ping" when the upstream stayed silent for `pingMs`. */
  const next = (): Promise<ReadableStreamReadResult<JsonObject> | "ping"> => {
    reading ??= stream.rest.read();
    const silence = new Promise<"ping">((resolve) => timer = setTimeout(() => resolve("ping"), pingMs));
    return Promise.race([reading, silence]).then((result) => {
      clearTimeout(timer);
      if (result !== "ping") reading = undefined;
      return result;
    });
  };
  const end = (how: NativeMessagesStreamOutcome["end"]) => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    outcome.end = how;
    if (how === "error") options.lease?.failed();
    options.lease?.release();
    options.onEnd(outcome);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        let event = pending;
        pending = undefined;
        if (event === undefined) {
          const result = await next();
          if (result === "ping") {
            controller.enqueue(encodeMessagesEvent(PING));
            return;
          }
          // The provider's stages end the stream only after `message_stop`, which closed it already.
          if (result.done) throw new GatewayError(502, "The upstream stream ended before message_stop.");
          event = result.value;
        }
        outcome.firstChunkAt ??= Math.round((performance.now() - options.startedAt) * 100) / 100;
        const text = eventText(event);
        if (text !== undefined) outcome.texts.push(text);
        if (event.type === "message_start") {
          const message = event.message as JsonObject | undefined;
          outcome.usage = readMessagesUsage(message?.usage) ?? outcome.usage;
        } else if (event.type === "message_delta") {
          outcome.usage = readMessagesUsage(event.usage, outcome.usage) ?? outcome.usage;
        }
        options.budget?.check(outcome.texts);
        // The provider's stage checked that every event has a string `type`.
        controller.enqueue(encodeMessagesEvent(clientMessageEvent(event, options.alias) as MessagesEvent));
        if (event.type === "message_stop") {
          controller.close();
          end("ok");
        }
      } catch (err) {
        // At once: a budget stop (or a failure of the gateway's own) must not leave the upstream generating.
        stream.rest.cancel(err).catch(() => {});
        const error = scrubError(toGatewayError(err), options.scrubber ?? NO_SECRETS);
        outcome.error = error;
        if (!(err instanceof ClientGoneError)) {
          controller.enqueue(encodeMessagesEvent(errorEvent(error)));
        }
        controller.close();
        end(err instanceof ClientGoneError ? "cancelled" : "error");
      }
    },
    async cancel(reason) {
      end("cancelled");
      await stream.rest.cancel(reason).catch(() => {});
    },
  }, { highWaterMark: 0 });
}

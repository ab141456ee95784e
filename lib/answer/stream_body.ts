/**
 * What every client-facing stream body shares (chat completions, Responses and Messages, translated and
 * native): it reads a peeked upstream stream (the first value was read before routing committed to the
 * target), keeps a silent upstream's connection alive where the API has a keep-alive event, and it ends the
 * same way. `onEnd` runs exactly once however the stream ends (cleanly, after a failure, or cancelled by
 * the client), after the answering target's lease is released (marked failed first if the stream broke); a
 * failure is scrubbed of the config's secrets, told to the client in its API's own error events, and closes
 * the body; a cancel reaches the upstream. Each body keeps only what its API says differently: what a pull
 * makes of the upstream's values, and which events tell of a failure.
 *
 * @module
 */
import { ClientGoneError, GatewayError, scrubError, toGatewayError } from "../errors.ts";
import { PolicyDenied } from "../policy/denied.ts";
import type { Lease } from "../routing/health.ts";
import { NO_SECRETS, type Scrubber } from "../secrets/scrubber.ts";
import type { ChunkSource } from "../streams/pull_through.ts";
import { type BudgetGuard, BudgetStop } from "./budget_guard.ts";
import type { StreamTexts } from "../usage/stream_texts.ts";
import { type ReportedPrompt, reportedPromptOf } from "../openai/reported_prompt.ts";

/** An upstream stream whose first value has already been read (routing committed to its target: stream_start.ts). */
export interface Peeked<T> {
  first: T;
  rest: ChunkSource<T>;
}

/**
 * How a stream ended: "ok" after its clean end, "error" after an error event, "cancelled" when its body was
 * cancelled (the client went away, or its connection was closed; `error` then says why, when known).
 */
export type StreamEnd = "ok" | "error" | "cancelled";

/** What every stream learnt by the time it ended, for the access log and usage records. */
export interface StreamOutcome {
  end: StreamEnd;
  error?: GatewayError;
  /**
   * Milliseconds from the request's start to the first upstream value's going to the client (set here, once,
   * for every API: see {@linkcode StreamEnding.startedAt}).
   */
  firstChunkAt?: number;
  /**
   * What the client received (text, refusal and argument deltas), to count tokens when no usage came; in
   * bounded memory, however long the stream (lib/usage/stream_texts.ts).
   */
  texts: StreamTexts;
  /**
   * The prompt's tokens, by class, the upstream reported before its usage at the end
   * (lib/openai/reported_prompt.ts): what the record keeps for the prompt when the stream broke before that
   * usage came.
   */
  reportedPrompt?: ReportedPrompt;
  /**
   * When the body ended (`performance.now()`: its last chunk forwarded, or it broke or was cancelled), before any
   * usage is counted: the request's latency and its spans end here, not when a count finished.
   */
  endedAt?: number;
}

/** How a body ends, from the answer runner: who learns of the end, the lease to release, the secrets to scrub. */
export interface StreamEnding<O extends StreamOutcome> {
  onEnd: (outcome: O) => void;
  /** The answering target's lease: released when the stream ends, marked failed first if it broke. */
  lease?: Lease;
  /** The config's scrubber: the error events may carry upstream text that quotes a secret. */
  scrubber?: Scrubber;
  /**
   * `budget.stop_streams`: checked before every write with the outcome's texts so far; when it throws, the
   * write is withheld, the body ends with the API's error events and the upstream is cancelled.
   */
  budget?: BudgetGuard;
  /**
   * When the request started (`performance.now()`): the outcome's `firstChunkAt` is measured from it when the
   * first upstream value is handed to the API's pull. Without it, not measured.
   */
  startedAt?: number;
  /**
   * Told of a failure of the gateway's own (anything thrown that is not a `GatewayError`) before the client
   * gets its generic `internal_error` event: the runner logs it, as the error boundary logs one outside a stream.
   */
  onUnexpected?: (err: unknown) => void;
  /**
   * The request's signal: when it ended (shutdown, its client gone) before the body was cancelled, the cancel is
   * recorded for why it ended, not for the edge's reason (a connection the runtime closed after shutdown's cut
   * reads there as a client gone).
   */
  signal?: AbortSignal;
}

/** What one API's body does with the upstream's values; see {@linkcode clientStreamBody}. */
export interface StreamEvents<T> {
  /**
   * One pull: enqueues what is due, reading values with `next` (`undefined` once the upstream ended), and
   * calls `end("ok")` after closing the body at a clean end. Whatever it throws ends the body with `fail`.
   */
  pull(
    controller: ReadableStreamDefaultController<Uint8Array>,
    next: () => Promise<T | undefined>,
    end: (how: StreamEnd) => void,
  ): Promise<void>;
  /**
   * Enqueues the events that tell the client of `error`; the body is closed after them. Awaited: an API that
   * keeps what it answered (a stored Response that failed) keeps it before the client reads its last event.
   */
  fail(controller: ReadableStreamDefaultController<Uint8Array>, error: GatewayError): void | Promise<void>;
  /** Completes the outcome once the stream ended, before `onEnd` sees it. */
  beforeEnd?(): void;
  /**
   * The API's keep-alive (Anthropic's `ping`): sent when the upstream stays silent for `afterMs` while the
   * client waits, so proxies and clients with read timeouts keep the connection. The read it interrupted
   * goes on, and the next pull waits for it again.
   */
  idle?: { afterMs: number; event: Uint8Array };
  /**
   * After the failure's events, cut the connection instead of ending the body cleanly: for an API whose clients
   * may not raise on an error event alone (Google's SDKs read a well-framed stream that just stops as complete,
   * minus its finish reason), so that every client sees the answer broke.
   */
  cutAfterFail?: boolean;
}

/** Thrown out of a pull by `next` when the upstream stayed silent for `idle.afterMs`: the pull sends a ping. */
const SILENT = Symbol("silent");

/** How a translated body turns upstream values into the client's events; see {@linkcode eachValue}. */
export interface Translation<T> {
  /** The writes for one upstream value; none when it has nothing to show (the next value is read then). */
  value(value: T): Uint8Array[];
  /** The writes that end a clean stream, after the upstream's last value. */
  finish(): Uint8Array[] | Promise<Uint8Array[]>;
}

/**
 * The pull of a translated body (chat completions, translated Responses and Messages): each pull reads values
 * until one has something to show and writes it at once; after the upstream's clean end, the API's ending
 * events, then the body closes.
 */
export function eachValue<T>(translation: Translation<T>): StreamEvents<T>["pull"] {
  return async (controller, next, end) => {
    while (true) {
      const value = await next();
      const writes = value === undefined ? await translation.finish() : translation.value(value);
      for (const bytes of writes) controller.enqueue(bytes);
      if (value === undefined) {
        controller.close();
        end("ok");
        return;
      }
      if (writes.length > 0) return;
    }
  };
}

/** `controller` with a check before every enqueue (what a budget guard needs; one object per stream). */
function checkedController(
  controller: ReadableStreamDefaultController<Uint8Array>,
  check: () => void,
): ReadableStreamDefaultController<Uint8Array> {
  return {
    get desiredSize() {
      return controller.desiredSize;
    },
    enqueue(chunk) {
      check();
      controller.enqueue(chunk);
    },
    close: () => controller.close(),
    error: (reason) => controller.error(reason),
  };
}

/**
 * The pull-based client body of `stream`: each pull runs `events.pull` once, so nothing is buffered and
 * backpressure reaches the upstream. A failure (anything the pull throws, a budget stop included) ends the
 * body with `events.fail` and the outcome `error`, or `cancelled` when the client went away, and cancels the
 * upstream (which is a no-op when the failure was the upstream's own); cancelling the body cancels it too.
 */
export function clientStreamBody<T, O extends StreamOutcome>(
  stream: Peeked<T>,
  outcome: O,
  ending: StreamEnding<O>,
  events: StreamEvents<T>,
): ReadableStream<Uint8Array> {
  let pending: T | undefined = stream.first;
  /** An upstream read still running when a ping was sent; the next pull waits on it again. */
  let reading: Promise<ReadableStreamReadResult<T>> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const idle = events.idle;
  const next = async (): Promise<T | undefined> => {
    const value = pending;
    pending = undefined;
    if (value !== undefined) {
      outcome.reportedPrompt = reportedPromptOf(value) ?? outcome.reportedPrompt;
      // The peeked first value, on the first pull: what the client is about to receive first.
      if (ending.startedAt !== undefined) {
        outcome.firstChunkAt = Math.round((performance.now() - ending.startedAt) * 100) / 100;
      }
      return value;
    }
    if (reading === undefined) {
      // Read no faster than the token-count worker counts what was received (a long answer's batches).
      const behind = outcome.texts.caughtUp();
      if (behind !== undefined) await behind;
    }
    reading ??= stream.rest.read();
    let read: ReadableStreamReadResult<T> | typeof SILENT;
    if (idle === undefined) read = await reading;
    else {
      const silence = new Promise<typeof SILENT>((resolve) =>
        timer = setTimeout(resolve, idle.afterMs, SILENT)
      );
      read = await Promise.race([reading, silence]);
      clearTimeout(timer);
      if (read === SILENT) throw SILENT;
    }
    reading = undefined;
    if (read.done) return undefined;
    outcome.reportedPrompt = reportedPromptOf(read.value) ?? outcome.reportedPrompt;
    return read.value;
  };
  let ended = false;
  /** Whether an "error" end counts against the target's health; not when the gateway itself stopped the stream. */
  let targetsFault = true;
  const end = (how: StreamEnd) => {
    if (ended) return;
    ended = true;
    outcome.endedAt = performance.now();
    clearTimeout(timer);
    outcome.end = how;
    // An error a client API set itself (an upstream that ended its stream as failed) is upstream text too: it
    // goes into the usage record, the metrics and the trace, so it passes the scrubber here, whoever set it.
    if (outcome.error !== undefined) outcome.error = scrubError(outcome.error, ending.scrubber ?? NO_SECRETS);
    events.beforeEnd?.();
    if (how === "error" && targetsFault) ending.lease?.failed();
    ending.lease?.release();
    ending.onEnd(outcome);
  };
  const guard = ending.budget;
  let checked: ReadableStreamDefaultController<Uint8Array> | undefined;
  /** With `cutAfterFail`: the failure to break the body with once the client has taken its error events. */
  let cut: GatewayError | undefined;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (cut !== undefined) {
        // One turn of the event loop first: a runtime that sends the body as it is read (Bun) may still hold
        // the error events in its write buffer, and would drop them with the connection.
        const failure = cut;
        return new Promise<void>((resolve) => setTimeout(resolve, 0)).then(() => controller.error(failure));
      }
      try {
        const sink = guard
          ? checked ??= checkedController(controller, () => guard.check(outcome.texts))
          : controller;
        await events.pull(sink, next, end);
      } catch (err) {
        if (err === SILENT) {
          controller.enqueue(idle!.event);
          return;
        }
        // At once: a budget stop (or a failure of the gateway's own) must not leave the upstream generating.
        stream.rest.cancel(err).catch(() => {});
        if (!(err instanceof GatewayError)) ending.onUnexpected?.(err);
        const error = scrubError(toGatewayError(err), ending.scrubber ?? NO_SECRETS);
        outcome.error = error;
        await events.fail(controller, error);
        // Cut on the next pull, not now: erroring the stream would throw away the error events still queued.
        if (events.cutAfterFail) cut = error;
        else controller.close();
        targetsFault = isTargetsFault(err);
        end(err instanceof ClientGoneError ? "cancelled" : "error");
      }
    },
    async cancel(reason) {
      // Why the request ended, when it had (shutdown's 503 `server_shutdown`, its client gone); else a connection
      // the gateway ended itself says why. The outcome keeps it for the record.
      const signal = ending.signal;
      const ended = signal?.aborted && signal.reason instanceof GatewayError ? signal.reason : undefined;
      const why = ended ?? (reason instanceof ClientGoneError ? reason : undefined);
      if (why !== undefined && outcome.error === undefined) outcome.error = why;
      end("cancelled");
      await stream.rest.cancel(reason).catch(() => {});
    },
  }, { highWaterMark: 0 });
}

/**
 * Whether a stream that failed with `err` failed because of its target. A budget stop, a policy or guardrail
 * refusal and a guardrail service failing closed are the gateway's decisions about one request: counted as the
 * target's failures, one tenant's spent budget (five streams stopped at once) would eject a healthy target for
 * every tenant.
 */
function isTargetsFault(err: unknown): boolean {
  if (err instanceof BudgetStop || err instanceof PolicyDenied) return false;
  return !(err instanceof GatewayError && err.code === "guardrail_unavailable");
}

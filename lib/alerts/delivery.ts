/**
 * The webhook sender behind alerts: bounded queues that never make their caller wait.
 *
 * `enqueue` is synchronous: it serializes the body, appends a job and returns its live state. Delivery runs in
 * the background, a few at a time; each attempt is a `POST` bounded by the target's timeout, retried after a
 * network error, a timeout, a 5xx or a 429 with exponential backoff (doubling from `backoffMs`, at most
 * {@linkcode MAX_BACKOFF_MS}; a 429's `Retry-After` within that cap is honoured). Any other answer is final:
 * a 4xx will not change by asking again. A job waiting for its retry holds no delivery slot.
 *
 * Each receiver has its own queue and at most `perReceiver` of the `concurrency` slots, and a receiver with an
 * attempt in flight never takes the last free slot: that one is kept for a receiver with none (see
 * {@linkcode Lanes}). So a receiver that is slow or down holds its own slots and its own queue, never another
 * receiver's alerts, until so many are stuck at once that each holds a slot: with the defaults (4 slots, 2 per
 * receiver) it takes three, two never can. A receiver is an origin (scheme, host and port), not a URL: the
 * server is what is slow or down, and several entries often name one (two Slack webhooks are two paths on
 * hooks.slack.com). Free slots go round-robin between the receivers with work, and a job due for a retry goes
 * to the back of its receiver's queue, so a receiver's failing alert does not hold back its other alerts
 * either.
 *
 * Closing sends what is held rather than dropping it: every alert here was claimed in the counter store, so no
 * other replica will send it. Queued jobs keep going out, and those waiting for a retry are tried at once (a
 * retry that fails again is tried again at once, within its `retries`), until nothing is left or
 * `closeTimeoutMs` runs out; then attempts in flight are aborted, and every job that did not go out is
 * reported through `onError`, so an operator can tell which alerts were lost.
 *
 * Memory is bounded: at most `maxQueue` jobs wait (queued or between attempts) over all receivers; past it
 * the oldest job of the receiver holding the most is dropped and counted, because an alert about the present
 * is worth more than one about a minute ago, and a receiver that is down must neither grow the gateway nor
 * push out the alerts of one that is up. The target's `secret` only ever reaches the signature; failures are
 * recorded as a category ("HTTP 500", "timeout"), never as the runtime's message, which names the URL (and a
 * receiver's URL may carry its key in the path or query).
 *
 * @module
 */
import type { AlertTargetConfig } from "../config/alerts_schema.ts";
import { Lanes } from "./lanes.ts";
import { SIGNATURE_HEADER, signBody } from "./signature.ts";

/** The header that carries the alert's id, so a receiver can deduplicate a retried delivery. */
export const ALERT_ID_HEADER = "x-gateway-alert-id";
/** Backoff never grows past this. */
export const MAX_BACKOFF_MS = 60_000;

/** The kinds of alert. */
export type AlertType = "budget" | "denials" | "ejection";

/** An alert's JSON body: its id, kind and time, then the kind's own fields. */
export type AlertBody =
  & { readonly id: string; readonly type: AlertType; readonly time: string }
  & Readonly<Record<string, unknown>>;

/** What delivery needs of a target (an `alerts:` entry). */
export type DeliveryTarget = Pick<AlertTargetConfig, "url" | "secret" | "headers" | "timeout" | "retries">;

/** Where one alert to one target stands. */
export type DeliveryStatus = "pending" | "delivered" | "failed" | "dropped";

/** A job's live state, updated in place as delivery goes on. */
export interface DeliveryState {
  readonly status: DeliveryStatus;
  /** Attempts made so far. */
  readonly attempts: number;
  /** Why the last attempt failed, as a category ("HTTP 500", "timeout", "network error"). */
  readonly error?: string;
}

/** Options of {@linkcode createDelivery}. */
export interface DeliveryOptions {
  /** Tests: the `fetch` that sends. */
  readonly fetch?: typeof fetch;
  /** The first retry's delay, doubled for each further one. Default 1 s. */
  readonly backoffMs?: number;
  /** Jobs held at most (queued or waiting for a retry). Default 1,000. */
  readonly maxQueue?: number;
  /** Attempts in flight at most, over all receivers. Default 4. */
  readonly concurrency?: number;
  /** Attempts in flight at most to one receiver. Default 2. */
  readonly perReceiver?: number;
  /** How long `close` keeps sending what is held before aborting what is in flight. Default 5 s. */
  readonly closeTimeoutMs?: number;
  /** Tests: the timers behind backoff, attempt timeouts and `close`'s deadline. */
  readonly timers?: DeliveryTimers;
  /** A job failed for good or was dropped; the message names the alert and the receiver's host only. */
  readonly onError?: (error: Error) => void;
}

/** The sender. */
export interface Delivery {
  /** Queues `alert` for `target` and returns at once; the state it returns changes as delivery goes on. */
  enqueue(target: DeliveryTarget, alert: AlertBody): DeliveryState;
  /** Jobs dropped because the queue was full. */
  readonly dropped: number;
  /** Jobs queued or waiting for a retry. */
  readonly pending: number;
  /**
   * Refuses new jobs and sends the held ones (retries at once) until none is left or `closeTimeoutMs` runs
   * out; then aborts attempts in flight and drops the rest, reporting each.
   */
  close(): Promise<void>;
}

/** Timers as delivery uses them; the runtime's by default. */
export interface DeliveryTimers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const RUNTIME_TIMERS: DeliveryTimers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

interface Job {
  readonly target: DeliveryTarget;
  /** The receiver, as the lane's key: the target's origin. */
  readonly receiver: string;
  /** Order of arrival: the oldest job is the first dropped. */
  readonly seq: number;
  readonly alertId: string;
  readonly body: string;
  status: DeliveryStatus;
  attempts: number;
  error?: string;
  signature?: string;
  timer?: unknown;
}

/** How an attempt went: delivered, worth retrying (after at least `afterMs`), or final. */
type Outcome = { kind: "ok" } | { kind: "retry"; error: string; afterMs?: number } | {
  kind: "final";
  error: string;
};

/** The host of a URL, for messages: never its path or query. */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "?";
  }
}

/**
 * The receiver a URL names, for its lane: its origin, so that every entry naming one server shares that
 * server's slots. The URL itself if it has none (config only admits http and https, which always do).
 */
function receiverOf(url: string): string {
  try {
    const { origin } = new URL(url);
    return origin === "null" ? url : origin;
  } catch {
    return url;
  }
}

/** `Retry-After` in seconds as ms, or undefined (an HTTP date is not worth parsing for a capped backoff). */
function retryAfterMs(value: string | null): number | undefined {
  if (value === null || !/^\s*\d+\s*$/.test(value)) return undefined;
  return Number(value) * 1_000;
}

/** Creates a sender; see the module documentation. */
export function createDelivery(options: DeliveryOptions = {}): Delivery {
  const send = options.fetch ?? fetch;
  const backoffMs = options.backoffMs ?? 1_000;
  const maxQueue = Math.max(1, options.maxQueue ?? 1_000);
  const concurrency = Math.max(1, options.concurrency ?? 4);
  const perReceiver = Math.max(1, Math.min(concurrency, options.perReceiver ?? 2));
  const closeTimeoutMs = options.closeTimeoutMs ?? 5_000;
  const timers = options.timers ?? RUNTIME_TIMERS;
  const onError = options.onError ?? (() => {});
  /**
   * Jobs per receiver (by origin: the server that is slow or down, however many entries name it), queued or
   * parked while they wait for a retry.
   */
  const lanes = new Lanes<string, Job>(concurrency, perReceiver);
  let seq = 0;
  const running = new Set<Promise<void>>();
  const aborts = new Set<AbortController>();
  let dropped = 0;
  /** Closing: no new jobs, retries at once. Stopped: past close's deadline, nothing more is attempted. */
  let closed = false;
  let stopped = false;
  /** Resolves `close` once nothing is held or in flight. */
  let drained: (() => void) | undefined;

  /** What callers see of a job: live, and without the target (whose secret must go nowhere else). */
  function view(job: Job): DeliveryState {
    return {
      get status() {
        return job.status;
      },
      get attempts() {
        return job.attempts;
      },
      get error() {
        return job.error;
      },
    };
  }

  function report(job: Job, what: string): void {
    try {
      onError(new Error(`alert ${job.alertId} to ${hostOf(job.target.url)} ${what}`));
    } catch {
      // A failing reporter must not stop delivery.
    }
  }

  function drop(job: Job, why: string): void {
    if (job.timer !== undefined) timers.clear(job.timer);
    job.timer = undefined;
    job.status = "dropped";
    job.error = why;
  }

  async function attempt(job: Job): Promise<Outcome> {
    const { target } = job;
    let headers: Headers;
    try {
      headers = new Headers(target.headers);
      headers.set("content-type", "application/json");
      headers.set(ALERT_ID_HEADER, job.alertId);
      if (target.secret !== undefined) {
        job.signature ??= await signBody(target.secret, job.body);
        headers.set(SIGNATURE_HEADER, job.signature);
      }
    } catch {
      return { kind: "final", error: "invalid headers" };
    }
    const controller = new AbortController();
    aborts.add(controller);
    const timer = timers.set(() => controller.abort(), target.timeout);
    try {
      const res = await send(target.url, {
        method: "POST",
        headers,
        body: job.body,
        signal: controller.signal,
        redirect: "manual",
      });
      await res.body?.cancel().catch(() => {});
      if (res.status >= 200 && res.status < 300) return { kind: "ok" };
      const error = `HTTP ${res.status}`;
      if (res.status === 429) {
        return { kind: "retry", error, afterMs: retryAfterMs(res.headers.get("retry-after")) };
      }
      return res.status >= 500 ? { kind: "retry", error } : { kind: "final", error };
    } catch {
      return {
        kind: "retry",
        error: controller.signal.aborted ? (stopped ? "closed" : "timeout") : "network error",
      };
    } finally {
      timers.clear(timer);
      aborts.delete(controller);
    }
  }

  async function run(job: Job): Promise<void> {
    job.attempts++;
    const outcome = await attempt(job);
    if (outcome.kind === "ok") {
      job.status = "delivered";
      job.error = undefined;
      return;
    }
    job.error = outcome.error;
    if (outcome.kind === "final" || job.attempts > job.target.retries || stopped) {
      job.status = "failed";
      report(job, `failed after ${job.attempts} attempt(s): ${outcome.error}`);
      return;
    }
    // Closing: no backoff is waited for, the process is about to end; the retries left still bound it.
    if (closed) {
      lanes.queue(job.receiver, job);
      return;
    }
    const backoff = Math.min(MAX_BACKOFF_MS, backoffMs * 2 ** (job.attempts - 1));
    const delay = Math.min(MAX_BACKOFF_MS, Math.max(backoff, outcome.afterMs ?? 0));
    lanes.park(job.receiver, job);
    job.timer = timers.set(() => {
      job.timer = undefined;
      // Behind the receiver's other alerts: one that keeps failing does not hold them back.
      lanes.unpark(job.receiver, job);
      pump();
    }, delay);
  }

  /** Fills free slots, one job per receiver in turn, each receiver within its own share. */
  function pump(): void {
    while (!stopped) {
      const next = lanes.next();
      if (next === undefined) break;
      const { key, item } = next;
      const p: Promise<void> = run(item).catch(() => {}).finally(() => {
        running.delete(p);
        lanes.finished(key);
        pump();
      });
      running.add(p);
    }
    if (drained && lanes.running === 0 && lanes.held === 0) drained();
  }

  return {
    enqueue(target, alert) {
      const job: Job = {
        target,
        receiver: receiverOf(target.url),
        seq: seq++,
        alertId: alert.id,
        body: JSON.stringify(alert),
        status: "pending",
        attempts: 0,
      };
      if (closed) {
        drop(job, "closed");
        report(job, "dropped: delivery is closed");
        return view(job);
      }
      lanes.queue(job.receiver, job);
      if (lanes.held > maxQueue) {
        const oldest = lanes.evict()!;
        drop(oldest, "queue full");
        dropped++;
        report(oldest, "dropped: queue full");
      }
      pump();
      return view(job);
    },
    get dropped() {
      return dropped;
    },
    get pending() {
      return lanes.held;
    },
    async close() {
      if (closed) return;
      closed = true;
      // Retries waiting for their backoff are tried now, behind what their receiver has queued.
      for (const job of lanes.unparkAll()) {
        timers.clear(job.timer);
        job.timer = undefined;
      }
      const done = new Promise<void>((resolve) => drained = resolve);
      let timer: unknown;
      const timedOut = new Promise<void>((resolve) => timer = timers.set(resolve, closeTimeoutMs));
      pump();
      await Promise.race([done, timedOut]);
      timers.clear(timer);
      stopped = true;
      for (const job of lanes.takeQueued()) {
        drop(job, "closed");
        report(job, `dropped: delivery closed before it was sent (${job.attempts} attempt(s) made)`);
      }
      for (const controller of aborts) controller.abort();
      await Promise.all(running);
    },
  };
}

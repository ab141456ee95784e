/**
 * What a worker tells the primary about its requests: each one's start (with what is known of it), each
 * one's end, and the usage records. Gathered per turn of the event loop and written as one frame into the
 * worker's report ring (shared memory the primary reads: `report_ring.ts`), so a request costs no message
 * and no wake-up; a batch the ring cannot take goes as a message, which the primary takes only after reading
 * the ring, so order holds. The primary writes the records into the one pipeline, and when a worker dies it
 * still knows which requests were open there and records each as failed.
 *
 * @module
 */
import { endpointOf } from "../http/endpoints.ts";
import { type InFlightRequest, InFlightRequests, type InFlightSubject } from "../http/in_flight.ts";
import type { UsageSink } from "../http/context.ts";
import type { UsageRecord } from "../usage/record.ts";
import type { Channel } from "./channel.ts";
import type { ReportRing } from "./report_ring.ts";

/** A request as the primary learns of its start. */
export interface StartNotice {
  /** The worker's number for it (a client's `x-request-id` need not be unique). */
  readonly n: number;
  readonly request_id: string;
  readonly method: string;
  readonly path: string;
  readonly token: string | null;
  readonly environment: string | null;
  /** When it arrived, epoch ms. */
  readonly at: number;
  /** What is known later (when its alias is resolved; {@linkcode Described}), once it is. */
  readonly token_id?: string | null;
  readonly alias?: string | null;
  readonly stream?: boolean;
}

/**
 * What the worker learns of an open request after its start: its token's id, alias and stream flag, once its
 * alias is resolved (the start notice goes out a microtask after the start, before the body is read).
 */
export interface Described {
  readonly n: number;
  readonly token_id: string | null;
  readonly alias: string | null;
  readonly stream: boolean;
}

/**
 * One message of reports: starts, then what was learnt of open requests, then records, then ends (in that
 * order, so a record never outlives its request).
 */
export interface ReportBatch {
  readonly starts: readonly StartNotice[];
  readonly described?: readonly Described[];
  readonly records: readonly UsageRecord[];
  readonly ends: readonly number[];
}

/** The method the primary serves reports under. */
export const REPORT_METHOD = "report";

/** The worker's side: an outbox sent once per turn, and the usage sink and in-flight registry that fill it. */
export class ReportOutbox implements UsageSink {
  readonly #channel: Channel;
  readonly #ring: ReportRing | null;
  #starts: { n: number; subject: InFlightSubject; at: number }[] = [];
  #described: Described[] = [];
  #records: UsageRecord[] = [];
  #ends: number[] = [];
  #scheduled = false;
  #next = 0;

  constructor(channel: Channel, ring: ReportRing | null = null) {
    this.#channel = channel;
    this.#ring = ring;
  }

  /** Registers a request's start; returns its number for {@linkcode ended}. */
  started(subject: InFlightSubject): number {
    const n = this.#next++;
    this.#starts.push({ n, subject, at: Date.now() });
    this.#schedule();
    return n;
  }

  /** Request `n`'s alias and stream flag are on `subject` now, its token's id is `tokenId`. */
  described(n: number, subject: InFlightSubject, tokenId: string | null): void {
    this.#described.push({
      n,
      token_id: tokenId,
      alias: subject.alias ?? null,
      stream: subject.stream ?? false,
    });
    this.#schedule();
  }

  ended(n: number): void {
    this.#ends.push(n);
    this.#schedule();
  }

  write(record: UsageRecord): void {
    this.#records.push(record);
    this.#schedule();
  }

  /** Sends what is gathered now (before a flush of the primary's pipeline, and at shutdown). */
  send(): void {
    this.#scheduled = false;
    if (
      this.#starts.length === 0 && this.#described.length === 0 && this.#records.length === 0 &&
      this.#ends.length === 0
    ) return;
    // Read at send time, a microtask after the start: the request has been authenticated by then, so the
    // notice names its token.
    const starts = this.#starts.map(({ n, subject, at }): StartNotice => ({
      n,
      request_id: subject.request_id,
      method: subject.method,
      path: subject.path,
      token: subject.token ?? null,
      environment: subject.environment ?? null,
      at,
    }));
    const batch: ReportBatch = {
      starts,
      // Left out when empty: most batches have none.
      ...(this.#described.length > 0 ? { described: this.#described } : {}),
      records: this.#records,
      ends: this.#ends,
    };
    this.#described = [];
    this.#starts = [];
    this.#records = [];
    this.#ends = [];
    if (this.#ring === null || !this.#ring.write(JSON.stringify(batch))) {
      this.#channel.note(REPORT_METHOD, batch);
    }
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => this.send());
  }
}

/** A worker's in-flight registry: the primary hears of every request's start and end. */
export class ReportingInFlight extends InFlightRequests {
  readonly #outbox: ReportOutbox;

  constructor(outbox: ReportOutbox) {
    super();
    this.#outbox = outbox;
  }

  override start(clientSignal: AbortSignal, subject?: InFlightSubject): InFlightRequest {
    const open = super.start(clientSignal);
    if (subject === undefined) return open;
    const n = this.#outbox.started(subject);
    let over = false;
    return {
      signal: open.signal,
      done: () => {
        if (over) return;
        over = true;
        open.done();
        this.#outbox.ended(n);
      },
      described: (tokenId) => {
        if (!over) this.#outbox.described(n, subject, tokenId);
      },
    };
  }

  /**
   * The primary hears of a waiting message as of a request's start, and of its end once its own request started.
   * Told in the same turn as that start (as the WebSocket session does), both go in one report: the primary knows
   * the message open throughout, and once, never as none or as two.
   */
  override waiting(subject: InFlightSubject): () => void {
    const n = this.#outbox.started(subject);
    let over = false;
    return () => {
      if (over) return;
      over = true;
      this.#outbox.ended(n);
    };
  }
}

/**
 * The record of a request that was open in a worker when it died: failed (500, `worker_failed`) with what
 * its start told, and its token's id, alias and stream flag once they were known; only API requests have
 * records, as in `finishRequest`.
 */
export function diedRecord(notice: StartNotice, now: number): UsageRecord | null {
  const endpoint = endpointOf(notice.path);
  if (endpoint === null) return null;
  return {
    time: new Date(notice.at).toISOString(),
    request_id: notice.request_id,
    token: notice.token,
    token_id: notice.token_id ?? null,
    team: null,
    team_id: null,
    environment: notice.environment,
    alias: notice.alias ?? null,
    provider: null,
    upstream_model: null,
    endpoint,
    stream: notice.stream ?? false,
    status: 500,
    outcome: "allow",
    rule: null,
    prompt_tokens: 0,
    completion_tokens: 0,
    tokens_estimated: false,
    cost: 0,
    latency_ms: now - notice.at,
    ttft_ms: null,
    attempts: 0,
    error_code: "worker_failed",
  };
}

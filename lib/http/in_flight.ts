/**
 * The requests a gateway is working on, so that shutdown can end them itself instead of leaving them to be cut
 * by the process exit. A request cut by the exit would never be reported: no usage record, no access-log line,
 * no settled budget. Ended here, each one takes its normal way out (an error response, or an error event that
 * closes its stream) and is reported like any other failure before the usage pipeline is flushed.
 *
 * @module
 */
import { ClientGoneError, GatewayError } from "../errors.ts";

/** One request's registration: its abort signal, and the call that says it is over (reported). */
export interface InFlightRequest {
  /**
   * Aborts when the client goes away (reason {@linkcode ClientGoneError}) or the gateway ends the request at
   * shutdown (reason {@linkcode serverShuttingDown}). Handlers pass this, not `request.signal`, upstream.
   */
  readonly signal: AbortSignal;
  /** The request has been reported; idempotent. */
  done(): void;
  /**
   * Its alias and stream flag are on its subject now, and its token's id is `tokenId`: a registry that reports
   * open requests elsewhere (a worker's, so the primary records them fully if the worker dies) passes them on.
   */
  described?(tokenId: string | null): void;
}

/** The error a request still open at the end of the shutdown grace period ends with. */
export function serverShuttingDown(): GatewayError {
  return new GatewayError(503, "The gateway is shutting down; the request was ended before it completed.", {
    type: "server_error",
    code: "server_shutdown",
  });
}

/**
 * What a request is, as far as it is known when it starts (and filled in while it runs: its token once
 * authenticated): what a worker tells the primary, so a request of a worker that dies is still reported.
 */
export interface InFlightSubject {
  readonly request_id: string;
  readonly method: string;
  readonly path: string;
  readonly token?: string | null;
  readonly environment?: string | null;
  readonly alias?: string;
  readonly stream?: boolean;
}

/** The open requests of one gateway. */
export class InFlightRequests {
  readonly #open = new Set<AbortController>();
  #idleWaiters: (() => void)[] = [];
  /** Waits for the requests open at some moment (a reload's swap): those of them still open, and who waits. */
  #watches: { left: Set<AbortController>; over: () => void }[] = [];

  /** How many requests are open. */
  get size(): number {
    return this.#open.size;
  }

  /**
   * Registers a request whose client connection aborts `clientSignal` when it goes away. `_subject` is for
   * registries that report open requests elsewhere (a worker's); this one keeps only the signal.
   */
  start(clientSignal: AbortSignal, _subject?: InFlightSubject): InFlightRequest {
    const controller = new AbortController();
    // A connection the gateway ended itself says why (lib/http/serial_session.ts); any other end is the client's.
    const onClientGone = () =>
      controller.abort(
        clientSignal.reason instanceof ClientGoneError ? clientSignal.reason : new ClientGoneError(),
      );
    if (clientSignal.aborted) onClientGone();
    else clientSignal.addEventListener("abort", onClientGone, { once: true });
    this.#open.add(controller);
    let over = false;
    return {
      signal: controller.signal,
      done: () => {
        if (over) return;
        over = true;
        clientSignal.removeEventListener("abort", onClientGone);
        this.#open.delete(controller);
        if (this.#watches.length > 0) this.#ended(controller);
        if (this.#open.size === 0) this.#wakeIdle();
      },
    };
  }

  /**
   * A request known before it starts: a WebSocket message waiting its turn behind another on its connection
   * (`subject` as far as its handshake tells). Nothing of it runs yet, so there is nothing here to abort or wait
   * for: its connection's end drops it, and that is its record. A registry that reports open requests elsewhere (a
   * worker's) reports it from now, so that it is recorded even if its thread dies before its turn. Returns the
   * call that says it waits no more (idempotent), made once its request started (or was dropped).
   */
  waiting(_subject: InFlightSubject): () => void {
    return () => {};
  }

  /** Aborts every open request with `reason`; returns how many there were. */
  abortAll(reason: GatewayError): number {
    const count = this.#open.size;
    for (const controller of [...this.#open]) controller.abort(reason);
    return count;
  }

  /** Resolves true once no request is open, or false after `ms` with some still open. */
  whenIdle(ms: number): Promise<boolean> {
    if (this.#open.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.#idleWaiters = this.#idleWaiters.filter((w) => w !== wake);
        resolve(false);
      }, ms);
      this.#idleWaiters.push(wake);
    });
  }

  /**
   * Resolves once every request open now has been reported (not waiting for those that start later, so
   * steady traffic cannot hold it back); never, for one that never ends, so the caller bounds the wait.
   */
  whenOpenOver(): Promise<void> {
    if (this.#open.size === 0) return Promise.resolve();
    return new Promise((over) => this.#watches.push({ left: new Set(this.#open), over }));
  }

  #ended(controller: AbortController) {
    this.#watches = this.#watches.filter((watch) => {
      watch.left.delete(controller);
      if (watch.left.size > 0) return true;
      watch.over();
      return false;
    });
  }

  #wakeIdle() {
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const wake of waiters) wake();
  }
}

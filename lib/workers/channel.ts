/**
 * Calls between the primary thread and a serving worker (`serve --workers N`), over one message port: a
 * call is answered once (its value or its error), a note is one-way. Both ends hold a `Channel`; each serves
 * the methods the other may call. Structured clone carries the arguments, so only plain data crosses.
 *
 * Errors cross as their name, message and (for the usage query's) param: the caller's side rebuilds the
 * classes it tells apart (`remote_stores.ts`), as the SQLite worker's proxy does.
 *
 * The primary's end bounds its calls (`answerMs`): a worker whose thread is stuck answers nothing, and a reload,
 * a scrape or a shutdown waiting on it would wait for ever. A call left unanswered that long is told to
 * `unanswered` (which judges the worker: `liveness.ts`), then rejects.
 *
 * @module
 */

/** What a `Worker` and a worker's `self` have in common. */
export interface MessagePortLike {
  postMessage(message: unknown): void;
  onmessage: ((event: MessageEvent) => void) | null;
}

/** An error as it crosses the thread boundary. */
export interface CrossedError {
  readonly name: string;
  readonly message: string;
  readonly param?: string;
}

/** One message on the port. */
export type ChannelMessage =
  | { readonly k: "call"; readonly id: number; readonly m: string; readonly a: readonly unknown[] }
  | { readonly k: "ok"; readonly id: number; readonly v: unknown }
  | { readonly k: "err"; readonly id: number; readonly e: CrossedError }
  | { readonly k: "note"; readonly m: string; readonly a: readonly unknown[] };

/** The methods one end serves: called with the arguments as sent; a note's answer is ignored. */
export type Methods = Record<string, (...args: never[]) => unknown>;

/** Rebuilds an error that crossed: a plain `Error` with the same name and message (and `param`). */
export function crossedError(e: CrossedError): Error & { param?: string } {
  const error: Error & { param?: string } = new Error(e.message);
  error.name = e.name;
  if (e.param !== undefined) error.param = e.param;
  return error;
}

function crossing(err: unknown): CrossedError {
  if (!(err instanceof Error)) return { name: "Error", message: String(err) };
  const param = (err as { param?: unknown }).param;
  return typeof param === "string"
    ? { name: err.name, message: err.message, param }
    : { name: err.name, message: err.message };
}

/** Options of a {@linkcode Channel}. */
export interface ChannelOptions {
  /** How long a call waits for its answer (unbounded when absent). */
  readonly answerMs?: number;
  /** Told of a call left unanswered past its bound, before the call rejects. */
  readonly unanswered?: (method: string) => void;
}

/** A call that was not answered within its bound. */
export class NoAnswerError extends Error {
  override readonly name = "NoAnswerError";
}

interface Pending {
  resolve(v: unknown): void;
  reject(e: Error): void;
  timer?: ReturnType<typeof setTimeout>;
}

/** One end of the port. */
export class Channel {
  readonly #port: MessagePortLike;
  readonly #pending = new Map<number, Pending>();
  readonly #options: ChannelOptions;
  #methods: Methods = {};
  #nextId = 1;
  #closedWith: Error | null = null;

  constructor(port: MessagePortLike, options: ChannelOptions = {}) {
    this.#port = port;
    this.#options = options;
    port.onmessage = (event) => this.#receive(event.data as ChannelMessage);
  }

  /** Sets the methods the other end may call (replacing any set before). */
  serve(methods: Methods): void {
    this.#methods = methods;
  }

  /**
   * Calls `method` on the other end; rejects with its error, when the channel is closed, or (a
   * {@linkcode NoAnswerError}) when the channel's `answerMs` passed without an answer.
   */
  call<T>(method: string, ...args: unknown[]): Promise<T> {
    return this.callWithin<T>(this.#options.answerMs, method, ...args);
  }

  /** {@linkcode call}, bounded by `ms` rather than the channel's `answerMs` (unbounded when undefined). */
  callWithin<T>(ms: number | undefined, method: string, ...args: unknown[]): Promise<T> {
    if (this.#closedWith !== null) return Promise.reject(this.#closedWith);
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      const pending: Pending = { resolve: resolve as (v: unknown) => void, reject };
      if (ms !== undefined) {
        pending.timer = setTimeout(() => {
          if (!this.#pending.delete(id)) return;
          // Told first: the worker is judged (and maybe ended, which rejects the other calls) before this one rejects.
          this.#options.unanswered?.(method);
          reject(new NoAnswerError(`no answer to ${method} within ${ms} ms`));
        }, ms);
      }
      this.#pending.set(id, pending);
      this.#port.postMessage({ k: "call", id, m: method, a: args } satisfies ChannelMessage);
    });
  }

  /** Tells the other end `method(args)`, answered by nothing. */
  note(method: string, ...args: unknown[]): void {
    if (this.#closedWith !== null) return;
    this.#port.postMessage({ k: "note", m: method, a: args } satisfies ChannelMessage);
  }

  /** The other end is gone: every call still waiting rejects with `reason`, and later ones too. */
  close(reason: Error): void {
    this.#closedWith = reason;
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer);
      p.reject(reason);
    }
    this.#pending.clear();
  }

  /** Calls still waiting for an answer. */
  get waiting(): number {
    return this.#pending.size;
  }

  #receive(message: ChannelMessage): void {
    switch (message.k) {
      case "ok":
      case "err": {
        const p = this.#pending.get(message.id);
        if (p === undefined) return;
        this.#pending.delete(message.id);
        clearTimeout(p.timer);
        if (message.k === "ok") p.resolve(message.v);
        else p.reject(crossedError(message.e));
        return;
      }
      case "note": {
        const method = this.#methods[message.m] as ((...args: unknown[]) => unknown) | undefined;
        try {
          const result = method?.(...message.a);
          if (result instanceof Promise) result.catch(() => {});
        } catch {
          // A note has no one to answer; the method reports its own failures.
        }
        return;
      }
      case "call": {
        const method = this.#methods[message.m] as ((...args: unknown[]) => unknown) | undefined;
        const answer = (v: unknown) =>
          this.#port.postMessage({ k: "ok", id: message.id, v } satisfies ChannelMessage);
        const fail = (err: unknown) =>
          this.#port.postMessage({ k: "err", id: message.id, e: crossing(err) } satisfies ChannelMessage);
        if (method === undefined) return fail(new Error(`no such method: ${message.m}`));
        try {
          Promise.resolve(method(...message.a)).then(answer, fail);
        } catch (err) {
          fail(err);
        }
        return;
      }
    }
  }
}

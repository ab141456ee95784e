/**
 * The gateway's token counts, made in a worker thread (`token_count_worker.ts`) so that a serving thread never
 * loads the tokenizer nor runs its BPE: the load took ~0.3 s on Deno and ~0.8 s on Bun (1–3 s on a busy machine),
 * synchronously, and every other request on the thread stalled meanwhile (health probes failed, connection
 * timers fired late together). The worker starts on the first count, not before: a gateway whose upstreams
 * always report usage never starts it. Each thread that counts (each serving worker of `serve --workers N`) has
 * its own.
 *
 * Whatever goes wrong is a count still answered, never an exception of its own:
 * - no worker can be started (no `Worker` in the runtime, a module that does not load, a tokenizer that does not
 *   load in it): this thread counts itself, as before the worker existed (said once in the log);
 * - the worker dies, or a count takes longer than {@linkcode TOKEN_COUNT_TIMEOUT_MS} (the worker is ended then):
 *   the counts waiting on it resolve to `null`, which `countTokens` turns into the rough estimate, as callers do
 *   when the tokenizer fails; the next count starts a new worker.
 *
 * @module
 */
import type { Logger } from "../log.ts";
import { countHere, tokenizerHere, tokenizerLoadedHere } from "./tokenizer.ts";

/** A count asked of the worker. */
export interface TokenCountAsk {
  readonly id: number;
  readonly texts: readonly string[];
}

/** What the worker says: its tokenizer loaded (or not, once), then the answer to each count. */
export type TokenCountAnswer =
  | { readonly loaded: true }
  | { readonly failed: string }
  | { readonly id: number; readonly count: number }
  | { readonly id: number; readonly error: string };

/**
 * Longest a count may wait for its answer, its worker's start included: generous, since a load takes seconds on
 * a busy machine and a 32 MiB body counts in a few; past it the worker is taken for hung.
 */
export const TOKEN_COUNT_TIMEOUT_MS = 60_000;

/** Options of a {@linkcode TokenCounter}. */
export interface TokenCounterOptions {
  /** The worker module (default: `token_count_worker.ts` beside this file). */
  readonly workerUrl?: URL;
  readonly timeoutMs?: number;
}

/** Who counts through a counter: a serving thread's gateway, with the worker module its entry point found. */
export interface TokenCounterUser {
  /** A single binary passes it from its entry point, where it is bundled as an entry point of its own. */
  readonly workerUrl?: URL;
  readonly logger?: Logger;
}

interface Pending {
  /**
   * Kept only until some worker has loaded the tokenizer, for this thread to count them should none be able to
   * run; then dropped, so that the serving thread holds nothing of a count the worker has (a stream's batches).
   */
  texts: readonly string[] | null;
  resolve(count: number | null): void;
  reject(err: unknown): void;
  readonly timer: ReturnType<typeof setTimeout>;
}

/** The first line of a worker's error, without terminal colours. */
function firstLine(message: string | undefined): string {
  // deno-lint-ignore no-control-regex
  const plain = (message ?? "").replace(/\u001b\[[0-9;]*m/g, "").split("\n", 1)[0].trim();
  return plain === "" ? "unknown error" : plain;
}

/** Counts tokens in a worker thread it starts on first use; see the module's documentation. */
export class TokenCounter {
  readonly #defaultUrl: URL;
  readonly #timeoutMs: number;
  #users: TokenCounterUser[] = [];
  #worker: Worker | null = null;
  /** The current worker said its tokenizer is loaded. */
  #loaded = false;
  /** Some worker of this counter loaded the tokenizer: a later failure is a crash, not a worker that cannot run. */
  #everLoaded = false;
  /** No worker can count here: this thread counts. */
  #inThread = false;
  #pending = new Map<number, Pending>();
  #nextId = 1;

  constructor(options: TokenCounterOptions = {}) {
    this.#defaultUrl = options.workerUrl ?? new URL("./token_count_worker.ts", import.meta.url);
    this.#timeoutMs = options.timeoutMs ?? TOKEN_COUNT_TIMEOUT_MS;
  }

  /**
   * The tokens of `texts` together, as the tokenizer counts them in this thread; `null` when the worker failed
   * them (died, or took too long). Rejects only as a count in this thread would (the tokenizer did not load).
   */
  count(texts: readonly string[]): Promise<number | null> {
    const worker = this.#inThread ? null : this.#worker ?? this.#start();
    if (worker === null) return countHere(texts);
    const answer = Promise.withResolvers<number | null>();
    const id = this.#nextId++;
    const timer = setTimeout(() => this.#timedOut(worker), this.#timeoutMs);
    this.#pending.set(id, {
      texts: this.#everLoaded ? null : texts,
      resolve: answer.resolve,
      reject: answer.reject,
      timer,
    });
    const ask: TokenCountAsk = { id, texts };
    try {
      worker.postMessage(ask);
    } catch (err) {
      this.#failed(
        worker,
        `a count could not be sent: ${firstLine(err instanceof Error ? err.message : "")}`,
      );
    }
    return answer.promise;
  }

  /**
   * Starts the worker if it is not running and resolves once its tokenizer is loaded, or once that failed (counts
   * then fall back as they always do); never rejects.
   */
  load(): Promise<void> {
    if (this.#inThread) return tokenizerHere().then(() => {}, () => {});
    return this.#loaded ? Promise.resolve() : this.count([]).then(() => {}, () => {});
  }

  /** Whether a count now costs no tokenizer load: the worker has it loaded (or this thread, counting itself). */
  loaded(): boolean {
    return this.#inThread ? tokenizerLoadedHere() : this.#loaded;
  }

  /**
   * Registers a gateway that counts through this counter, and returns its release: once the last one is released
   * the worker is ended, so it keeps no process alive and does not outlive the gateways of a test process.
   */
  use(user: TokenCounterUser): () => void {
    this.#users.push(user);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#users.splice(this.#users.indexOf(user), 1);
      if (this.#users.length === 0) this.stop();
    };
  }

  /**
   * Ends the worker; counts still waiting on it resolve to `null`. The next count starts a new one (and tries a
   * worker again, if this thread counted itself).
   */
  stop(): void {
    this.#discard();
    this.#settleAll(null);
    this.#inThread = false;
    this.#everLoaded = false;
  }

  #logger(): Logger | undefined {
    return this.#users.findLast((u) => u.logger !== undefined)?.logger;
  }

  #start(): Worker | null {
    const url = this.#users.findLast((u) => u.workerUrl !== undefined)?.workerUrl ?? this.#defaultUrl;
    if (typeof Worker !== "function") {
      this.#countInThread("this runtime has no Worker");
      return null;
    }
    let worker: Worker;
    try {
      worker = new Worker(url.href, { type: "module" });
    } catch (err) {
      this.#countInThread(firstLine(err instanceof Error ? err.message : String(err)));
      return null;
    }
    worker.onmessage = (event: MessageEvent<TokenCountAnswer>) => this.#answer(worker, event.data);
    worker.onerror = (event: ErrorEvent) => {
      // Handled here: an uncaught error in the worker must not take the server down with it.
      event.preventDefault();
      this.#failed(worker, firstLine(event.message));
    };
    worker.onmessageerror = () => this.#failed(worker, "an answer could not be read");
    this.#worker = worker;
    this.#loaded = false;
    return worker;
  }

  #answer(worker: Worker, answer: TokenCountAnswer): void {
    if (worker !== this.#worker) return;
    if ("loaded" in answer) {
      this.#loaded = true;
      this.#everLoaded = true;
      for (const pending of this.#pending.values()) pending.texts = null;
    } else if ("failed" in answer) {
      this.#countInThread(`the tokenizer did not load in its worker: ${firstLine(answer.failed)}`);
    } else {
      const pending = this.#pending.get(answer.id);
      if (pending === undefined) return;
      this.#pending.delete(answer.id);
      clearTimeout(pending.timer);
      if ("count" in answer) pending.resolve(answer.count);
      else pending.reject(new Error(answer.error));
    }
  }

  /** The worker died or could not be used: a worker that never counted cannot run here; one that did crashed. */
  #failed(worker: Worker, reason: string): void {
    if (worker !== this.#worker) return;
    if (!this.#everLoaded) return this.#countInThread(reason);
    this.#logger()?.warn("token_count_worker_failed", { reason, counts_estimated: this.#pending.size });
    this.#discard();
    this.#settleAll(null);
  }

  #timedOut(worker: Worker): void {
    if (worker !== this.#worker) return;
    this.#logger()?.warn("token_count_timeout", {
      timeout_ms: this.#timeoutMs,
      counts_estimated: this.#pending.size,
    });
    this.#discard();
    this.#settleAll(null);
  }

  /** No worker here: this thread counts from now on, the counts waiting included (said once). */
  #countInThread(reason: string): void {
    if (!this.#inThread) this.#logger()?.warn("token_counter_unavailable", { reason, counting: "in-thread" });
    this.#inThread = true;
    this.#discard();
    for (const pending of this.#pending.values()) {
      clearTimeout(pending.timer);
      if (pending.texts === null) pending.resolve(null);
      else countHere(pending.texts).then(pending.resolve, pending.reject);
    }
    this.#pending.clear();
  }

  #discard(): void {
    this.#worker?.terminate();
    this.#worker = null;
    this.#loaded = false;
  }

  #settleAll(count: null): void {
    for (const pending of this.#pending.values()) {
      clearTimeout(pending.timer);
      pending.resolve(count);
    }
    this.#pending.clear();
  }
}

/** The counter of this thread, which `countTokens` and the serving thread's gateway use. */
export const tokenCounter: TokenCounter = new TokenCounter();

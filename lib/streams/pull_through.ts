/**
 * Stream stages joined without `pipeThrough`. Each stage of the provider path (SSE parsing, a vendor's chunk
 * translation, …) is a standard WHATWG `Transformer`, run by {@linkcode pullThrough} (and, in the tests that
 * check the two agree, wrapped in a plain `TransformStream`).
 *
 * `source.pipeThrough(new A()).pipeThrough(new B())` costs, per open stream, two readable/writable pairs and
 * two running pipe loops, and per chunk a handful of promises at every hop. `pullThrough(source, a, b)` is
 * one `ReadableStream` that, when pulled, reads the source and runs the chunk through the stages as plain
 * synchronous calls. What the caller sees is the same: backpressure (nothing is read before the consumer
 * pulls), cancellation (cancelling the result cancels the source), errors (a stage that throws or calls
 * `error()` errors the result and cancels the source), `terminate()` (ends the result after the later stages
 * flush, and cancels the source), and `flush` at the end, stage by stage.
 *
 * The stages' `transform` and `flush` must be synchronous (all of the gateway's are); `start` is not used.
 *
 * @module
 */

/**
 * What the stages read from: a `ReadableStreamDefaultReader`, or any object that reads the same way (the
 * provider transport's guarded upstream body, which needs no stream of its own). One reader at a time.
 */
export interface ChunkSource<T> {
  read(): Promise<ReadableStreamReadResult<T>>;
  cancel(reason?: unknown): Promise<void>;
}

/** A `Transformer` whose steps are synchronous, which {@linkcode pullThrough} can run. */
export interface SyncTransformer<I, O> {
  transform(chunk: I, controller: TransformStreamDefaultController<O>): void;
  flush?(controller: TransformStreamDefaultController<O>): void;
}

/** Runs `source` through one stage; see the module documentation. */
export function pullThrough<A, B>(source: ReadableStream<A>, s1: SyncTransformer<A, B>): ReadableStream<B>;
/** Runs `source` through two stages; see the module documentation. */
export function pullThrough<A, B, C>(
  source: ReadableStream<A>,
  s1: SyncTransformer<A, B>,
  s2: SyncTransformer<B, C>,
): ReadableStream<C>;
/** Runs `source` through three stages; see the module documentation. */
export function pullThrough<A, B, C, D>(
  source: ReadableStream<A>,
  s1: SyncTransformer<A, B>,
  s2: SyncTransformer<B, C>,
  s3: SyncTransformer<C, D>,
): ReadableStream<D>;
export function pullThrough(
  source: ReadableStream<unknown>,
  ...stages: SyncTransformer<unknown, unknown>[]
): ReadableStream<unknown> {
  return pullThroughAll(source, stages);
}

/**
 * Stages whose types line up from `I` to `O`, named now and run later by {@linkcode pullStages}: how a
 * provider says what its stream goes through without running it.
 */
export interface Stages<I, O> {
  readonly list: readonly SyncTransformer<unknown, unknown>[];
  /** Carries the types only; never set. */
  readonly types?: (input: I) => O;
}

/** One stage, as {@linkcode Stages}. */
export function stages<A, B>(s1: SyncTransformer<A, B>): Stages<A, B>;
/** Two stages, as {@linkcode Stages}; the first's output type is the second's input type. */
export function stages<A, B, C>(s1: SyncTransformer<A, B>, s2: SyncTransformer<B, C>): Stages<A, C>;
/** Three stages, as {@linkcode Stages}. */
export function stages<A, B, C, D>(
  s1: SyncTransformer<A, B>,
  s2: SyncTransformer<B, C>,
  s3: SyncTransformer<C, D>,
): Stages<A, D>;
export function stages(...list: SyncTransformer<unknown, unknown>[]): Stages<unknown, unknown> {
  return { list };
}

/**
 * Runs `source` (a stream, or a reader of one) through `chain`, as {@linkcode pullThrough} does, and gives the
 * result as a reader: a provider's stream is read by one consumer (the answer's stream body), which needs no
 * `ReadableStream` of its own in between (one stream, its controller, reader and queue fewer per open stream).
 */
export function pullStages<I, O>(
  source: ReadableStream<I> | ChunkSource<I>,
  chain: Stages<I, O>,
): ChunkSource<O> {
  return stageReader(source as ReadableStream<unknown> | ChunkSource<unknown>, chain.list) as ChunkSource<O>;
}

function pullThroughAll(
  source: ReadableStream<unknown>,
  stages: readonly SyncTransformer<unknown, unknown>[],
): ReadableStream<unknown> {
  const reader = stageReader(source, stages);
  return new ReadableStream<unknown>({
    async pull(controller) {
      try {
        const next = await reader.read();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      } catch (err) {
        controller.error(err);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
}

/**
 * The stage runner: each `read` reads the source until the stages have passed something on (or ended, or
 * failed), running each chunk through them as plain calls. What the last stage passes on waits in a queue for
 * the next reads; one read at a time.
 */
function stageReader(
  source: ReadableStream<unknown> | ChunkSource<unknown>,
  stages: readonly SyncTransformer<unknown, unknown>[],
): ChunkSource<unknown> {
  const reader: ChunkSource<unknown> = source instanceof ReadableStream ? source.getReader() : source;
  /** Stages before this index have ended (terminated, or flushed at the end): they take no more input. */
  let live = 0;
  let failure: { reason: unknown } | undefined;
  /** The source is done with: cancelled (after a failure, the end, or the consumer's cancel) or errored. */
  let released = false;
  let cancelled = false;
  const out: unknown[] = [];
  let head = 0;
  const last = stages.length - 1;

  /** The controller stage `i` writes to: its output goes into stage `i + 1`, or out of the last stage. */
  const controllers = stages.map((_, i): TransformStreamDefaultController<unknown> => ({
    // The consumer pulls one value at a time: nothing is wanted ahead of it.
    desiredSize: 0,
    enqueue(chunk: unknown) {
      // A stage that has ended, or a failed chain, passes nothing on (the rest of its chunk is dropped).
      if (i < live || failure) return;
      if (i === last) out.push(chunk);
      else feed(i + 1, chunk);
    },
    terminate() {
      if (i < live || failure) return;
      live = i + 1;
      endFrom();
    },
    error(reason: unknown) {
      failure ??= { reason };
    },
  }));

  /** Passes `chunk` to stage `i`; a stop (terminate/error) unwinds to the stage that started the call. */
  function feed(i: number, chunk: unknown): void {
    if (i < live) return;
    stages[i].transform(chunk, controllers[i]);
  }

  /** The input of stage `live` has ended: flush it, and so on down the chain (a flush may terminate). */
  function endFrom(): void {
    while (live < stages.length && !failure) {
      const i = live;
      stages[i].flush?.(controllers[i]); // may still enqueue; may terminate, which ends the rest itself
      if (live === i) live = i + 1;
    }
  }

  const run = (step: () => void) => {
    try {
      step();
    } catch (err) {
      failure ??= { reason: err };
    }
  };

  return {
    async read(): Promise<ReadableStreamReadResult<unknown>> {
      if (cancelled) return { done: true, value: undefined };
      while (head === out.length && live < stages.length && !failure) {
        let next: ReadableStreamReadResult<unknown>;
        try {
          next = await reader.read();
        } catch (err) {
          // The source failed (it needs no cancel): its error is the chain's.
          released = true;
          failure ??= { reason: err };
          break;
        }
        if (next.done) {
          // The source ended by itself: nothing to release (a stream source would ignore a cancel now too).
          released = true;
          run(endFrom);
        } else run(() => feed(0, next.value));
      }
      if (!released && (failure || live === stages.length)) {
        // Failed, or every stage has ended (the source ended, or a stage terminated): let the source go at once.
        released = true;
        await reader.cancel(failure?.reason).catch(() => {});
      }
      // What the stages passed on before a failure is delivered first, as a chain of TransformStreams would.
      if (head < out.length) {
        const value = out[head];
        out[head++] = undefined;
        if (head === out.length) out.length = head = 0;
        return { done: false, value };
      }
      if (failure) throw failure.reason;
      return { done: true, value: undefined };
    },
    async cancel(reason?: unknown) {
      if (cancelled) return;
      cancelled = true;
      out.length = head = 0;
      if (released) return;
      released = true;
      await reader.cancel(reason).catch(() => {});
    },
  };
}

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

/** Runs `source` through `chain`, as {@linkcode pullThrough} does. */
export function pullStages<I, O>(source: ReadableStream<I>, chain: Stages<I, O>): ReadableStream<O> {
  return pullThroughAll(source, chain.list) as ReadableStream<O>;
}

function pullThroughAll(
  source: ReadableStream<unknown>,
  stages: readonly SyncTransformer<unknown, unknown>[],
): ReadableStream<unknown> {
  const reader = source.getReader();
  /** Stages before this index have ended (terminated, or flushed at the end): they take no more input. */
  let live = 0;
  let emitted = 0;
  let failure: { reason: unknown } | undefined;
  let sourceCancelled = false;
  let out!: ReadableStreamDefaultController<unknown>;

  /** The controller stage `i` writes to: its output goes into stage `i + 1`, or out of the last stage. */
  const controllers = stages.map((_, i): TransformStreamDefaultController<unknown> => ({
    get desiredSize() {
      return i === stages.length - 1 ? out.desiredSize : 0;
    },
    enqueue(chunk: unknown) {
      // A stage that has ended, or a failed chain, passes nothing on (the rest of its chunk is dropped).
      if (i < live || failure) return;
      if (i === stages.length - 1) {
        emitted++;
        out.enqueue(chunk);
      } else {
        feed(i + 1, chunk);
      }
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

  return new ReadableStream<unknown>({
    start(controller) {
      out = controller;
    },
    async pull(controller) {
      emitted = 0;
      while (emitted === 0 && live < stages.length && !failure) {
        const next = await reader.read();
        if (next.done) {
          run(endFrom);
        } else {
          run(() => feed(0, next.value));
        }
      }
      if (failure) {
        if (!sourceCancelled) {
          sourceCancelled = true;
          await reader.cancel(failure.reason).catch(() => {});
        }
        // What the stages passed on before the failure is delivered first, as a chain of TransformStreams
        // would have; erroring now would discard it from the queue. The next pull reports the failure.
        if (emitted === 0) controller.error(failure.reason);
      } else if (live === stages.length) {
        // Every stage has ended (the source ended, or a stage terminated): release the source and close.
        await reader.cancel().catch(() => {});
        controller.close();
      }
    },
    async cancel(reason) {
      await reader.cancel(reason).catch(() => {});
    },
  }, { highWaterMark: 0 });
}

/**
 * Runs stream stages the way production does, through `pullThrough`, for the stage tests: a test hands over
 * its input (an array of chunks or a stream) and gets back the stream a provider would return. There are no
 * test-only `TransformStream` classes, so what the tests exercise is what ships.
 *
 * @module
 */
import { pullThrough, type SyncTransformer } from "../../lib/streams/pull_through.ts";

/** Input for {@linkcode runStages}: chunks, or a stream of them. */
export type StageInput<T> = ReadableStream<T> | Iterable<T>;

function toStream<T>(input: StageInput<T>): ReadableStream<T> {
  return input instanceof ReadableStream ? input : ReadableStream.from(input);
}

/** Runs `input` through one stage. */
export function runStages<A, B>(input: StageInput<A>, s1: SyncTransformer<A, B>): ReadableStream<B>;
/** Runs `input` through two stages. */
export function runStages<A, B, C>(
  input: StageInput<A>,
  s1: SyncTransformer<A, B>,
  s2: SyncTransformer<B, C>,
): ReadableStream<C>;
/** Runs `input` through three stages. */
export function runStages<A, B, C, D>(
  input: StageInput<A>,
  s1: SyncTransformer<A, B>,
  s2: SyncTransformer<B, C>,
  s3: SyncTransformer<C, D>,
): ReadableStream<D>;
export function runStages(
  input: StageInput<unknown>,
  ...stages: SyncTransformer<unknown, unknown>[]
): ReadableStream<unknown> {
  const source = toStream(input);
  switch (stages.length) {
    case 1:
      return pullThrough(source, stages[0]);
    case 2:
      return pullThrough(source, stages[0], stages[1]);
    default:
      return pullThrough(source, stages[0], stages[1], stages[2]);
  }
}

/**
 * The `BroadcastChannel` on which tests/helpers/faulty_token_worker.ts announces a count of a text containing
 * `announce-the-count` as it begins: a module of its own, since importing the worker fixture would run it here.
 *
 * @module
 */
export const COUNT_ANNOUNCED = "faulty-token-worker:count-announced";

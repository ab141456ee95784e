/**
 * What the adapters' tests share: an input to check, and the two properties every adapter must keep on
 * failure (its error hides the texts and credentials; an aborted signal ends the call at once).
 *
 * @module
 */
import assert from "node:assert/strict";
import type { GuardrailInput, GuardrailPhase } from "../types.ts";

/** An input of `texts`, for alias `chat` and token `team-a`. */
export function input(texts: readonly string[], phase: GuardrailPhase = "input"): GuardrailInput {
  return { phase, alias: "chat", token: "team-a", texts };
}

/** A signal that never aborts. */
export const never: AbortSignal = new AbortController().signal;

/** Asserts `promise` rejects with an Error whose message holds none of `hidden`; returns that error. */
export async function rejectsWithout(promise: Promise<unknown>, hidden: readonly string[]): Promise<Error> {
  const error = await promise.then(
    () => assert.fail("expected a rejection"),
    (e: unknown) => e,
  );
  assert.ok(error instanceof Error, "rejects with an Error");
  for (const secret of hidden) {
    assert.ok(!error.message.includes(secret), `the message repeats a hidden value: ${error.message}`);
  }
  return error;
}

/**
 * Asserts that aborting the signal 50 ms into a call (that the service would answer only after seconds)
 * rejects with the signal's reason well before the service answers.
 */
export async function abortStops(call: (signal: AbortSignal) => Promise<unknown>): Promise<void> {
  const controller = new AbortController();
  const reason = new Error("guardrail timed out");
  const started = Date.now();
  const timer = setTimeout(() => controller.abort(reason), 50);
  try {
    await assert.rejects(call(controller.signal), (e) => e === reason);
  } finally {
    clearTimeout(timer);
  }
  assert.ok(Date.now() - started < 2000, "the call ended when the signal aborted");
}

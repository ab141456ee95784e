/**
 * What the adapters' tests share: an input to check, and the two properties every adapter must keep on
 * failure (its error hides the texts and credentials; an aborted signal ends the call, without its answer).
 *
 * @module
 */
import assert from "node:assert/strict";
import type { GuardrailInput, GuardrailPhase } from "../types.ts";
import { backstop, eventually } from "../../../tests/helpers/backstop.ts";
import type { FakeService } from "../../../tests/helpers/fake_guardrails.ts";

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
 * How long a fake holds each call in {@linkcode abortStops}: ten minutes, far past the backstop, so a call that
 * waits for the service's answer instead of its signal fails at the backstop rather than passing late.
 */
const HELD_MS = 600_000;

/**
 * Asserts that aborting the signal ends a call the service is holding: `fake` holds every call (its `stop()`
 * ends the hold), the signal is aborted once the service has the call, and the call must then reject with the
 * signal's reason. Awaited as it happens; the backstop only turns a call that never ends into a failure.
 */
export async function abortStops(
  fake: FakeService,
  call: (signal: AbortSignal) => Promise<unknown>,
): Promise<void> {
  fake.faults.delayMs = HELD_MS;
  const controller = new AbortController();
  const reason = new Error("guardrail timed out");
  const ended = call(controller.signal).then(
    () => assert.fail("the call ended without an error"),
    (error: unknown) => error,
  );
  await eventually("the service has the call", () => fake.calls.length > 0);
  controller.abort(reason);
  const error = await backstop(ended, "the call ends when its signal aborts");
  assert.equal(error, reason, "the call rejects with the signal's reason");
}

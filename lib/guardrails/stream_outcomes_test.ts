import assert from "node:assert/strict";
import { NO_SECRETS } from "../secrets/scrubber.ts";
import type { GuardrailOutcome, ResolvedGuardrail } from "./resolved.ts";
import { streamOutcomes } from "./stream_outcomes.ts";

const named = (name: string): ResolvedGuardrail => ({
  name,
  phases: new Set(["output"]),
  action: "flag",
  reverse: false,
  message: null,
  pii: null,
  service: null,
  timeoutMs: 1_000,
  onFailure: "fail_open",
  scrubber: NO_SECRETS,
});

Deno.test("stream outcomes: one per guardrail, after the input phase's, in the guardrails' order", () => {
  const outcomes: GuardrailOutcome[] = [{ name: "in", phase: "input", action: "mask", types: ["EMAIL"] }];
  const merged = streamOutcomes([named("a"), named("b"), named("c")], outcomes);
  merged.note({ name: "c", phase: "output", action: "flag", types: ["IP_ADDRESS"] });
  merged.note({ name: "b", phase: "output", action: "pass" });
  merged.note({ name: "c", phase: "output", action: "flag", types: ["EMAIL", "IP_ADDRESS"] });
  merged.note({ name: "a", phase: "output", action: "mask", types: ["EMAIL"] });
  merged.note({ name: "b", phase: "output", action: "error", error: "timeout" });
  merged.note({ name: "b", phase: "output", action: "error", error: "unavailable" });
  merged.note({ name: "b", phase: "output", action: "pass" });
  assert.deepEqual(outcomes, [
    { name: "in", phase: "input", action: "mask", types: ["EMAIL"] },
    { name: "a", phase: "output", action: "mask", types: ["EMAIL"] },
    { name: "b", phase: "output", action: "error", error: "timeout" },
    { name: "c", phase: "output", action: "flag", types: ["EMAIL", "IP_ADDRESS"] },
  ]);
});

Deno.test("stream outcomes: the weightiest action wins; a refusal after a failure is a refusal", () => {
  const outcomes: GuardrailOutcome[] = [];
  const merged = streamOutcomes([named("hook")], outcomes);
  merged.note({ name: "hook", phase: "output", action: "flag", types: ["hate"] });
  merged.note({ name: "hook", phase: "output", action: "replace", types: ["pii"] });
  assert.deepEqual(outcomes, [{ name: "hook", phase: "output", action: "replace", types: ["hate", "pii"] }]);
  merged.note({ name: "hook", phase: "output", action: "error", error: "timeout" });
  assert.deepEqual(outcomes, [
    { name: "hook", phase: "output", action: "error", types: ["hate", "pii"], error: "timeout" },
  ]);
  merged.note({ name: "hook", phase: "output", action: "deny", types: ["violence"] });
  assert.deepEqual(outcomes, [
    { name: "hook", phase: "output", action: "deny", types: ["hate", "pii", "violence"] },
  ]);
});

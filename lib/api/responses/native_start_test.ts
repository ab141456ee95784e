import assert from "node:assert/strict";
import { RESPONSES_START } from "./native_start.ts";

const failed = (code: string) => ({
  type: "response.failed",
  response: { id: "resp_1", status: "failed", output: [], error: { code, message: `Failed: ${code}.` } },
});

Deno.test("responses native start: the lifecycle events show nothing; output and final events do", () => {
  for (const type of ["response.created", "response.queued", "response.in_progress"]) {
    assert.equal(RESPONSES_START.shows({ type }), false, type);
  }
  for (
    const type of ["response.output_item.added", "response.output_text.delta", "response.completed"]
  ) assert.equal(RESPONSES_START.shows({ type }), true, type);
});

Deno.test("responses native start: a response failed on the upstream's side is its error; one about the request is not", () => {
  const server = RESPONSES_START.failure?.(failed("server_error"), "up");
  assert.deepEqual([server?.status, server?.code, server?.message], [
    502,
    "server_error",
    'Provider "up" failed the response: Failed: server_error.',
  ]);
  const limited = RESPONSES_START.failure?.(failed("rate_limit_exceeded"), "up");
  assert.deepEqual([limited?.status, limited?.type], [429, "rate_limit_error"]);
  assert.equal(RESPONSES_START.failure?.(failed("invalid_prompt"), "up"), undefined);
  assert.equal(RESPONSES_START.failure?.({ type: "response.completed", response: {} }, "up"), undefined);
});

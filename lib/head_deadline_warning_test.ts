import assert from "node:assert/strict";
import { warnFixedHeadDeadline } from "./head_deadline_warning.ts";
import { createMemoryLogger } from "./log.ts";

Deno.test("head deadline warning: a runtime with its own head deadline warns when header_timeout differs", () => {
  for (const headerTimeoutMs of [1_000, 30_000]) {
    const logger = createMemoryLogger();
    warnFixedHeadDeadline({ name: "bun", fixedHeadDeadlineMs: 10_000 }, headerTimeoutMs, logger);
    assert.equal(logger.lines.length, 1);
    assert.equal(logger.lines[0].msg, "header_timeout_not_applied");
    assert.equal(logger.lines[0].level, "warn");
    assert.equal(logger.lines[0].header_timeout_ms, headerTimeoutMs);
    assert.equal(logger.lines[0].runtime_head_deadline_ms, 10_000);
  }
});

Deno.test("head deadline warning: silent when header_timeout is the runtime's deadline, or the edge applies it", () => {
  const logger = createMemoryLogger();
  warnFixedHeadDeadline({ name: "bun", fixedHeadDeadlineMs: 10_000 }, 10_000, logger);
  warnFixedHeadDeadline({ name: "deno" }, 1_000, logger);
  assert.deepEqual(logger.lines, []);
});

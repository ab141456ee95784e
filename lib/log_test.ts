import assert from "node:assert/strict";
import { createJsonLogger } from "./log.ts";

function capture(buffered: boolean) {
  const writes: string[] = [];
  const logger = createJsonLogger((text) => writes.push(text), { buffered });
  const lines = () => writes.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  return { writes, logger, lines };
}

Deno.test("log: one JSON object per line, time/level/msg first, then the fields as given", () => {
  const { logger, writes, lines } = capture(false);
  logger.info("request", {
    status: 200,
    note: 'a "quoted"\nline',
    missing: undefined,
    list: [1, { a: null }],
  });
  logger.warn("bare");
  assert.equal(writes.length, 2);
  assert.ok(writes.every((w) => w.endsWith("\n") && w.indexOf("\n") === w.length - 1), "one line each");
  const [first, second] = lines();
  assert.deepEqual(Object.keys(first), ["time", "level", "msg", "status", "note", "list"]);
  assert.equal(first.level, "info");
  assert.equal(first.msg, "request");
  assert.equal(first.note, 'a "quoted"\nline');
  assert.deepEqual(first.list, [1, { a: null }]);
  assert.ok(!Number.isNaN(Date.parse(first.time)));
  assert.deepEqual(Object.keys(second), ["time", "level", "msg"]);
  assert.equal(second.level, "warn");
});

Deno.test("log: buffered info lines are written together; a warning flushes them first, in order", async () => {
  const { logger, writes, lines } = capture(true);
  logger.info("a", { i: 1 });
  logger.info("b", {});
  assert.equal(writes.length, 0, "info waits for the burst");
  logger.error("c", { why: "x" });
  assert.deepEqual(lines().map((l) => l.msg), ["a", "b", "c"]);
  logger.info("d");
  await new Promise((r) => setTimeout(r, 30));
  assert.deepEqual(lines().map((l) => l.msg), ["a", "b", "c", "d"]);
  logger.info("e");
  logger.flush?.();
  assert.deepEqual(lines().map((l) => l.msg), ["a", "b", "c", "d", "e"]);
});

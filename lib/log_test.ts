import assert from "node:assert/strict";
import { createJsonLogger } from "./log.ts";
import { createScrubber } from "./secrets/scrubber.ts";

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

Deno.test("log: every secret of the scrubber is masked in every line, whole or in part, and the line stays JSON", () => {
  const key = "sk-live-Q2w3E4r5T6y7U8i9O0pA";
  const header = 'proxy"secret\\0123456789';
  let scrubber = createScrubber([key, header]);
  const writes: string[] = [];
  const logger = createJsonLogger((text) => writes.push(text), { scrubber: () => scrubber });
  logger.info("request", {
    error_code: key,
    attempt_log: [{ outcome: `bad key ${key.slice(0, 12)}…` }],
    note: `header ${header}`,
    status: 502,
  });
  logger.error(`unhandled ${key}`);
  const out = writes.join("");
  assert.ok(!out.includes(key.slice(2, 10)) && !out.includes(key.slice(-8)), out);
  assert.ok(!out.includes("secret\\\\0123"), out);
  const [first, second] = out.split("\n").filter(Boolean).map((l) => JSON.parse(l));
  assert.equal(first.error_code, "***");
  assert.deepEqual(first.attempt_log, [{ outcome: "bad key sk***…" }]);
  assert.equal(first.note, "header ***");
  assert.equal(first.status, 502);
  assert.equal(second.msg, "unhandled ***");
  // The source is read per line: a reload's new scrubber applies to the next line.
  scrubber = createScrubber(["another-secret-value"]);
  logger.info("x", { a: "another-secret-value", b: key });
  assert.deepEqual(JSON.parse(writes.at(-1)!).a, "***");
  // Lines without secrets are written as they are.
  logger.info("plain", { a: "nothing to hide" });
  assert.equal(JSON.parse(writes.at(-1)!).a, "nothing to hide");
});

Deno.test("log: a secret in a field's key is masked too, and the line stays JSON", () => {
  const key = "sk-live-Q2w3E4r5T6y7U8i9O0pA";
  const writes: string[] = [];
  const logger = createJsonLogger((text) => writes.push(text), { scrubber: () => createScrubber([key]) });
  // An upstream's detail keyed by what it refused, passed on as a field.
  logger.warn("upstream_detail", { detail: { [key]: "invalid", [`x-${key}`]: [{ [key]: 1 }] }, status: 401 });
  const out = writes.join("");
  assert.ok(!out.includes(key.slice(2, 10)) && !out.includes(key.slice(-8)), out);
  const line = JSON.parse(out);
  assert.deepEqual(line.detail, { "***": "invalid", "x-***": [{ "***": 1 }] });
  assert.equal(line.status, 401);
});

Deno.test("log: scrubWith swaps the scrubber source of a running logger", () => {
  const writes: string[] = [];
  const logger = createJsonLogger((text) => writes.push(text));
  logger.info("x", { a: "sk-live-Q2w3E4r5T6y7U8i9O0pA" });
  assert.match(writes[0], /sk-live/);
  logger.scrubWith?.(() => createScrubber(["sk-live-Q2w3E4r5T6y7U8i9O0pA"]));
  logger.info("x", { a: "sk-live-Q2w3E4r5T6y7U8i9O0pA" });
  assert.doesNotMatch(writes[1], /sk-live/);
});

// The line is only scrubbed when `test` finds a secret in the serialised fields, where `"` and `\` are escaped:
// a short password with either (no random-looking run to find instead) must be known in its escaped form too.
Deno.test("log: a short secret with a quote or a backslash, alone on its line, is masked", () => {
  const quoted = 'pa"ss1234';
  const slashed = "pa\\ss5678";
  const writes: string[] = [];
  const logger = createJsonLogger((text) => writes.push(text), {
    scrubber: () => createScrubber([quoted, slashed]),
  });
  logger.info("x", { note: `x ${quoted}` });
  logger.info("y", { note: `y ${slashed}` });
  const [first, second] = writes.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  assert.equal(first.note, "x ***");
  assert.equal(second.note, "y ***");
  assert.ok(!writes.join("").includes("ss1234") && !writes.join("").includes("ss5678"), writes.join(""));
});

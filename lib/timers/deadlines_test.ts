import assert from "node:assert/strict";
import { DeadlineQueue } from "./deadlines.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("deadlines: each armed timeout fires once, not before its time, in order within a duration", async () => {
  const queue = new DeadlineQueue();
  const fired: [string, number][] = [];
  const start = performance.now();
  const note = (name: string) => () => fired.push([name, performance.now() - start]);
  queue.arm(60, note("a60"));
  queue.arm(20, note("a20"));
  await sleep(10);
  queue.arm(20, note("b20")); // due at ~30 ms
  queue.arm(5, note("a5")); // due at ~15 ms: a shorter lane fires before the older, longer ones
  await sleep(90);
  assert.deepEqual(fired.map(([name]) => name), ["a5", "a20", "b20", "a60"]);
  const at = Object.fromEntries(fired);
  assert.ok(at.a5 >= 15 - 1 && at.a20 >= 20 - 1 && at.b20 >= 30 - 1 && at.a60 >= 60 - 1, JSON.stringify(at));
  assert.equal(queue.size, 0);
});

Deno.test("deadlines: a cancelled timeout never fires; cancelling everything drops every entry", async () => {
  const queue = new DeadlineQueue();
  let fired = 0;
  const d1 = queue.arm(30, () => fired++);
  const d2 = queue.arm(30, () => fired++);
  const d3 = queue.arm(30, () => fired++);
  d2.cancel();
  d2.cancel(); // twice is harmless
  assert.equal(queue.size, 2);
  await sleep(50);
  assert.equal(fired, 2);
  d1.cancel(); // after firing: harmless
  // All cancelled before firing: nothing is held (the lane's unref'd timer runs out without firing anything).
  const d4 = queue.arm(10_000, () => fired++);
  const d5 = queue.arm(10_000, () => fired++);
  d4.cancel();
  d5.cancel();
  d3.cancel();
  assert.equal(queue.size, 0);
  assert.equal(queue.held, 0);
  assert.equal(fired, 2);
});

Deno.test("deadlines: a cancelled head does not hold back the live timeout behind it", async () => {
  const queue = new DeadlineQueue();
  const fired: string[] = [];
  const head = queue.arm(20, () => fired.push("head"));
  await sleep(5);
  queue.arm(20, () => fired.push("next"));
  head.cancel();
  await sleep(40);
  assert.deepEqual(fired, ["next"]);
});

Deno.test("deadlines: many armed-and-cancelled timeouts around a live one are compacted, and it still fires", async () => {
  let now = 0;
  const queue = new DeadlineQueue(() => now);
  let fired = 0;
  // One slow stream waits while others re-arm and cancel the same idle timeout 100,000 times.
  queue.arm(50, () => fired++);
  for (let i = 0; i < 100_000; i++) queue.arm(50, () => fired++).cancel();
  assert.equal(queue.size, 1);
  assert.ok(queue.held < 5_000, `holds ${queue.held} entries`);
  now = 50;
  await sleep(60);
  assert.equal(fired, 1);
  assert.equal(queue.size, 0);
});

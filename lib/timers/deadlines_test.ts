import assert from "node:assert/strict";
import { waitFor } from "../../tests/helpers/usage.ts";
import { DeadlineQueue } from "./deadlines.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("deadlines: each armed timeout fires once, not before its time, in order within a duration", async () => {
  const queue = new DeadlineQueue();
  const fired: [string, number][] = [];
  const due: Record<string, number> = {};
  const arm = (name: string, ms: number) => {
    due[name] = performance.now() + ms;
    queue.arm(ms, () => fired.push([name, performance.now()]));
  };
  // Armed in one synchronous run, so the deadlines' order does not depend on how promptly this test is
  // scheduled: a shorter lane fires before the older, longer ones, and a lane fires in the order it was armed.
  arm("a60", 60);
  arm("a20", 20);
  arm("b20", 20); // the same lane, armed after a20 while its timer is already set
  arm("a5", 5);
  // Waited for, not slept for: how late a timer fires on a loaded machine is not this test's to control.
  await waitFor(() => fired.length >= 4);
  await sleep(20); // a second firing of any of them would come after its first
  assert.deepEqual(fired.map(([name]) => name), ["a5", "a20", "b20", "a60"]);
  for (const [name, at] of fired) assert.ok(at >= due[name] - 1, `${name} fired before its time`);
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
  await waitFor(() => fired >= 2);
  await sleep(20); // the cancelled one was due with them
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
  await waitFor(() => fired.length >= 1);
  await sleep(20); // the head was due before it
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

import assert from "node:assert/strict";
import { BACKGROUND_NICE, lowerThreadPriority } from "./thread_priority.ts";

Deno.test("lowerThreadPriority: sets the calling thread (0) to the background nice value when allowed", () => {
  const calls: [number, number][] = [];
  assert.equal(lowerThreadPriority((pid, nice) => calls.push([pid, nice]), () => true), true);
  assert.deepEqual(calls, [[0, BACKGROUND_NICE]]);
});

Deno.test("lowerThreadPriority: without the permission it does not try; a refusal is not an error", () => {
  const calls: number[] = [];
  assert.equal(lowerThreadPriority(() => calls.push(1), () => false), false);
  assert.deepEqual(calls, []);
  assert.equal(
    lowerThreadPriority(() => {
      throw new Error("EACCES");
    }, () => true),
    false,
  );
});

import assert from "node:assert/strict";
import { Channel, type MessagePortLike } from "./channel.ts";
import { onUnanswered, POOL_TIMING } from "./pool_timing.ts";

Deno.test("pool timing: a replacement starts at once after a worker that served, then waits longer, never over 10 s", () => {
  assert.equal(POOL_TIMING.restartDelayMs(0), 0);
  let before = 0;
  for (let trouble = 1; trouble <= 100; trouble++) {
    const delay = POOL_TIMING.restartDelayMs(trouble);
    assert.ok(delay >= before && delay > 0 && delay <= 10_000, `trouble ${trouble}: ${delay} ms`);
    before = delay;
  }
  assert.equal(POOL_TIMING.restartDelayMs(100), 10_000);
});

Deno.test("pool timing: an unanswered call is a stuck worker, but for one that waits on the primary: then a ping decides", async () => {
  const { port1, port2 } = new MessageChannel();
  let pong = true;
  let hung = 0;
  const primary: Channel = new Channel(port1 as unknown as MessagePortLike, {
    answerMs: 60_000,
    unanswered: (method) => onUnanswered(method, () => primary, () => hung++),
  });
  const worker = new Channel(port2 as unknown as MessagePortLike);
  // The ping is answered only while `pong`, else never (a stuck thread).
  worker.serve({ ping: () => pong ? true : new Promise(() => {}) });
  try {
    // Answered from the worker's own state: no answer is a stuck worker.
    onUnanswered("reload.prepare", () => primary, () => hung++);
    assert.equal(hung, 1);
    // A token change waits on the primary's store: the worker answers a ping, so it is not stuck.
    onUnanswered("tokens.changed", () => primary, () => hung++);
    await primary.call("ping");
    assert.equal(hung, 1);
    // It does not answer the ping either (its bound, here the shortest, passes): stuck.
    pong = false;
    await assert.rejects(primary.callWithin(1, "ping"), /no answer to ping/);
    assert.equal(hung, 2);
  } finally {
    primary.close(new Error("done"));
    port1.close();
    port2.close();
  }
});

import assert from "node:assert/strict";
import { Channel, type MessagePortLike } from "./channel.ts";

function pair(): [Channel, Channel, () => void] {
  const { port1, port2 } = new MessageChannel();
  const a = new Channel(port1 as unknown as MessagePortLike);
  const b = new Channel(port2 as unknown as MessagePortLike);
  return [a, b, () => {
    port1.close();
    port2.close();
  }];
}

Deno.test("channel: a call is answered with the other end's value, or rejects with its error by name", async () => {
  const [a, b, close] = pair();
  try {
    const notes: unknown[] = [];
    b.serve({
      add: (x: number, y: number) => x + y,
      later: async (x: string) => {
        await new Promise((r) => setTimeout(r, 1));
        return { echoed: x };
      },
      refuse: () => {
        const err = new Error("bad cursor") as Error & { param: string };
        err.name = "UsageQueryError";
        err.param = "after";
        throw err;
      },
      noted: (x: unknown) => notes.push(x),
    });
    assert.equal(await a.call<number>("add", 2, 3), 5);
    assert.deepEqual(await a.call("later", "hi"), { echoed: "hi" });
    await assert.rejects(a.call("refuse"), (err: Error & { param?: string }) => {
      assert.equal(err.name, "UsageQueryError");
      assert.equal(err.message, "bad cursor");
      assert.equal(err.param, "after");
      return true;
    });
    await assert.rejects(a.call("missing"), /no such method: missing/);
    a.note("noted", 1);
    a.note("noted", 2);
    assert.equal(await a.call<number>("add", 0, 0), 0); // answered after the notes, in order
    assert.deepEqual(notes, [1, 2]);
    assert.equal(a.waiting, 0);
  } finally {
    close();
  }
});

Deno.test("channel: closing rejects the calls still waiting and every later one", async () => {
  const [a, b, close] = pair();
  try {
    b.serve({ never: () => new Promise(() => {}) });
    const waiting = a.call("never");
    a.close(new Error("worker 0 died"));
    await assert.rejects(waiting, /worker 0 died/);
    await assert.rejects(a.call("never"), /worker 0 died/);
    a.note("never"); // dropped, not thrown
  } finally {
    close();
  }
});

Deno.test("channel: a call left unanswered past its bound is told to `unanswered`, then rejects; answered ones are not", async () => {
  const { port1, port2 } = new MessageChannel();
  const told: string[] = [];
  const a = new Channel(port1 as unknown as MessagePortLike, {
    answerMs: 60_000,
    unanswered: (method) => told.push(method),
  });
  const b = new Channel(port2 as unknown as MessagePortLike);
  try {
    let answer = (_v: string) => {};
    b.serve({
      never: () => new Promise(() => {}),
      gated: () => new Promise<string>((r) => answer = r),
      quick: () => "ok",
    });
    // Answered within the channel's bound: nothing told, and no timer left behind (the test's sanitizer checks).
    assert.equal(await a.call("quick"), "ok");
    const gated = a.call<string>("gated");
    await new Promise((r) => setTimeout(r, 0));
    answer("late but in time");
    assert.equal(await gated, "late but in time");
    // A bound of its own, shorter: unanswered, told, then rejected.
    await assert.rejects(a.callWithin(1, "never"), (err: Error) => {
      assert.equal(err.name, "NoAnswerError");
      assert.match(err.message, /no answer to never within 1 ms/);
      assert.deepEqual(told, ["never"]);
      return true;
    });
    // A call waiting when the channel closes rejects with the reason, its timer cleared.
    const waiting = a.call("never");
    a.close(new Error("worker 0 died"));
    await assert.rejects(waiting, /worker 0 died/);
    assert.deepEqual(told, ["never"]);
  } finally {
    port1.close();
    port2.close();
  }
});

import assert from "node:assert/strict";
import type { WebSocketPeer } from "../runtime/types.ts";
import { ClientGoneError } from "../errors.ts";
import { CLOSE, HIGH_WATER_BYTES, serialSession, type SerialSessionOptions } from "./serial_session.ts";

/** A peer that records what is sent and how it was closed. */
function fakePeer() {
  const sent: string[] = [];
  const closes: [number, string][] = [];
  const peer: WebSocketPeer & { buffered: number } = {
    buffered: 0,
    send: (text) => void sent.push(text),
    close: (code, reason) => void closes.push([code, reason]),
    get bufferedAmount() {
      return this.buffered;
    },
  };
  return { peer, sent, closes };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

/** The close frame a peer gets for `why`. */
const frame = (why: { close: number; reason: string }) => [why.close, why.reason];

/** What a session's client gets when the connection has lasted its time. */
const DURATION_EVENT = '{"type":"error","lasted":true}';

/** Resolves once `done()` holds, polled; fails after `ms`. */
async function until(done: () => boolean, ms = 5_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!done()) {
    if (performance.now() > deadline) throw new Error("the condition never held");
    await new Promise((r) => setTimeout(r, 2));
  }
}

function session(answer: SerialSessionOptions["answer"], extra: Partial<SerialSessionOptions> = {}) {
  return serialSession({
    maxMessageBytes: 100,
    maxQueued: 2,
    idleTimeoutMs: 60_000,
    sendTimeoutMs: 60_000,
    maxDurationMs: 60_000,
    durationGraceMs: 60_000,
    durationEvent: DURATION_EVENT,
    received: (message) => message,
    answer,
    dropped: () => {},
    ...extra,
  });
}

Deno.test("serialSession: messages are answered one at a time, in order", async () => {
  const { peer, sent, closes } = fakePeer();
  const gates: PromiseWithResolvers<void>[] = [];
  const s = session(async (message, send) => {
    const gate = Promise.withResolvers<void>();
    gates.push(gate);
    await send(`start ${message}`);
    await gate.promise;
    await send(`end ${message}`);
  });
  s.open(peer);
  s.message("a");
  s.message("b");
  await tick();
  assert.deepEqual(sent, ["start a"]);
  gates[0].resolve();
  await tick();
  assert.deepEqual(sent, ["start a", "end a", "start b"]);
  gates[1].resolve();
  await tick();
  assert.deepEqual(sent, ["start a", "end a", "start b", "end b"]);
  s.closed(1000, "");
  assert.deepEqual(closes, []);
});

Deno.test("serialSession: one message more than may wait closes the connection with 1008, ending the answer in progress", async () => {
  const { peer, closes } = fakePeer();
  let signal: AbortSignal | undefined;
  const s = session((_m, _send, sig) => {
    signal = sig;
    return new Promise(() => {});
  });
  s.open(peer);
  for (const m of ["running", "w1", "w2"]) s.message(m);
  await tick();
  assert.deepEqual(closes, []);
  assert.equal(signal?.aborted, false);
  s.message("w3");
  assert.deepEqual(closes, [frame(CLOSE.queueFull)]);
  // Aborted now: the edge may tell the session the connection is over only once the client has answered.
  assert.equal(signal?.aborted, true);
  s.closed(1008, "");
});

Deno.test("serialSession: the client going away aborts the answer in progress", async () => {
  const { peer } = fakePeer();
  let signal: AbortSignal | undefined;
  const s = session((_m, _send, sig) => {
    signal = sig;
    return new Promise((r) => sig.addEventListener("abort", () => r()));
  });
  s.open(peer);
  s.message("x");
  await tick();
  assert.equal(signal?.aborted, false);
  s.closed(1006, "");
  assert.equal(signal?.aborted, true);
});

Deno.test("serialSession: an idle connection is closed after the idle time, not while answering", async () => {
  const { peer, closes } = fakePeer();
  const gate = Promise.withResolvers<void>();
  const s = session(() => gate.promise, { idleTimeoutMs: 30 });
  s.open(peer);
  s.message("x");
  await new Promise((r) => setTimeout(r, 60));
  assert.deepEqual(closes, []);
  gate.resolve();
  await new Promise((r) => setTimeout(r, 60));
  assert.deepEqual(closes, [frame(CLOSE.idle)]);
  s.closed(1000, "");
});

Deno.test("serialSession: shutdown closes at once when idle, after the answer in progress otherwise", async () => {
  const idle = fakePeer();
  const a = session(() => Promise.resolve());
  a.open(idle.peer);
  a.shutdown();
  assert.deepEqual(idle.closes, [frame(CLOSE.shutdown)]);

  const busy = fakePeer();
  const gate = Promise.withResolvers<void>();
  const b = session(() => gate.promise);
  b.open(busy.peer);
  b.message("x");
  b.message("dropped");
  await tick();
  b.shutdown();
  assert.deepEqual(busy.closes, []);
  gate.resolve();
  await tick();
  assert.deepEqual(busy.closes, [frame(CLOSE.shutdown)]);
});

Deno.test("serialSession: a failing answer closes with 1011; sending waits for a slow reader", async () => {
  const failing = fakePeer();
  const a = session(() => Promise.reject(new Error("broken")));
  a.open(failing.peer);
  a.message("x");
  await tick();
  assert.deepEqual(failing.closes, [frame(CLOSE.failed)]);

  const slow = fakePeer();
  let sentBoth = false;
  const b = session(async (_m, send) => {
    await send("one");
    await send("two");
    sentBoth = true;
  });
  b.open(slow.peer);
  slow.peer.buffered = HIGH_WATER_BYTES + 1;
  b.message("x");
  await new Promise((r) => setTimeout(r, 30));
  assert.deepEqual(slow.sent, ["one"]);
  slow.peer.buffered = 0;
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(sentBoth, true);
  b.closed(1000, "");
});

Deno.test("serialSession: a client that takes none of the output for sendTimeoutMs has its answer aborted, closed with 1008", async () => {
  const stalled = fakePeer();
  let signal: AbortSignal | undefined;
  const a = session(async (_m, send, sig) => {
    signal = sig;
    await send("one");
    await send("two");
  }, { sendTimeoutMs: 30 });
  a.open(stalled.peer);
  stalled.peer.buffered = HIGH_WATER_BYTES + 1;
  a.message("x");
  await new Promise((r) => setTimeout(r, 150));
  assert.equal(signal?.aborted, true);
  assert.deepEqual(stalled.closes, [frame(CLOSE.stalled)]);
  assert.deepEqual(stalled.sent, ["one"]);

  // One that takes some of it, however slowly, is waited for.
  const slow = fakePeer();
  const b = session(async (_m, send, sig) => {
    signal = sig;
    await send("one");
  }, { sendTimeoutMs: 200 });
  b.open(slow.peer);
  slow.peer.buffered = HIGH_WATER_BYTES + 100;
  b.message("x");
  // Longer in all than the deadline, a bit at a time.
  for (let i = 0; i < 15; i++) {
    await new Promise((r) => setTimeout(r, 20));
    slow.peer.buffered -= 5;
  }
  assert.equal(signal?.aborted, false);
  assert.deepEqual(slow.closes, []);
  slow.peer.buffered = 0;
  b.closed(1000, "");
});

Deno.test("serialSession: every message dropped unanswered is given to dropped, in order, with why", async () => {
  type Drop = [string | Uint8Array, number, string | null];
  const run = async (ending: (s: ReturnType<typeof session>) => void) => {
    const drops: Drop[] = [];
    let aborted: unknown;
    const s = session((_m, _send, sig) =>
      new Promise((r) =>
        sig.addEventListener("abort", () => {
          aborted = sig.reason;
          r();
        })
      ), { dropped: (m, err) => void drops.push([m, err.status, err.code]) });
    s.open(fakePeer().peer);
    s.message("running");
    s.message("w1");
    s.message("w2");
    await tick();
    ending(s);
    return { drops, aborted: aborted as ClientGoneError | undefined };
  };
  // Too many waiting: those waiting, then the one too many; the answer in progress says so too.
  const full = await run((s) => s.message("w3"));
  assert.deepEqual(full.drops, [["w1", 429, "websocket_queue_full"], ["w2", 429, "websocket_queue_full"], [
    "w3",
    429,
    "websocket_queue_full",
  ]]);
  assert.ok(full.aborted instanceof ClientGoneError);
  assert.equal(full.aborted.code, "websocket_queue_full");
  // The client leaving.
  const gone = await run((s) => s.closed(1001, ""));
  assert.deepEqual(gone.drops, [["w1", 499, "client_closed_request"], ["w2", 499, "client_closed_request"]]);
  assert.equal(gone.aborted?.code, "client_closed_request");
  // The edge refusing a message too big.
  const big = await run((s) => s.closed(1009, ""));
  assert.deepEqual(big.drops.map((d) => d[2]), [
    "websocket_message_too_large",
    "websocket_message_too_large",
  ]);
  assert.equal(big.aborted?.code, "websocket_message_too_large");
  // Shutdown: the answer in progress may finish; a message that comes meanwhile is dropped and says so.
  const shutdown = await run((s) => {
    s.shutdown();
    s.message("late");
  });
  assert.deepEqual(shutdown.drops, [["w1", 503, "server_shutdown"], ["w2", 503, "server_shutdown"], [
    "late",
    503,
    "server_shutdown",
  ]]);
  assert.equal(shutdown.aborted, undefined);
});

Deno.test("serialSession: a client that is never idle is closed at maxDurationMs, after the duration event", async () => {
  const { peer, sent, closes } = fakePeer();
  const told: boolean[] = [];
  let answered = 0;
  const s = session(async (message, send) => {
    await send(`answer ${message}`);
    answered++;
  }, { idleTimeoutMs: 40, maxDurationMs: 150, onMaxDuration: (answering) => void told.push(answering) });
  s.open(peer);
  // A message more often than the idle time, for as long as the connection is open.
  let n = 0;
  while (closes.length === 0) {
    s.message(String(++n));
    await until(() => answered === n || closes.length > 0);
    await new Promise((r) => setTimeout(r, 5));
    assert.ok(n < 10_000, "the connection was never closed");
  }
  assert.deepEqual(closes, [frame(CLOSE.maxDuration)]);
  assert.equal(sent.at(-1), DURATION_EVENT);
  assert.equal(sent.filter((t) => t === DURATION_EVENT).length, 1);
  assert.equal(told.length, 1);
  s.closed(1000, "");
});

Deno.test("serialSession: the answer in progress at maxDurationMs is let finish; those waiting are dropped with why", async () => {
  const { peer, sent, closes } = fakePeer();
  const drops: [string | Uint8Array, number, string | null][] = [];
  const told: boolean[] = [];
  const gate = Promise.withResolvers<void>();
  let signal: AbortSignal | undefined;
  const s = session(async (message, send, sig) => {
    signal = sig;
    await send(`start ${message}`);
    await gate.promise;
    await send(`end ${message}`);
  }, {
    maxDurationMs: 20,
    onMaxDuration: (answering) => void told.push(answering),
    dropped: (m, err) => void drops.push([m, err.status, err.code]),
  });
  s.open(peer);
  s.message("a");
  s.message("b");
  await until(() => told.length === 1);
  assert.deepEqual(told, [true]);
  // Sent after the limit, while the answer is finishing: it waits, and is dropped with the others.
  s.message("c");
  assert.deepEqual(closes, []);
  assert.equal(signal?.aborted, false);
  gate.resolve();
  await until(() => closes.length > 0);
  assert.deepEqual(sent, ["start a", "end a", DURATION_EVENT]);
  assert.deepEqual(closes, [frame(CLOSE.maxDuration)]);
  assert.deepEqual(drops, [["b", 400, "websocket_connection_limit_reached"], [
    "c",
    400,
    "websocket_connection_limit_reached",
  ]]);
  assert.equal(signal?.aborted, false, "the finished answer was not cut");
  s.closed(1000, "");
});

Deno.test("serialSession: an answer still going after the grace is ended, then the duration event and the close", async () => {
  const { peer, sent, closes } = fakePeer();
  let signal: AbortSignal | undefined;
  const s = session(async (message, send, sig) => {
    signal = sig;
    await send(`start ${message}`);
    await new Promise((r) => sig.addEventListener("abort", r));
    await send("never sent");
  }, { maxDurationMs: 20, durationGraceMs: 30 });
  s.open(peer);
  s.message("a");
  await until(() => closes.length > 0);
  assert.ok(signal?.reason instanceof ClientGoneError);
  assert.equal(signal.reason.code, "websocket_connection_limit_reached");
  await tick();
  assert.deepEqual(sent, ["start a", DURATION_EVENT]);
  assert.deepEqual(closes, [frame(CLOSE.maxDuration)]);
  s.closed(1000, "");
});

Deno.test("serialSession: each message is received as it arrives, in order, before its turn; answer and dropped get that", async () => {
  const received: string[] = [];
  const answered: string[] = [];
  const dropped: string[] = [];
  const gate = Promise.withResolvers<void>();
  const s = serialSession<string>({
    maxMessageBytes: 100,
    maxQueued: 2,
    idleTimeoutMs: 60_000,
    sendTimeoutMs: 60_000,
    maxDurationMs: 60_000,
    durationGraceMs: 60_000,
    durationEvent: DURATION_EVENT,
    received: (message) => {
      received.push(String(message));
      return `#${received.length} ${message}`;
    },
    answer: async (message) => {
      answered.push(message);
      await gate.promise;
    },
    dropped: (message) => void dropped.push(message),
  });
  s.open(fakePeer().peer);
  s.message("a");
  s.message("b");
  s.message("c");
  // All three known at once, though only the first is being answered.
  assert.deepEqual(received, ["a", "b", "c"]);
  await tick();
  assert.deepEqual(answered, ["#1 a"]);
  s.shutdown();
  s.message("late");
  assert.deepEqual(dropped, ["#2 b", "#3 c", "#4 late"]);
  gate.resolve();
});

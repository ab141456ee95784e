import assert from "node:assert/strict";
import { bunGlobal, bunRuntime, type BunServer, shutdownServer, writeAllSync } from "./bun.ts";
import {
  asksToClose,
  idlePhases,
  leavesBodyUnread,
  repeatsContentLength,
  saidLast,
  withKeepAliveTimer,
} from "./bun_connection.ts";
import { currentRuntime } from "./mod.ts";
import { streamedAnswer } from "./types.ts";
import { backstop } from "../../tests/helpers/backstop.ts";

function errno(code: string): Error {
  return Object.assign(new Error(code), { code });
}

Deno.test("writeAllSync: partial writes are continued until every byte is out", () => {
  const written: number[] = [];
  writeAllSync(1, "hello, world", (_fd, bytes) => {
    const n = Math.min(5, bytes.byteLength);
    written.push(...bytes.subarray(0, n));
    return n;
  });
  assert.equal(new TextDecoder().decode(new Uint8Array(written)), "hello, world");
});

Deno.test("writeAllSync: EAGAIN is retried, EPIPE drops the text instead of throwing", () => {
  let calls = 0;
  const out: string[] = [];
  writeAllSync(1, "line\n", (_fd, bytes) => {
    if (calls++ < 2) throw errno("EAGAIN");
    out.push(new TextDecoder().decode(bytes));
    return bytes.byteLength;
  });
  assert.deepEqual(out, ["line\n"]);
  assert.equal(calls, 3);

  let pipeCalls = 0;
  writeAllSync(1, "nobody reads this", () => {
    pipeCalls++;
    throw errno("EPIPE");
  });
  assert.equal(pipeCalls, 1);
});

/** A server whose graceful stop resolves after `drainMs` (never, if null). */
function fakeServer(drainMs: number | null) {
  const calls: boolean[] = [];
  const server: BunServer = {
    hostname: "127.0.0.1",
    port: 1,
    pendingRequests: 0,
    timeout() {},
    upgrade: () => false,
    stop(force = false) {
      calls.push(force);
      if (force || drainMs === null) return force ? Promise.resolve() : new Promise(() => {});
      return new Promise((r) => setTimeout(r, drainMs));
    },
  };
  return { server, calls };
}

Deno.test("shutdownServer: a server that drains in time is never force-closed", async () => {
  const { server, calls } = fakeServer(10);
  await shutdownServer(server, 1_000);
  assert.deepEqual(calls, [false]);
});

Deno.test("shutdownServer: after the grace period the open connections are closed", async () => {
  // The server never drains: the end of the grace period (a promise the test settles) is the only way out.
  const { server, calls } = fakeServer(null);
  const graceOver = Promise.withResolvers<void>();
  let stopped = false;
  const stopping = shutdownServer(server, graceOver.promise).then(() => stopped = true);
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(
    [stopped, calls],
    [false, [false]],
    "a graceful stop, and nothing forced before the deadline",
  );
  graceOver.resolve();
  await stopping;
  assert.deepEqual(calls, [false, true], "then the open connections are closed");

  // A grace period in milliseconds ends alike: this server never drains, so returning at all is its deadline.
  const again = fakeServer(null);
  await backstop(shutdownServer(again.server, 50), "a shutdown whose server never drains");
  assert.deepEqual(again.calls, [false, true]);
});

Deno.test("runtime edges: Deno picks the Deno edge; the Bun edge loads without Bun", async () => {
  assert.equal((await currentRuntime()).name, "deno");
  assert.equal(bunGlobal(), undefined);
  assert.equal(bunRuntime.name, "bun");
  assert.equal(bunRuntime.version, "unknown");
});

Deno.test("idlePhases: Bun's idle timer gets whole seconds between 1 and 255", () => {
  const limits = {
    headerTimeoutMs: 300,
    bodyTimeoutMs: 60_000,
    keepAliveTimeoutMs: 65_000,
    sendTimeoutMs: 60_000,
    maxConnections: 1,
  };
  assert.deepEqual(idlePhases(limits), { head: 1, keepAlive: 65 });
  assert.deepEqual(idlePhases({ ...limits, headerTimeoutMs: 10_500, keepAliveTimeoutMs: 3_600_000 }), {
    head: 11,
    keepAlive: 255,
  });
});

Deno.test("withKeepAliveTimer: a finished body restores the timer at once, a stream after its last chunk", async () => {
  let restored = 0;
  const plain = new Response("{}", { headers: { "content-type": "application/json" } });
  assert.equal(withKeepAliveTimer(plain, () => restored++, 60_000), plain);
  assert.equal(restored, 1);

  restored = 0;
  const chunks = ["data: 1\n\n", "data: 2\n\n"];
  const sse = new Response(
    new ReadableStream<Uint8Array>({
      pull(c) {
        const next = chunks.shift();
        if (next === undefined) c.close();
        else c.enqueue(new TextEncoder().encode(next));
      },
    }),
    { status: 200, headers: { "content-type": "text/event-stream", "x-request-id": "r1" } },
  );
  const wrapped = withKeepAliveTimer(sse, () => restored++, 60_000);
  assert.equal(wrapped.headers.get("x-request-id"), "r1");
  const reader = wrapped.body!.getReader();
  assert.equal(new TextDecoder().decode((await reader.read()).value), "data: 1\n\n");
  assert.equal(restored, 0, "not while the stream is still being written");
  await reader.read();
  assert.ok((await reader.read()).done);
  assert.equal(restored, 1);
});

Deno.test("withKeepAliveTimer: a stream whose client takes nothing for sendTimeoutMs is cancelled and fails", async () => {
  let cancelled: unknown;
  const source = new Response(
    new ReadableStream<Uint8Array>({
      pull: (c) => c.enqueue(new TextEncoder().encode("data: more\n\n")),
      cancel: (reason) => void (cancelled = reason),
    }, { highWaterMark: 0 }),
    { headers: { "content-type": "application/json" } },
  );
  // Marked by the runner as a stream (Gemini's JSON array), so watched though it is not SSE.
  const wrapped = withKeepAliveTimer(streamedAnswer(source), () => {}, 50);
  const reader = wrapped.body!.getReader();
  await reader.read();
  // The client (Bun's write) asks for nothing more: after 50 ms the stream is given up.
  await new Promise((r) => setTimeout(r, 120));
  await assert.rejects(reader.read(), (err: Error) => err.name === "TimeoutError");
  assert.equal((cancelled as Error).name, "TimeoutError", "the source (the answer's stream) was cancelled");

  // One that keeps reading is never cut, however long the whole stream takes.
  let sent = 0;
  const steady = withKeepAliveTimer(
    streamedAnswer(
      new Response(
        new ReadableStream<Uint8Array>({
          async pull(c) {
            if (sent++ === 6) return c.close();
            await new Promise((r) => setTimeout(r, 20));
            c.enqueue(new Uint8Array([1]));
          },
        }, { highWaterMark: 0 }),
      ),
    ),
    () => {},
    50,
  );
  let bytes = 0;
  for await (const chunk of steady.body!) bytes += chunk.byteLength;
  assert.equal(bytes, 6);
});

Deno.test("asksToClose: `close` anywhere in the Connection list, in any case; saidLast says so even on immutable headers", async () => {
  const asking = (connection?: string) =>
    asksToClose(new Request("http://gw/", connection === undefined ? {} : { headers: { connection } }));
  assert.deepEqual(
    [asking(), asking("keep-alive"), asking("Close"), asking("keep-alive, close"), asking("closed")],
    [false, false, true, true, false],
  );
  const mutable = saidLast(new Response("{}", { status: 201, headers: { "x-a": "1" } }));
  assert.equal(mutable.headers.get("connection"), "close");
  // A redirect's headers are immutable: the answer is rebuilt with its status, headers and body.
  const rebuilt = saidLast(Response.redirect("http://gw/elsewhere", 307));
  assert.equal(rebuilt.status, 307);
  assert.equal(rebuilt.headers.get("location"), "http://gw/elsewhere");
  assert.equal(rebuilt.headers.get("connection"), "close");
  assert.equal(await rebuilt.text(), "");
});

Deno.test("bun edge: an answer that leaves the body unread is the connection's last; one after a read body is not", async () => {
  const post = (headers: Record<string, string>, body?: string) =>
    new Request("http://x/v1/chat/completions", { method: "POST", headers, body });
  assert.equal(leavesBodyUnread(post({ "content-length": "100" }, "x"), "100", 401), true);
  assert.equal(leavesBodyUnread(post({ "transfer-encoding": "chunked" }, "x"), null, 401), true);
  assert.equal(leavesBodyUnread(new Request("http://x/v1/models"), null, 401), false);
  assert.equal(leavesBodyUnread(post({}), "0", 401), false);
  const read = post({ "content-length": "1" }, "x");
  await read.text();
  assert.equal(leavesBodyUnread(read, "1", 200), false);
  // Refused part-way: too large, or stalled.
  assert.equal(leavesBodyUnread(read, "1", 413), true);
  assert.equal(leavesBodyUnread(read, "1", 408), true);
});

Deno.test("bun edge: repeated Content-Length headers (joined with a comma) are told apart from one", () => {
  assert.equal(repeatsContentLength("40, 40"), true);
  assert.equal(repeatsContentLength("40"), false);
  assert.equal(repeatsContentLength(null), false);
});

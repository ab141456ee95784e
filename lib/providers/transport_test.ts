import assert from "node:assert/strict";
import type { ResolvedTarget } from "../config/types.ts";
import { sendUpstream, STREAM_READ_BYTES } from "./transport.ts";

/** A local upstream that streams `parts` with a pause between them, then ends. */
function streamingUpstream(parts: Uint8Array[]) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    let i = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (i === parts.length) return controller.close();
        await new Promise((r) => setTimeout(r, 5));
        controller.enqueue(parts[i++]);
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  return { url: `http://127.0.0.1:${server.addr.port}/`, stop: () => server.shutdown() };
}

const call = {
  target: {
    provider: "test",
    model: "m",
    timeouts: { firstByteMs: 5_000, idleMs: 5_000, totalMs: 10_000 },
  } as unknown as ResolvedTarget,
  signal: new AbortController().signal,
  requestId: "req_test",
};

Deno.test("transport: a streamed body arrives whole, in reads no bigger than STREAM_READ_BYTES on Deno", async () => {
  // A small event, then one ten times the read size, then another small one.
  const big = new Uint8Array(STREAM_READ_BYTES * 10).map((_, i) => 97 + (i % 26));
  const parts = [
    new TextEncoder().encode("data: one\n\n"),
    big,
    new TextEncoder().encode("\n\ndata: two\n\n"),
  ];
  const upstream = streamingUpstream(parts);
  try {
    const res = await sendUpstream({ url: upstream.url, method: "GET", headers: {} }, call);
    const reader = res.body.getReader();
    const received: Uint8Array[] = [];
    for (let r = await reader.read(); !r.done; r = await reader.read()) received.push(r.value);
    const all = new Uint8Array(received.reduce((n, c) => n + c.byteLength, 0));
    let offset = 0;
    for (const c of received) {
      all.set(c, offset);
      offset += c.byteLength;
    }
    const expected = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
    offset = 0;
    for (const p of parts) {
      expected.set(p, offset);
      offset += p.byteLength;
    }
    assert.deepEqual(all, expected);
    // Deno's fetch body is a byte stream: each read used (and keeps alive) a buffer of our size, not 64 KiB.
    for (const c of received) assert.ok(c.buffer.byteLength <= STREAM_READ_BYTES, `${c.buffer.byteLength}`);
    assert.ok(received.length >= 10, `the big event spans reads (${received.length} reads)`);
  } finally {
    await upstream.stop();
  }
});

import assert from "node:assert/strict";
import type { ResolvedTarget } from "../../config/types.ts";
import { GatewayError } from "../../errors.ts";
import { ClientGoneError } from "../../errors.ts";
import { sendUpstream, STREAM_READ_MAX_BYTES, STREAM_WAIT_BYTES } from "./transport.ts";

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

Deno.test("transport: a streamed body arrives whole; reads grow for a long event and shrink again to wait", async () => {
  // A small event, one of 40 KiB, another small one, then one of 3,000 bytes after a pause.
  const big = new Uint8Array(40 * 1024).map((_, i) => 97 + (i % 26));
  const medium = new Uint8Array(3000).fill(77); // "M"
  const parts = [
    new TextEncoder().encode("data: one\n\n"),
    big,
    new TextEncoder().encode("\n\ndata: two\n\n"),
    medium,
  ];
  const upstream = streamingUpstream(parts);
  try {
    const res = await sendUpstream({ url: upstream.url, method: "GET", headers: {} }, call);
    const reader = res.body;
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
    // Deno's fetch body is a byte stream: each read took a buffer of our size, never 64 KiB.
    for (const c of received) assert.ok(c.byteLength <= STREAM_READ_MAX_BYTES, `${c.byteLength}`);
    const bigReads = received.filter((c) => c.includes(97 + 5)).length;
    assert.ok(bigReads >= 3, `the long event spans reads (${bigReads})`);
    assert.ok(bigReads < (40 * 1024) / STREAM_WAIT_BYTES / 2, `and the reads grew (${bigReads} reads)`);
    // The 3,000 bytes came after a pause, to a read made with the small buffer again.
    const firstMedium = received.find((c) => c[0] === 77);
    assert.ok(
      firstMedium !== undefined && firstMedium.byteLength <= STREAM_WAIT_BYTES,
      `${firstMedium?.byteLength}`,
    );
  } finally {
    await upstream.stop();
  }
});

/** A local upstream answering every request with `body` and `headers`. */
function wholeUpstream(body: () => BodyInit, headers: Record<string, string> = {}) {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response(body(), { headers }),
  );
  return { url: `http://127.0.0.1:${server.addr.port}/`, stop: () => server.shutdown() };
}

const limited = (maxBodyBytes: number) => ({
  ...call,
  target: { ...call.target, limits: { maxBodyBytes, maxEventBytes: 1024 } } as ResolvedTarget,
});

Deno.test("transport: a whole answer over max_body_size is a 502 upstream_response_too_large", async () => {
  let sent = 0;
  // An endless body: without the bound the gateway would buffer until it runs out of memory.
  const upstream = wholeUpstream(() =>
    new ReadableStream({
      pull(controller) {
        sent += 65536;
        controller.enqueue(new Uint8Array(65536).fill(97));
        if (sent > 64 * 1024 * 1024) controller.close();
      },
    })
  );
  try {
    const res = await sendUpstream({ url: upstream.url, method: "GET", headers: {} }, limited(1024 * 1024));
    await assert.rejects(res.text(), (err: Error & { status?: number; code?: string }) => {
      assert.equal(err.status, 502);
      assert.equal(err.code, "upstream_response_too_large");
      assert.match(err.message, /1048576 bytes/);
      return true;
    });
    assert.ok(sent < 16 * 1024 * 1024, `the upstream was aborted early (${sent} bytes sent)`);
  } finally {
    await upstream.stop();
  }
});

Deno.test("transport: the bound counts decompressed bytes (a small gzip bomb stops at the limit)", async () => {
  const raw = new Uint8Array(8 * 1024 * 1024).fill(32);
  const gz = new Uint8Array(
    await new Response(new Blob([raw]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer(),
  );
  assert.ok(gz.byteLength < 64 * 1024, "the compressed body is small");
  const upstream = wholeUpstream(() => gz.slice(), { "content-encoding": "gzip" });
  try {
    const res = await sendUpstream({ url: upstream.url, method: "GET", headers: {} }, limited(1024 * 1024));
    await assert.rejects(res.text(), { status: 502, code: "upstream_response_too_large" });
    // Under the limit the same body is read whole, decompressed.
    const ok = await sendUpstream(
      { url: upstream.url, method: "GET", headers: {} },
      limited(16 * 1024 * 1024),
    );
    assert.equal((await ok.text()).length, raw.length);
  } finally {
    await upstream.stop();
  }
});

Deno.test("transport: a stream past max_stream_size ends with a 502 upstream_response_too_large", async () => {
  let sent = 0;
  // An endless stream: the limit, not its end, stops it.
  const upstream = wholeUpstream(() =>
    new ReadableStream({
      async pull(controller) {
        await new Promise((r) => setTimeout(r, 1));
        sent += 16384;
        controller.enqueue(new Uint8Array(16384).fill(97));
        if (sent > 64 * 1024 * 1024) controller.close();
      },
    }), { "content-type": "text/event-stream" });
  const streamLimited = (maxStreamBytes?: number) => ({
    ...call,
    target: {
      ...call.target,
      limits: { maxBodyBytes: 1024, maxEventBytes: 1024, maxStreamBytes },
    } as ResolvedTarget,
  });
  try {
    const res = await sendUpstream(
      { url: upstream.url, method: "GET", headers: {} },
      streamLimited(256 * 1024),
    );
    let read = 0;
    await assert.rejects(
      (async () => {
        for (let r = await res.body.read(); !r.done; r = await res.body.read()) read += r.value.byteLength;
      })(),
      (err: Error & { status?: number; code?: string }) => {
        assert.equal(err.status, 502);
        assert.equal(err.code, "upstream_response_too_large");
        assert.match(
          err.message,
          /Provider "test" sent a stream larger than the gateway's limit of 262144 bytes/,
        );
        return true;
      },
    );
    assert.ok(read <= 256 * 1024, `no more than the limit was passed on (${read})`);
    // Without the limit (max_stream_size unset) the same stream is read on.
    sent = 0;
    const unlimited = await sendUpstream({ url: upstream.url, method: "GET", headers: {} }, streamLimited());
    for (read = 0; read <= 1024 * 1024;) read += (await unlimited.body.read()).value?.byteLength ?? Infinity;
    assert.ok(Number.isFinite(read));
    await unlimited.body.cancel();
  } finally {
    await upstream.stop();
  }
});

Deno.test("transport: an abort whose reason is a GatewayError fails the call with that error", async () => {
  const upstream = wholeUpstream(() => "late");
  const controller = new AbortController();
  const shutdown = new GatewayError(503, "The gateway is shutting down.", { code: "server_shutting_down" });
  try {
    controller.abort(shutdown);
    await assert.rejects(
      sendUpstream({ url: upstream.url, method: "GET", headers: {} }, { ...call, signal: controller.signal }),
      (err) => err === shutdown,
    );
    const gone = new AbortController();
    gone.abort();
    await assert.rejects(
      sendUpstream({ url: upstream.url, method: "GET", headers: {} }, { ...call, signal: gone.signal }),
      ClientGoneError,
    );
  } finally {
    await upstream.stop();
  }
});

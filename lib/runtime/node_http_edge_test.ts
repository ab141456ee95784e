import assert from "node:assert/strict";
import { checkingInterval, serveNodeHttp } from "./node_http_edge.ts";
import { type ClientRequest, DEFAULT_CONNECTION_LIMITS, type RunningServer } from "./types.ts";

const encoder = new TextEncoder();

async function withEdge(
  handler: (request: ClientRequest) => Promise<Response>,
  fn: (url: string, server: RunningServer) => Promise<void>,
) {
  const server = await serveNodeHttp({ hostname: "127.0.0.1", port: 0, handler });
  try {
    await fn(`http://127.0.0.1:${server.port}`, server);
  } finally {
    await server.shutdown(1_000);
  }
}

Deno.test("checkingInterval: a quarter of the shortest deadline, between 25 ms and 1 s", () => {
  assert.equal(checkingInterval(DEFAULT_CONNECTION_LIMITS), 1_000);
  assert.equal(checkingInterval({ ...DEFAULT_CONNECTION_LIMITS, headerTimeoutMs: 300 }), 75);
  assert.equal(checkingInterval({ ...DEFAULT_CONNECTION_LIMITS, bodyTimeoutMs: 10 }), 25);
});

Deno.test("node edge: SSE chunks reach the client one by one, not held back for the next", async () => {
  const gate = Promise.withResolvers<void>();
  await withEdge(() => {
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(encoder.encode("data: 1\n\n"));
        await gate.promise;
        controller.enqueue(encoder.encode("data: 2\n\n"));
        controller.close();
      },
    });
    return Promise.resolve(new Response(body, { headers: { "content-type": "text/event-stream" } }));
  }, async (url) => {
    const response = await fetch(url);
    assert.equal(response.headers.get("content-type"), "text/event-stream");
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    assert.equal(
      (await reader.read()).value,
      "data: 1\n\n",
      "the first chunk arrives while the second waits",
    );
    gate.resolve();
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += r.value;
    assert.equal(rest, "data: 2\n\n");
  });
});

Deno.test("node edge: status, headers, lengths, HEAD and 204 come out as the handler made them", async () => {
  await withEdge((request) => {
    if (request.url.endsWith("/empty")) return Promise.resolve(new Response(null, { status: 204 }));
    return Promise.resolve(
      new Response('{"ok":true}', {
        status: 201,
        headers: { "content-type": "application/json", "x-request-id": "req_1", "set-cookie": "a=1" },
      }),
    );
  }, async (url) => {
    const got = await fetch(`${url}/x`);
    assert.equal(got.status, 201);
    assert.equal(got.headers.get("x-request-id"), "req_1");
    assert.equal(got.headers.get("content-length"), "11");
    assert.deepEqual(got.headers.getSetCookie(), ["a=1"]);
    assert.equal(await got.text(), '{"ok":true}');
    const head = await fetch(`${url}/x`, { method: "HEAD" });
    assert.equal(head.headers.get("content-length"), "11");
    assert.equal(await head.text(), "");
    const empty = await fetch(`${url}/empty`);
    assert.equal(empty.status, 204);
    assert.equal(await empty.text(), "");
  });
});

Deno.test("node edge: request bodies arrive whole, with a length or chunked; a big stream respects backpressure", async () => {
  const big = new Uint8Array(4 * 1024 * 1024).fill(97);
  await withEdge(async (request) => {
    if (request.url.endsWith("/big")) {
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent >= big.byteLength) return controller.close();
          controller.enqueue(big.subarray(sent, sent + 65_536));
          sent += 65_536;
        },
      });
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    }
    const text = new TextDecoder().decode(await request.bytes());
    return new Response(`${request.method} ${text.length} ${request.headers.get("x-a")}`);
  }, async (url) => {
    const sized = await fetch(url, { method: "POST", body: "x".repeat(100_000), headers: { "x-a": "1" } });
    assert.equal(await sized.text(), "POST 100000 1");
    const chunked = await fetch(url, {
      method: "POST",
      body: new Blob(["y".repeat(70_000)]).stream(),
      headers: { "x-a": "2" },
    });
    assert.equal(await chunked.text(), "POST 70000 2");
    const got = new Uint8Array(await (await fetch(`${url}/big`)).arrayBuffer());
    assert.equal(got.byteLength, big.byteLength);
    assert.ok(got.every((b) => b === 97));
  });
});

Deno.test("node edge: a handler that throws is a generic 500 in OpenAI's shape", async () => {
  await withEdge(() => Promise.reject(new Error("bug")), async (url) => {
    const response = await fetch(url);
    assert.equal(response.status, 500);
    assert.equal((await response.json()).error.code, "internal_error");
  });
});

Deno.test("node edge: shutdown lets a request in flight finish, then closes", async () => {
  const release = Promise.withResolvers<void>();
  const started = Promise.withResolvers<void>();
  const server = await serveNodeHttp({
    hostname: "127.0.0.1",
    port: 0,
    handler: async () => {
      started.resolve();
      await release.promise;
      return new Response("finished");
    },
  });
  const answer = fetch(`http://127.0.0.1:${server.port}`).then((r) => r.text());
  await started.promise;
  const stopped = server.shutdown(5_000);
  await new Promise((r) => setTimeout(r, 50));
  release.resolve();
  assert.equal(await answer, "finished");
  await stopped;
  await assert.rejects(fetch(`http://127.0.0.1:${server.port}`), "no longer listening");
});

/** Writes all of `bytes`: a socket write may take only part of them. */
async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.byteLength;) at += await conn.write(bytes.subarray(at));
}

Deno.test("node edge: a body sent a byte per HTTP chunk reaches the handler in a few chunks, byte-exact", async () => {
  const size = 40_000;
  const sent = Array.from({ length: size }, (_, i) => String.fromCharCode(97 + (i % 26))).join("");
  let reads = 0;
  const started = Promise.withResolvers<void>();
  await withEdge(async (request) => {
    started.resolve();
    const reader = request.body!.getReader();
    const parts: Uint8Array[] = [];
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      reads++;
      parts.push(value);
    }
    const text = parts.map((part) => new TextDecoder().decode(part)).join("");
    return new Response(text === sent ? "same" : `different: ${text.length} bytes`);
  }, async (url) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(url).port) });
    try {
      const framed = [...sent].map((c) => `1\r\n${c}\r\n`).join("");
      await writeAll(
        conn,
        encoder.encode(
          `POST / HTTP/1.1\r\nhost: x\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n`,
        ),
      );
      // The body only once the handler has its request: it then arrives through the stream the edge feeds.
      await started.promise;
      await writeAll(conn, encoder.encode(`${framed}0\r\n\r\n`));
      const answer = new TextDecoder().decode(await new Response(conn.readable).bytes());
      assert.match(answer, /^HTTP\/1\.1 200/);
      assert.ok(answer.endsWith("same"), answer.slice(-60));
    } finally {
      try {
        conn.close();
      } catch {
        // Already closed by reading its stream to the end.
      }
    }
  });
  // Each one-byte chunk is a 'data' event of its own; a stream entry per event would be 40,000 reads (and as
  // many objects held by whoever keeps them).
  assert.ok(reads <= 8, `${reads} reads`);
});

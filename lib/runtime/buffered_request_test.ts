import assert from "node:assert/strict";
import { BufferedRequest } from "./buffered_request.ts";

const encoder = new TextEncoder();

/** The same request built both ways, or the error each throws. */
function both(url: string, method: string, body: string | null) {
  const make = (build: () => { url: string; method: string }) => {
    try {
      const { url, method } = build();
      return { url, method };
    } catch (err) {
      return { error: (err as Error).name };
    }
  };
  const bytes = body === null ? null : encoder.encode(body);
  return {
    web: make(() => new Request(url, { method, body: bytes })),
    buffered: make(() => new BufferedRequest(url, method, new Headers(), bytes)),
  };
}

Deno.test("BufferedRequest: the URL and method read as a web Request's, and it fails where one would", () => {
  const cases: [string, string, string | null][] = [
    ["http://127.0.0.1:8080/v1/chat/completions", "POST", "{}"],
    ["http://Gateway.Example:80/v1/a/../models?x=1&y=%zz", "GET", null],
    ["http://localhost/v1beta/models/m:generateContent?key=k ey&alt=sse", "POST", "{}"],
    ["http://h/p/./q/%2e%2e/r#frag", "DELETE", null],
    ["http://127.1/caf\u00e9", "PATCH", "x"],
    ["http://exa mple/", "POST", "{}"],
    ["http://h:99999/", "POST", "{}"],
  ];
  for (const [url, method, body] of cases) {
    const { web, buffered } = both(url, method, body);
    assert.deepEqual(buffered, web, `${method} ${url}`);
  }
});

Deno.test("BufferedRequest: it keeps the methods a web Request refuses, for the server to answer 405", () => {
  for (const method of ["TRACE", "CONNECT", "TRACK"]) {
    assert.equal(new BufferedRequest("http://h/v1/models", method, new Headers(), null).method, method);
  }
});

Deno.test("BufferedRequest: the body reads once, whole, as bytes or as a stream", async () => {
  const headers = new Headers({ "content-type": "application/json" });
  const once = new BufferedRequest(
    "http://h/v1/chat/completions",
    "POST",
    headers,
    encoder.encode('{"a":1}'),
  );
  assert.equal(once.headers, headers);
  assert.equal(once.bodyUsed, false);
  assert.equal(new TextDecoder().decode(await once.bytes()), '{"a":1}');
  assert.equal(once.bodyUsed, true);
  await assert.rejects(once.bytes(), TypeError);

  const streamed = new BufferedRequest("http://h/", "POST", headers, encoder.encode("chunk"));
  assert.equal(streamed.body, streamed.body, "one stream, however often it is asked for");
  const read = await new Response(streamed.body).text();
  assert.equal(read, "chunk");
  assert.equal(streamed.bodyUsed, true);
  await assert.rejects(streamed.bytes(), TypeError);

  // As on a web Request: once the stream is handed out, bytes() reads through it, and it is used up there.
  const handedOut = new BufferedRequest("http://h/", "POST", headers, encoder.encode("once"));
  const stream = handedOut.body!;
  assert.equal(new TextDecoder().decode(await handedOut.bytes()), "once");
  assert.equal(stream.locked, true);
  assert.equal(handedOut.bodyUsed, true);

  const empty = new BufferedRequest("http://h/", "GET", headers, null);
  assert.equal(empty.body, null);
  assert.equal((await empty.bytes()).byteLength, 0);
});

Deno.test("BufferedRequest: its signal never aborts and is its own", () => {
  const a = new BufferedRequest("http://h/", "GET", new Headers(), null);
  const b = new BufferedRequest("http://h/", "GET", new Headers(), null);
  assert.equal(a.signal.aborted, false);
  assert.equal(a.signal, a.signal);
  assert.notEqual(a.signal, b.signal, "listeners added to one request's signal stay with that request");
});

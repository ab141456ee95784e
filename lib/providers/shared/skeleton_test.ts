/**
 * The shared skeleton, once, with a fake adapter against a local upstream: what counts as a failure status,
 * bodies that are not JSON objects, the stream stages, async authorization, and a client that goes away.
 */
import assert from "node:assert/strict";
import type { ResolvedTarget } from "../../config/types.ts";
import { badGateway, ClientGoneError, GatewayError } from "../../errors.ts";
import type { ChatCompletion, ChatCompletionChunk, ChatRequest } from "../../openai/types.ts";
import { stages, type SyncTransformer } from "../../streams/pull_through.ts";
import type { TokenCountInput, UpstreamCall } from "../types.ts";
import { keyHeader, type ProviderAdapter, providerFromAdapter } from "./skeleton.ts";
import type { ChunkSource } from "../../streams/pull_through.ts";

/** Every value of a provider's stream, to its end. */
async function readAll<T>(source: ChunkSource<T>): Promise<T[]> {
  const values: T[] = [];
  for (let next = await source.read(); !next.done; next = await source.read()) values.push(next.value);
  return values;
}

interface Seen {
  path: string;
  headers: Headers;
  body: string;
  aborted: Promise<void>;
}

/** A local upstream answering every request with `answer`; records what it saw. */
function upstream(answer: (req: Request) => Response | Promise<Response>) {
  const seen: Seen[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const aborted = Promise.withResolvers<void>();
    req.signal.addEventListener("abort", () => aborted.resolve(), { once: true });
    seen.push({
      path: new URL(req.url).pathname,
      headers: req.headers,
      body: await req.text(),
      aborted: aborted.promise,
    });
    return answer(req);
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, seen, stop: () => server.shutdown() };
}

function callFor(signal = new AbortController().signal): UpstreamCall {
  return {
    target: {
      provider: "fake",
      model: "m",
      timeouts: { firstByteMs: 5_000, idleMs: 5_000, totalMs: 10_000 },
    } as unknown as ResolvedTarget,
    signal,
    requestId: "req_1",
  };
}

const chat = (stream: boolean): ChatRequest => ({
  model: "alias",
  messages: [{ role: "user", content: "hi" }],
  stream,
});

/** Bytes → lines (one chunk per line), then lines → OpenAI chunks: two stages, as vendors have. */
function lines(): SyncTransformer<Uint8Array, string> {
  const decoder = new TextDecoder();
  let rest = "";
  return {
    transform(bytes, controller) {
      const parts = (rest + decoder.decode(bytes, { stream: true })).split("\n");
      rest = parts.pop()!;
      for (const line of parts) if (line !== "") controller.enqueue(line);
    },
    flush(controller) {
      if (rest !== "") controller.enqueue(rest);
    },
  };
}

function toChunks(): SyncTransformer<string, ChatCompletionChunk> {
  return {
    transform(line, controller) {
      if (line === "bad") throw badGateway("bad line", "upstream_invalid_response");
      controller.enqueue({
        id: "c",
        object: "chat.completion.chunk",
        created: 1,
        model: "m",
        choices: [{ index: 0, delta: { content: line }, finish_reason: null }],
      });
    },
  };
}

/** The text of a chunk from {@linkcode toChunks}. */
const content = (chunk: ChatCompletionChunk | undefined) =>
  (chunk?.choices[0].delta as { content?: string } | undefined)?.content;

function fakeAdapter(base: string, log: string[] = []): ProviderAdapter {
  return {
    chatRequest: (request, call) => {
      log.push("build");
      return {
        url: `${base}/chat/${call.target.model}`,
        headers: { "x-extra": "1" },
        body: JSON.stringify(request),
      };
    },
    authorize: keyHeader("x-key", "secret"),
    httpError: (provider, status, text) => {
      log.push("error");
      return new GatewayError(status === 418 ? 400 : 502, `${provider} said ${status}: ${text}`, {
        code: "mapped",
      });
    },
    completion: (text) =>
      ({ id: "x", object: "chat.completion", created: 1, model: text, choices: [] }) as ChatCompletion,
    streamStages: () => stages(lines(), toChunks()),
    async embed(_request, _call, send) {
      const { json } = await send({ url: `${base}/embed`, headers: {}, body: "{}" });
      return {
        data: [{ index: 0, embedding: json.vector as number[] }],
        usage: { prompt_tokens: 1, total_tokens: 1 },
      };
    },
  };
}

Deno.test("skeleton: builds, authorizes and sends; a 2xx answer is translated by the adapter", async () => {
  const up = upstream(() => new Response("raw-body", { status: 201 }));
  try {
    const log: string[] = [];
    const result = await providerFromAdapter(fakeAdapter(up.url, log)).chat(chat(false), callFor());
    assert.equal(result.kind, "json");
    assert.equal(result.kind === "json" && result.body.model, "raw-body", "completion gets the body text");
    assert.deepEqual(log, ["build"]);
    assert.equal(up.seen[0].path, "/chat/m");
    assert.equal(up.seen[0].headers.get("x-key"), "secret");
    assert.equal(up.seen[0].headers.get("x-extra"), "1");
    assert.equal(JSON.parse(up.seen[0].body).model, "alias");
  } finally {
    await up.stop();
  }
});

Deno.test("skeleton: every status outside 2xx goes to the adapter's error mapping, with the body text", async () => {
  for (const status of [302, 400, 418, 429, 500, 503]) {
    const up = upstream(() => new Response(`no ${status}`, { status, headers: { location: "/elsewhere" } }));
    try {
      const provider = providerFromAdapter(fakeAdapter(up.url));
      for (const stream of [false, true]) {
        await assert.rejects(provider.chat(chat(stream), callFor()), (err: GatewayError) => {
          assert.equal(err.status, status === 418 ? 400 : 502);
          assert.equal(err.message, `fake said ${status}: no ${status}`);
          assert.equal(err.code, "mapped");
          return true;
        });
      }
      await assert.rejects(provider.embed({ model: "e", input: "x" }, callFor()), /fake said/);
    } finally {
      await up.stop();
    }
  }
});

Deno.test("skeleton: an embeddings body that is not a JSON object is a 502 upstream_invalid_response", async () => {
  for (const body of ["not json", "[1,2]", "null", '"text"', ""]) {
    const up = upstream(() => new Response(body));
    try {
      await assert.rejects(
        providerFromAdapter(fakeAdapter(up.url)).embed({ model: "e", input: "x" }, callFor()),
        (err: GatewayError) => {
          assert.equal(err.status, 502);
          assert.equal(err.code, "upstream_invalid_response");
          assert.equal(err.message, 'Provider "fake" returned a body that is not a JSON object.');
          return true;
        },
      );
    } finally {
      await up.stop();
    }
  }
  const up = upstream(() => Response.json({ vector: [1, 2] }));
  try {
    const result = await providerFromAdapter(fakeAdapter(up.url)).embed(
      { model: "e", input: "x" },
      callFor(),
    );
    assert.deepEqual(result.data, [{ index: 0, embedding: [1, 2] }]);
  } finally {
    await up.stop();
  }
});

Deno.test("skeleton: a stream runs through the adapter's stages, and a stage's error ends it", async () => {
  const up = upstream((req) =>
    new Response(new URL(req.url).pathname.endsWith("bad") ? "one\nbad\ntwo\n" : "one\ntw", {
      headers: { "content-type": "text/plain" },
    })
  );
  try {
    const result = await providerFromAdapter(fakeAdapter(up.url)).chat(chat(true), callFor());
    assert.equal(result.kind, "stream");
    const chunks = result.kind === "stream" ? await readAll(result.chunks) : [];
    assert.deepEqual(chunks.map(content), ["one", "tw"]);

    const adapter = fakeAdapter(up.url);
    const bad = providerFromAdapter({
      ...adapter,
      chatRequest: (r, c) => ({ ...adapter.chatRequest(r, c), url: `${up.url}/bad` }),
    });
    const failing = await bad.chat(chat(true), callFor());
    const reader = failing.kind === "stream" ? failing.chunks : undefined;
    assert.equal(content((await reader!.read()).value), "one");
    await assert.rejects(reader!.read(), /bad line/);
  } finally {
    await up.stop();
  }
});

Deno.test("skeleton: a JSON answer to a stream request that is the vendor's error body is that error; another goes to the stages", async () => {
  const up = upstream((req) =>
    new Response('{"error":"busy"}', {
      headers: { "content-type": new URL(req.url).searchParams.get("type")! },
    })
  );
  const busy: ProviderAdapter["errorBody"] = (json) => {
    if (json.error === "busy") throw new GatewayError(429, "busy", { code: "rate_limit_exceeded" });
  };
  /** A provider whose upstream answers with content type `type`, checked by `errorBody`. */
  const answering = (type: string, errorBody: ProviderAdapter["errorBody"]) => {
    const adapter = fakeAdapter(up.url);
    return providerFromAdapter({
      ...adapter,
      chatRequest: (r, c) => ({
        ...adapter.chatRequest(r, c),
        url: `${up.url}/?type=${encodeURIComponent(type)}`,
      }),
      errorBody,
    });
  };
  try {
    for (const type of ["application/json", "application/json; charset=utf-8", "application/problem+json"]) {
      await assert.rejects(answering(type, busy).chat(chat(true), callFor()), { status: 429 }, type);
    }
    // Not JSON (an event stream, ndjson), no check (an adapter without one), or a body the check lets pass:
    // the stages read it as they always did.
    const passes: [string, ProviderAdapter["errorBody"]][] = [
      ["text/event-stream", busy],
      ["application/x-ndjson", busy],
      ["application/json", undefined],
      ["application/json", () => {}],
    ];
    for (const [type, errorBody] of passes) {
      const result = await answering(type, errorBody).chat(chat(true), callFor());
      const chunks = result.kind === "stream" ? await readAll(result.chunks) : [];
      assert.deepEqual(chunks.map(content), ['{"error":"busy"}'], type);
    }
  } finally {
    await up.stop();
  }
});

Deno.test("skeleton: a moderation or a token count answered with the vendor's error body is that error, before the reader", async () => {
  const up = upstream((req) =>
    Response.json(new URL(req.url).pathname === "/busy" ? { error: "busy" } : { results: [], count: 7 })
  );
  const read: string[] = [];
  /** A provider asking `path` for moderations and counts, whose adapter's `errorBody` throws on `"busy"`. */
  const asking = (path: string) =>
    providerFromAdapter({
      ...fakeAdapter(up.url),
      errorBody: (json) => {
        if (json.error === "busy") throw new GatewayError(429, "busy", { code: "rate_limit_exceeded" });
      },
      moderationRequest: () => ({ url: `${up.url}${path}`, headers: {}, body: "{}" }),
      moderationResult: (json) => {
        read.push("moderation");
        return { id: null, results: json.results as [] };
      },
      countTokensRequest: () => ({ url: `${up.url}${path}`, headers: {}, body: "{}" }),
      inputTokens: (json) => {
        read.push("count");
        return json.count as number;
      },
    });
  const input: TokenCountInput = { chat: chat(false) };
  try {
    const busy = asking("/busy");
    await assert.rejects(busy.moderate!({ model: "m", input: "hi" }, callFor()), {
      status: 429,
      message: "busy",
    });
    await assert.rejects(busy.countInputTokens!(input, callFor()), { status: 429, message: "busy" });
    assert.deepEqual(read, [], "the error body never reaches the adapter's reader (its 502)");

    const fine = asking("/fine");
    assert.deepEqual(await fine.moderate!({ model: "m", input: "hi" }, callFor()), { id: null, results: [] });
    assert.equal(await fine.countInputTokens!(input, callFor()), 7);
    assert.deepEqual(read, ["moderation", "count"]);
  } finally {
    await up.stop();
  }
});

Deno.test("skeleton: an asynchronous authorize step (signing) is awaited before sending", async () => {
  const up = upstream(() => new Response("ok"));
  try {
    const adapter: ProviderAdapter = {
      ...fakeAdapter(up.url),
      authorize: async (request) => {
        await new Promise((r) => setTimeout(r, 5));
        return {
          ...request,
          headers: { ...request.headers, authorization: `signed ${request.body?.length}` },
        };
      },
    };
    await providerFromAdapter(adapter).chat(chat(false), callFor());
    assert.equal(up.seen[0].headers.get("authorization"), `signed ${up.seen[0].body.length}`);
  } finally {
    await up.stop();
  }
});

Deno.test("skeleton: a client that goes away aborts the upstream request, before or during the stream", async () => {
  const gone = new AbortController();
  gone.abort();
  let sent = 0;
  const idle = upstream(() => (sent++, new Response("x")));
  try {
    await assert.rejects(
      providerFromAdapter(fakeAdapter(idle.url)).chat(chat(true), callFor(gone.signal)),
      ClientGoneError,
    );
    assert.equal(sent, 0, "nothing is sent for a client already gone");
  } finally {
    await idle.stop();
  }

  const up = upstream(() => {
    let n = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((r) => setTimeout(r, 5));
        controller.enqueue(new TextEncoder().encode(`line${n++}\n`));
      },
    });
    return new Response(body);
  });
  try {
    const client = new AbortController();
    const result = await providerFromAdapter(fakeAdapter(up.url)).chat(chat(true), callFor(client.signal));
    const reader = result.kind === "stream" ? result.chunks : undefined;
    assert.equal(content((await reader!.read()).value), "line0");
    client.abort();
    await assert.rejects(async () => {
      while (!(await reader!.read()).done) { /* drain what was already read */ }
    }, ClientGoneError);
    await up.seen[0].aborted; // the upstream saw its request aborted
  } finally {
    await up.stop();
  }
});

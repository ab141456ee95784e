/**
 * The upstream is untrusted input: every provider type (OpenAI-compatible, Azure, Anthropic, Gemini, Bedrock)
 * against a raw scripted upstream that echoes the gateway's credentials in its error bodies and stream error
 * frames, resets before and after the first byte, hangs, sends oversized and compressed bodies, oversized
 * events and garbage frames. For each: the status and error code the client sees, exactly one usage record,
 * and not one secret (nor any 8-character run of one) in any byte sent to the client, any log line or any
 * usage record.
 */
import assert from "node:assert/strict";
import { encodeFrame, eventFrame, exceptionFrame } from "../helpers/fake_bedrock.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, waitForLogCount } from "../helpers/gateway.ts";
import { type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";

/** The provider key, from the environment (`${FAULT_KEY}`). */
const KEY = "sk-proj-Xq7vB2mN9pL4kR8tW1zY6cJ3hG5d";
/** A proxy token inside a header value: `X-Proxy-Auth: Bearer ${PROXY_TOKEN}`. */
const PROXY_TOKEN = "pxy_Hn4Jq8Lm2Vb6Tc9Zr3Wk";
/** A literal header value with no credential-looking name. */
const TENANT = "tenant-Fj29Kd83Lq71Mz";
const AWS_KEY_ID = "AKIAQ7EXAMPLEW3RT6YU";
const AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY";
const ADMIN_SECRET = "gw-admin-Pz8Nc4Vx1Bq7Lm3K";
const SECRETS = [KEY, PROXY_TOKEN, TENANT, AWS_KEY_ID, AWS_SECRET, ADMIN_SECRET];

/** What a careless upstream says: every secret whole, and the key as OpenAI and others quote it (in part). */
const ECHO = `Incorrect API key provided: ${KEY.slice(0, 8)}****${KEY.slice(-4)}; you sent ${KEY} ` +
  `(${KEY.slice(0, 12)}…), proxy said ${PROXY_TOKEN}, tenant ${TENANT}, aws ${AWS_KEY_ID}:${
    AWS_SECRET.slice(6, 26)
  }, admin ${ADMIN_SECRET}`;

/**
 * Every 8-character run of every secret: none may appear anywhere, except `sk-proj-`, the type prefix every
 * OpenAI project key starts with, which says nothing about the key (and OpenAI's own message shows it).
 */
const RUNS = SECRETS.flatMap((s) => Array.from({ length: s.length - 7 }, (_, i) => s.slice(i, i + 8)))
  .filter((run) => run !== "sk-proj-");

function assertNoSecret(text: string, where: string): void {
  const run = RUNS.find((r) => text.includes(r));
  assert.equal(run, undefined, `${where} leaks "${run}": ${text.slice(0, 600)}`);
}

type Kind = "openai" | "azure" | "anthropic" | "gemini" | "bedrock";
const KINDS: Kind[] = ["openai", "azure", "anthropic", "gemini", "bedrock"];

function configFor(url: string, dir: string): string {
  const headers = `headers: { X-Proxy-Auth: "Bearer \${PROXY_TOKEN}", X-Tenant: ${TENANT} }`;
  return `
server:
  timeouts: { first_byte: 250ms, idle: 2s, total: 5s }
  upstream_limits: { max_body_size: 1MiB, max_event_size: 64KiB }
routing: { backoff_base: 5ms, backoff_max: 10ms, eject_after: 1000 }
usage: { sqlite: none, jsonl: "${dir}/usage.jsonl", spill: "${dir}/spill.jsonl", flush_interval: 20ms }
providers:
  openai: { type: openai, base_url: "${url}/oai/v1", api_key: "\${FAULT_KEY}", ${headers} }
  azure: { type: azure, base_url: "${url}/openai/v1", api_key: "\${FAULT_KEY}", ${headers} }
  anthropic: { type: anthropic, base_url: "${url}", api_key: "\${FAULT_KEY}", ${headers} }
  gemini: { type: gemini, base_url: "${url}/v1beta", api_key: "\${FAULT_KEY}", ${headers} }
  bedrock:
    type: bedrock
    region: us-east-1
    base_url: "${url}"
    access_key_id: ${AWS_KEY_ID}
    secret_access_key: ${AWS_SECRET}
    ${headers}
models:
${
    KINDS.map((k) => `  chat-${k}: { type: chat, targets: [{ provider: ${k}, model: m-${k}, retries: 1 }] }`)
      .join("\n")
  }
${TEST_TOKENS_YAML}
admin_tokens:
  - { name: ops, token: ${ADMIN_SECRET} }
`;
}

const sse = (data: unknown, event?: string) =>
  `${event ? `event: ${event}\n` : ""}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;

/**
 * The first write of a stream that makes the gateway commit to the answer (the client gets a 200): one that
 * shows the client text. Anthropic and Bedrock open their streams with a message start that shows nothing, so
 * theirs carries the stream's first text delta as well.
 */
function firstEvent(kind: Kind): string | Uint8Array {
  switch (kind) {
    case "openai":
    case "azure":
      return sse({
        id: "c1",
        object: "chat.completion.chunk",
        created: 1,
        model: "m",
        choices: [{ index: 0, delta: { role: "assistant", content: "Hi" }, finish_reason: null }],
      });
    case "anthropic":
      return sse(
        { type: "message_start", message: { id: "msg_1", usage: { input_tokens: 3 } } },
        "message_start",
      ) +
        sse(
          { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
          "content_block_start",
        ) +
        sse(
          { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hi" } },
          "content_block_delta",
        );
    case "gemini":
      return sse({ candidates: [{ content: { role: "model", parts: [{ text: "Hi" }] }, index: 0 }] });
    case "bedrock": {
      const start = eventFrame("messageStart", { role: "assistant" });
      const delta = eventFrame("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Hi" } });
      const both = new Uint8Array(start.length + delta.length);
      both.set(start);
      both.set(delta, start.length);
      return both;
    }
  }
}

/** The vendor's own mid-stream error frame, echoing the secrets. */
function errorEvent(kind: Kind): string | Uint8Array {
  switch (kind) {
    case "openai":
    case "azure":
      return sse({ error: { message: ECHO, type: "server_error", code: `bad_${PROXY_TOKEN}`, param: KEY } });
    case "anthropic":
      return sse({ type: "error", error: { type: "api_error", message: ECHO } }, "error");
    case "gemini":
      return sse({ error: { code: 500, message: ECHO, status: "INTERNAL" } });
    case "bedrock":
      return exceptionFrame("internalServerException", ECHO);
  }
}

/** The vendor's rate-limit error as the first event of a 200 stream, as each sends it. */
function rateLimitEvent(kind: Kind): string | Uint8Array {
  switch (kind) {
    case "openai":
    case "azure":
      return sse({ error: { message: "Rate limit reached", type: "tokens", code: "rate_limit_exceeded" } });
    case "anthropic":
      return sse({ type: "error", error: { type: "rate_limit_error", message: "Slow down" } }, "error");
    case "gemini":
      return sse({ error: { code: 429, message: "Resource exhausted", status: "RESOURCE_EXHAUSTED" } });
    case "bedrock":
      return exceptionFrame("throttlingException", "Too many requests");
  }
}

/** The vendor's non-stream 400, echoing the secrets. */
function errorAnswer(kind: Kind): RawStep {
  const json = { "content-type": "application/json" };
  switch (kind) {
    case "openai":
    case "azure":
      return {
        status: 400,
        headers: json,
        chunks: [JSON.stringify({
          error: { message: ECHO, type: "invalid_request_error", param: KEY, code: `bad_${PROXY_TOKEN}` },
        })],
      };
    case "anthropic":
      return {
        status: 400,
        headers: json,
        chunks: [JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: ECHO } })],
      };
    case "gemini":
      return {
        status: 400,
        headers: json,
        chunks: [JSON.stringify({ error: { code: 400, message: ECHO, status: "INVALID_ARGUMENT" } })],
      };
    case "bedrock":
      return {
        status: 400,
        headers: { ...json, "x-amzn-errortype": "ValidationException:http://internal.amazon.com/coral/" },
        chunks: [JSON.stringify({ message: ECHO })],
      };
  }
}

/** An event the vendor's format cannot read: not JSON, or an event-stream frame with a bad checksum. */
function garbageEvent(kind: Kind): string | Uint8Array {
  if (kind === "bedrock") {
    const frame = eventFrame("messageStart", { role: "assistant" });
    frame[frame.length - 6] ^= 0x01;
    return frame;
  }
  return kind === "anthropic" ? sse("{not json", "message_start") : sse("<html>502 Bad Gateway</html>");
}

/** One event bigger than `max_event_size` (64 KiB). */
function hugeEvent(kind: Kind): string | Uint8Array {
  const text = "x".repeat(100 * 1024);
  if (kind === "bedrock") {
    return encodeFrame({ ":message-type": "event", ":event-type": "messageStart" }, text);
  }
  return `data: ${text}`;
}

const streamHeaders = (kind: Kind) => ({
  "content-type": kind === "bedrock" ? "application/vnd.amazon.eventstream" : "text/event-stream",
});

async function gzipBomb(): Promise<Uint8Array> {
  const raw = new Blob([new Uint8Array(8 * 1024 * 1024).fill(32)]).stream();
  return new Uint8Array(await new Response(raw.pipeThrough(new CompressionStream("gzip"))).arrayBuffer());
}

interface Scenario {
  name: string;
  stream: boolean;
  step: (kind: Kind) => RawStep;
  status: number;
  /** The error code the client sees (in the JSON body, or in the stream's error event). */
  code?: string;
  /** Upstream requests made: 2 when routing retried (an upstream fault), 1 when it did not. */
  hits: number;
  /** The upstream's message echoes the secrets: the client still gets its words, masked. */
  echo?: boolean;
}

function scenarios(bomb: Uint8Array): Scenario[] {
  return [
    {
      name: "error body echoing secrets",
      stream: false,
      step: errorAnswer,
      status: 400,
      hits: 1,
      echo: true,
    },
    {
      name: "mid-stream error frame echoing secrets",
      stream: true,
      step: (k) => ({ headers: streamHeaders(k), chunks: [firstEvent(k), errorEvent(k)] }),
      status: 200,
      hits: 1,
      echo: true,
    },
    {
      // Before anything reached the client: the HTTP 429 it stands for, retried as one, not a 502.
      name: "rate limit as the first stream event",
      stream: true,
      step: (k) => ({ headers: streamHeaders(k), chunks: [rateLimitEvent(k)] }),
      status: 429,
      hits: 2,
    },
    {
      name: "reset before the first byte",
      stream: false,
      step: () => ({ reset: "before-headers" }),
      status: 502,
      code: "upstream_unreachable",
      hits: 2,
    },
    {
      name: "reset after the first chunk",
      stream: true,
      step: (k) => ({
        headers: streamHeaders(k),
        chunks: [firstEvent(k), "never sent"],
        reset: "after-first-chunk",
      }),
      status: 200,
      code: "upstream_error",
      hits: 1,
    },
    {
      name: "hang",
      stream: false,
      step: () => ({ hang: true }),
      status: 504,
      code: "upstream_timeout",
      hits: 2,
    },
    {
      name: "oversized answer",
      stream: false,
      step: () => ({
        headers: { "content-type": "application/json" },
        chunks: Array.from({ length: 8 }, () => "x".repeat(256 * 1024)),
      }),
      status: 502,
      code: "upstream_response_too_large",
      hits: 2,
    },
    {
      name: "gzip bomb",
      stream: false,
      step: () => ({
        headers: { "content-type": "application/json", "content-encoding": "gzip" },
        chunks: [bomb],
      }),
      status: 502,
      code: "upstream_response_too_large",
      hits: 2,
    },
    {
      name: "oversized stream event",
      stream: true,
      step: (k) => ({ headers: streamHeaders(k), chunks: [hugeEvent(k)] }),
      status: 502,
      code: "upstream_response_too_large",
      hits: 2,
    },
    {
      name: "garbage frame",
      stream: true,
      step: (k) => ({ headers: streamHeaders(k), chunks: [garbageEvent(k)] }),
      status: 502,
      code: "upstream_invalid_response",
      hits: 2,
    },
  ];
}

/** The error a response carries: the JSON body's, or the stream's final `data: {"error":…}` event. */
function errorOf(status: number, text: string): { code: string | null; message: string } | undefined {
  if (status !== 200) return JSON.parse(text).error;
  const last = text.trim().split("\n\n").at(-1) ?? "";
  return last.startsWith('data: {"error"') ? JSON.parse(last.slice(6)).error : undefined;
}

Deno.test("upstream faults: every provider type, every fault: right error, one usage record, no secret anywhere", async (t) => {
  const upstream = startRawUpstream();
  const dir = await Deno.makeTempDir();
  const gw = await startGateway(configFor(upstream.url, dir), { FAULT_KEY: KEY, PROXY_TOKEN });
  const ids: string[] = [];
  let stopped = false;
  try {
    const all = scenarios(await gzipBomb());
    for (const kind of KINDS) {
      for (const scenario of all) {
        const id = `fault-${kind}-${ids.length}`;
        ids.push(id);
        // Steps, so that every failing case is reported, not only the first.
        await t.step(`${kind}: ${scenario.name}`, async () => {
          upstream.next = scenario.step(kind);
          const before = upstream.requests.length;
          const res = await fetch(`${gw.baseURL}/chat/completions`, {
            method: "POST",
            headers: {
              authorization: `Bearer ${TEST_TOKEN}`,
              "content-type": "application/json",
              "x-request-id": id,
            },
            body: JSON.stringify({
              model: `chat-${kind}`,
              messages: [{ role: "user", content: "hi" }],
              stream: scenario.stream,
            }),
          });
          const text = await res.text();
          assertNoSecret(text, "the response body");
          assertNoSecret(JSON.stringify([...res.headers]), "the response headers");
          assert.equal(res.status, scenario.status, `status (${text.slice(0, 300)})`);
          const error = errorOf(res.status, text);
          assert.ok(error !== undefined, `the client gets an error (${text.slice(0, 300)})`);
          if (scenario.code !== undefined) assert.equal(error.code, scenario.code, "code");
          if (scenario.stream && res.status === 200) assert.ok(!text.includes("[DONE]"), "no [DONE]");
          if (scenario.echo) assert.match(error.message, /\*\*\*/, "the upstream's words are kept, masked");
          assert.equal(upstream.requests.length - before, scenario.hits, "upstream attempts");
        });
      }
    }
    await t.step(
      "no metrics label holds a secret (an upstream error code becomes an attempt's outcome)",
      async () => {
        // A secret the provider itself does not know (the admin token), shaped like an error code.
        upstream.next = {
          status: 400,
          headers: { "content-type": "application/json" },
          chunks: [
            JSON.stringify({ error: { message: "no", type: "invalid_request_error", code: ADMIN_SECRET } }),
          ],
        };
        const res = await fetch(`${gw.baseURL}/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "chat-openai", messages: [{ role: "user", content: "hi" }] }),
        });
        assert.equal(res.status, 400);
        assertNoSecret(await res.text(), "the response body");
        const metrics = await fetch(`${gw.url}/metrics`, {
          headers: { authorization: `Bearer ${ADMIN_SECRET}` },
        });
        assert.equal(metrics.status, 200);
        assertNoSecret(await metrics.text(), "/metrics");
      },
    );
    await gw.stop();
    stopped = true;
    await t.step("exactly one usage record per request, none holding a secret", async () => {
      const lines = (await Deno.readTextFile(`${dir}/usage.jsonl`)).trim().split("\n");
      const records = lines.map((l) => JSON.parse(l));
      for (const id of ids) {
        assert.equal(records.filter((r) => r.request_id === id).length, 1, `one usage record for ${id}`);
      }
      assertNoSecret(JSON.stringify(records), "the usage records");
    });
    await t.step(
      "no log line holds a secret, though the access log carries every upstream error",
      async () => {
        await waitForLogCount(gw, (l) => l.msg === "request", ids.length);
        for (const line of gw.logs) assertNoSecret(JSON.stringify(line), `log line ${line.msg}`);
      },
    );
  } finally {
    if (!stopped) await gw.stop();
    await upstream.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

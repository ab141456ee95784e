/**
 * A native Responses upstream (`native_responses: true`) is untrusted input like any other: one that echoes the
 * provider key in an HTTP error body, an `error` event or its own `response.failed` never gets the key to the
 * client, a log line or a usage record (the pattern of `upstream_faults_test.ts`, on the passthrough path). And
 * every way a native request can end — completed, incomplete, an upstream error before the first byte, an
 * `error` event or a cut mid-stream, the client leaving mid-stream — leaves exactly one usage record with its
 * outcome.
 */
import assert from "node:assert/strict";
import {
  type FakeNativeUpstream,
  NATIVE_KEY,
  startFakeNativeResponses,
} from "../helpers/fake_openai_responses.ts";
import {
  startGateway,
  TEST_TOKEN,
  TEST_TOKENS_YAML,
  type TestGateway,
  waitForLogCount,
} from "../helpers/gateway.ts";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import { type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";
import { checkEvents, parseSse } from "../helpers/responses_conformance.ts";

const schemas = await loadOpenApiSchemas();

/** The provider key, from the environment. */
const KEY = "sk-proj-Nv5Qw8Er2Ty7Ui4Op1As6Df3";
/** What a careless upstream says: the key whole and quoted in part, as OpenAI quotes keys. */
const ECHO = `Incorrect API key provided: ${KEY.slice(0, 8)}****${KEY.slice(-4)}; you sent ${KEY} (${
  KEY.slice(0, 14)
}…)`;
/** Every 8-character run of the key but the type prefix every project key shares. */
const RUNS = Array.from({ length: KEY.length - 7 }, (_, i) => KEY.slice(i, i + 8)).filter((r) =>
  r !== "sk-proj-"
);

function assertNoSecret(text: string, where: string): void {
  const run = RUNS.find((r) => text.includes(r));
  assert.equal(run, undefined, `${where} leaks "${run}": ${text.slice(0, 600)}`);
}

interface UsageLine {
  request_id: string;
  alias: string | null;
  endpoint: string;
  stream: boolean;
  status: number;
  error_code: string | null;
  prompt_tokens: number;
  completion_tokens: number;
}

async function usageLines(file: string): Promise<UsageLine[]> {
  return (await Deno.readTextFile(file)).trim().split("\n").filter((l) => l).map((l) => JSON.parse(l));
}

async function post(gw: TestGateway, id: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return await fetch(`${gw.baseURL}/responses`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      "content-type": "application/json",
      "x-request-id": id,
    },
    body: JSON.stringify(body),
    signal,
  });
}

// ---- secrets ----

const sse = (data: Record<string, unknown>) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;

function upstreamResponse(status: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: "resp_up1",
    object: "response",
    created_at: 1_700_000_000,
    status,
    model: "m-native",
    output: [],
    error: null,
    incomplete_details: null,
    ...extra,
  };
}

const CREATED = sse({
  type: "response.created",
  sequence_number: 0,
  response: upstreamResponse("in_progress"),
});
/** The opening of a message: what makes the stream the target's (an error after it is mid-stream). */
const OPENED = sse({
  type: "response.output_item.added",
  sequence_number: 1,
  output_index: 0,
  item: { id: "msg_up1", type: "message", status: "in_progress", role: "assistant", content: [] },
});
const JSON_HEADERS = { "content-type": "application/json" };
const SSE_HEADERS = { "content-type": "text/event-stream" };

interface Fault {
  name: string;
  stream: boolean;
  step: RawStep;
  /** The status the client gets: the upstream's mapped status, or 200 for a stream that had started. */
  status: number;
}

const FAULTS: Fault[] = [
  {
    name: "a 401 body echoing the key",
    stream: false,
    status: 401,
    step: {
      status: 401,
      headers: JSON_HEADERS,
      chunks: [
        JSON.stringify({
          error: { message: ECHO, type: "invalid_request_error", param: null, code: "invalid_api_key" },
        }),
      ],
    },
  },
  {
    name: "a 400 body with the key in message, param and code",
    stream: true,
    status: 400,
    step: {
      status: 400,
      headers: JSON_HEADERS,
      chunks: [
        JSON.stringify({
          error: { message: ECHO, type: "invalid_request_error", param: KEY, code: `bad_${KEY}` },
        }),
      ],
    },
  },
  {
    name: "a 500 body echoing the key",
    stream: true,
    status: 502,
    step: {
      status: 500,
      headers: JSON_HEADERS,
      chunks: [JSON.stringify({ error: { message: ECHO, type: "server_error" } })],
    },
  },
  {
    name: "an error event with the key in its top-level fields",
    stream: true,
    status: 200,
    step: {
      headers: SSE_HEADERS,
      chunks: [
        CREATED,
        OPENED,
        sse({ type: "error", sequence_number: 2, code: `bad_${KEY}`, message: ECHO, param: KEY }),
      ],
    },
  },
  {
    name: "an error event with the key nested under error",
    stream: true,
    status: 200,
    step: {
      headers: SSE_HEADERS,
      chunks: [
        CREATED,
        OPENED,
        `data: ${JSON.stringify({ error: { message: ECHO, type: "server_error", code: null } })}\n\n`,
      ],
    },
  },
  // Before the stream showed anything, the error is the attempt's: the client gets it as an HTTP error.
  {
    name: "an error event echoing the key right after response.created",
    stream: true,
    status: 502,
    step: {
      headers: SSE_HEADERS,
      chunks: [
        CREATED,
        sse({ type: "error", sequence_number: 1, code: `bad_${KEY}`, message: ECHO, param: KEY }),
      ],
    },
  },
  {
    name: "a response.failed by a server error echoing the key right after response.created",
    stream: true,
    status: 502,
    step: {
      headers: SSE_HEADERS,
      chunks: [
        CREATED,
        sse({
          type: "response.failed",
          sequence_number: 1,
          response: upstreamResponse("failed", {
            error: { code: "server_error", message: ECHO, echoed: KEY },
          }),
        }),
      ],
    },
  },
  // The upstream's own `response.failed` (and a whole failed Response) carry its error to the client, and its
  // code on into the usage record and the metrics: the key in any field of that error is masked.
  {
    name: "a response.failed event whose error echoes the key",
    stream: true,
    status: 200,
    step: {
      headers: SSE_HEADERS,
      chunks: [
        CREATED,
        sse({
          type: "response.failed",
          sequence_number: 1,
          response: upstreamResponse("failed", { error: { code: `bad_${KEY}`, message: ECHO, echoed: KEY } }),
        }),
      ],
    },
  },
  {
    name: "a whole failed Response whose error echoes the key",
    stream: false,
    status: 200,
    step: {
      headers: JSON_HEADERS,
      chunks: [
        JSON.stringify(
          upstreamResponse("failed", { error: { code: `bad_${KEY}`, message: ECHO, echoed: KEY } }),
        ),
      ],
    },
  },
];

async function secretsCheck(faults: Fault[]): Promise<void> {
  const upstream = startRawUpstream();
  const dir = await Deno.makeTempDir();
  const gw = await startGateway(
    `
server: { timeouts: { first_byte: 2s, idle: 2s, total: 5s }, public_metrics: true }
routing: { backoff_base: 5ms, backoff_max: 10ms }
usage: { sqlite: none, jsonl: "${dir}/usage.jsonl", spill: "${dir}/spill.jsonl", flush_interval: 20ms }
providers:
  native: { type: openai, base_url: "${upstream.url}/v1", api_key: "\${FAULT_KEY}", native_responses: true }
models:
  chat-native: { type: chat, targets: [ { provider: native, model: m-native, retries: 0 } ] }
${TEST_TOKENS_YAML}`,
    { FAULT_KEY: KEY },
  );
  let stopped = false;
  const ids: string[] = [];
  try {
    for (const fault of faults) {
      const id = `native-fault-${ids.length}`;
      ids.push(id);
      upstream.next = fault.step;
      const res = await post(gw, id, { model: "chat-native", input: "Hi", stream: fault.stream });
      const text = await res.text();
      assert.equal(
        upstream.requests.at(-1)!.headers.get("authorization"),
        `Bearer ${KEY}`,
        "the key went upstream",
      );
      assertNoSecret(text, `${fault.name}: the body`);
      assertNoSecret(JSON.stringify([...res.headers]), `${fault.name}: the headers`);
      assert.equal(res.status, fault.status, `${fault.name}: status (${text.slice(0, 300)})`);
      if (res.status !== 200) {
        const { error } = JSON.parse(text);
        assert.equal(typeof error.message, "string", `${fault.name}: OpenAI's error shape`);
      } else if (fault.stream) {
        const events = parseSse(text);
        assert.equal(events.at(-1)!.type, "response.failed", `${fault.name}: the stream ends failed`);
      }
    }
    assertNoSecret(await (await fetch(`${gw.url}/metrics`)).text(), "the metrics");
    await gw.stop();
    stopped = true;
    const records = await usageLines(`${dir}/usage.jsonl`);
    for (const id of ids) {
      assert.equal(records.filter((r) => r.request_id === id).length, 1, `one record for ${id}`);
    }
    assertNoSecret(JSON.stringify(records), "the usage records");
    await waitForLogCount(gw, (l) => l.msg === "request", ids.length);
    for (const line of gw.logs) assertNoSecret(JSON.stringify(line), `log line ${line.msg}`);
  } finally {
    if (!stopped) await gw.stop();
    await upstream.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("native faults: a key echoed in an error body, an error event or response.failed reaches no client, log or usage record", async () => {
  await secretsCheck(FAULTS);
});

// ---- one usage record per ending ----

Deno.test("native endings: completed, incomplete, error before the first byte, error or cut mid-stream, client gone: one record each", async () => {
  const fake: FakeNativeUpstream = startFakeNativeResponses();
  const dir = await Deno.makeTempDir();
  const file = `${dir}/usage.jsonl`;
  const gw = await startGateway(`
server: { timeouts: { first_byte: 5s, idle: 20s } }
usage: { sqlite: none, jsonl: "${file}", spill: "${dir}/spill.jsonl", flush_interval: 20ms }
providers:
  native: { type: openai, base_url: "${fake.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
models:
  chat-ok: { type: chat, targets: [ { provider: native, model: resp-ok } ] }
  chat-length: { type: chat, targets: [ { provider: native, model: resp-length } ] }
  chat-500: { type: chat, targets: [ { provider: native, model: resp-500, retries: 0 } ] }
  chat-error: { type: chat, targets: [ { provider: native, model: resp-error } ] }
  chat-cut: { type: chat, targets: [ { provider: native, model: resp-cut } ] }
  chat-hang: { type: chat, targets: [ { provider: native, model: resp-hang } ] }
${TEST_TOKENS_YAML}`);
  let stopped = false;
  try {
    /** request id → [expected status, whether an error code is expected] */
    const expected = new Map<string, [number, boolean]>();
    for (const stream of [false, true]) {
      for (
        const [alias, ending, status, failed] of [
          ["chat-ok", "completed", 200, false],
          ["chat-length", "incomplete", 200, false],
          ["chat-500", "error before the first byte", 502, true],
          ...(stream
            ? [["chat-error", "error event", 200, true], ["chat-cut", "cut", 200, true]] as const
            : []),
        ] as const
      ) {
        const id = `ending-${alias}-${stream}`;
        const res = await post(gw, id, { model: alias, input: "Hi", stream });
        const text = await res.text();
        assert.equal(res.status, status, `${ending} (stream ${stream}): ${text.slice(0, 200)}`);
        if (stream && status === 200) {
          const last = checkEvents(schemas, parseSse(text));
          assert.equal(last.status, failed ? "failed" : ending, `${ending}: the terminal event`);
        }
        expected.set(id, [stream && status === 200 ? 200 : status, failed]);
      }
    }

    // The client leaves mid-stream, after the first text delta.
    const controller = new AbortController();
    const res = await post(
      gw,
      "ending-client-gone",
      { model: "chat-hang", input: "Hi", stream: true },
      controller.signal,
    );
    assert.equal(res.status, 200);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    while (!seen.includes("response.output_text.delta")) seen += (await reader.read()).value ?? "";
    controller.abort();
    await reader.cancel().catch(() => {});
    const abortedInTime = await Promise.race([
      fake.aborted.promise.then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), 2_000)),
    ]);
    assert.ok(abortedInTime, "the upstream call is aborted when the client leaves");

    assertNoSecret(await (await fetch(`${gw.url}/metrics`)).text(), "the metrics");
    await gw.stop();
    stopped = true;
    const records = await usageLines(file);
    for (const [id, [status, failed]] of expected) {
      const mine = records.filter((r) => r.request_id === id);
      assert.equal(mine.length, 1, `exactly one usage record for ${id}`);
      assert.equal(mine[0].endpoint, "responses");
      assert.equal(mine[0].status, status, `${id}: status`);
      assert.equal(mine[0].error_code !== null, failed, `${id}: error_code ${mine[0].error_code}`);
    }
    const gone = records.filter((r) => r.request_id === "ending-client-gone");
    assert.equal(gone.length, 1, "exactly one usage record for the client that left");
    // As for chat: the 200 had been sent, so the record keeps it and says why the answer stopped.
    assert.equal(gone[0].status, 200);
    assert.equal(gone[0].error_code, "client_closed_request");
    assert.equal(records.length, expected.size + 1, "no other record");
  } finally {
    if (!stopped) await gw.stop();
    await fake.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

// ---- the store keeps what the gateway answered ----

Deno.test("native faults: a Response without a numeric created_at is stored by the gateway's clock, and can be read and chained from", async () => {
  const upstream = startRawUpstream();
  const gw = await startGateway(`
providers:
  native: { type: openai, base_url: "${upstream.url}/v1", api_key: "sk-native", native_responses: true }
models:
  chat-native: { type: chat, targets: [ { provider: native, model: m-native, retries: 0 } ] }
${TEST_TOKENS_YAML}`);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${gw.baseURL}${path}`, {
      method,
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  try {
    for (const createdAt of [undefined, "2025-01-01T00:00:00Z"]) {
      const { created_at: _, ...answer } = upstreamResponse("completed", { id: `resp_up_${createdAt}` });
      upstream.next = {
        status: 200,
        headers: { "content-type": "application/json" },
        chunks: [JSON.stringify(createdAt === undefined ? answer : { ...answer, created_at: createdAt })],
      };
      const first = await call("POST", "/responses", { model: "chat-native", input: "Hi" });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const read = await call("GET", `/responses/${first.body.id}`);
      assert.equal(read.status, 200, `created_at ${createdAt}: ${JSON.stringify(read.body)}`);
      assert.equal(read.body.id, first.body.id);
      const next = await call("POST", "/responses", {
        model: "chat-native",
        input: "Again",
        previous_response_id: first.body.id,
      });
      assert.equal(next.status, 200, `created_at ${createdAt}: ${JSON.stringify(next.body)}`);
      assert.equal(JSON.parse(upstream.requests.at(-1)!.body).previous_response_id, `resp_up_${createdAt}`);
    }
    assert.equal(gw.logs.filter((l) => l.msg === "response_store_failed").length, 0, "no failed put");
  } finally {
    await gw.stop();
    await upstream.stop();
  }
});

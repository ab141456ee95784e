/**
 * A streamed Response that fails after it started (`error`, then `response.failed`) is stored as the client
 * received it, as OpenAI keeps a failed response: `GET /v1/responses/{id}` answers it with `status: "failed"`,
 * its input items are listed, and a later turn may chain from it. Over real sockets, on a translated target
 * (the upstream tears its connection down) and a native one (the same, an upstream error event, and the upstream's own `response.failed`).
 */
import assert from "node:assert/strict";
import { FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import {
  type FakeNativeUpstream,
  NATIVE_KEY,
  startFakeNativeResponses,
} from "../helpers/fake_openai_responses.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { type Fakes as FakeSet, startFakes } from "../helpers/fakes.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";
import { startGateway } from "../helpers/gateway.ts";

type Fakes = FakeSet<{ native: FakeNativeUpstream; chat: FakeUpstream }>;
type Json = Record<string, unknown>;

const startAll = (): Fakes => startFakes({ native: startFakeNativeResponses, chat: startFakeOpenAI });

function configFor(f: Fakes): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  native: { type: openai, base_url: "${f.native.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
  chat: { type: openai, base_url: "${f.chat.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-cut: { type: chat, targets: [ { provider: chat, model: gpt-cut } ] }
  chat-ok: { type: chat, targets: [ { provider: chat, model: gpt-ok } ] }
  native-cut: { type: chat, targets: [ { provider: native, model: resp-cut } ] }
  native-error: { type: chat, targets: [ { provider: native, model: resp-error } ] }
${TEST_TOKENS_YAML}`;
}

const headers = { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" };

/** Streams a create and gives back its events' data, in order. */
async function streamed(gw: TestGateway, body: Json): Promise<Json[]> {
  const res = await fetch(`${gw.baseURL}/responses`, {
    method: "POST",
    headers,
    body: JSON.stringify({ ...body, stream: true }),
  });
  assert.equal(res.status, 200);
  const text = await res.text();
  return text.split("\n").filter((line) => line.startsWith("data: ")).map((line) =>
    JSON.parse(line.slice(6))
  );
}

async function get(gw: TestGateway, path: string): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${gw.baseURL}${path}`, { headers });
  return { status: res.status, json: await res.json() };
}

/** Checks that the failed Response the stream ended with is the one stored; its id. */
async function assertStoredFailed(gw: TestGateway, events: Json[], what: string): Promise<string> {
  const last = events.at(-1)!;
  assert.equal(last.type, "response.failed", what);
  const failed = last.response as Json;
  assert.equal(failed.status, "failed", what);
  assert.equal(failed.store, true, what);
  const stored = await get(gw, `/responses/${failed.id}`);
  assert.equal(stored.status, 200, what);
  assert.deepEqual(stored.json, failed, `${what}: stored as the client received it`);
  const items = await get(gw, `/responses/${failed.id}/input_items`);
  assert.equal(items.status, 200, what);
  assert.equal(((items.json.data as Json[])[0].content as Json[])[0].text, "Tell me a story.", what);
  return String(failed.id);
}

Deno.test("responses: a stream that fails mid-way is stored as failed, retrievable and chainable", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const events = await streamed(gw, { model: "chat-cut", input: "Tell me a story." });
    const id = await assertStoredFailed(gw, events, "translated target cut");
    const output = ((events.at(-1)!.response as Json).output as Json[])[0];
    assert.equal(output.status, "incomplete");
    // A later turn continues from what the client received of it.
    const next = await fetch(`${gw.baseURL}/responses`, {
      method: "POST",
      headers,
      body: JSON.stringify({ model: "chat-ok", input: "Go on.", previous_response_id: id }),
    });
    assert.equal(next.status, 200, await next.clone().text());
    const messages = fakes.chat.requests.at(-1)!.body.messages as { role: string; content: unknown }[];
    assert.deepEqual(messages.map((m) => m.role), ["user", "assistant", "user"]);
    assert.equal(messages[1].content, "partial answer");
  });
});

Deno.test("responses: a native stream cut or ended by an upstream error is stored as failed", async () => {
  await withFakeGateway(startAll, configFor, async (gw) => {
    for (const model of ["native-cut", "native-error"]) {
      const events = await streamed(gw, { model, input: "Tell me a story." });
      await assertStoredFailed(gw, events, model);
    }
  });
});

Deno.test("responses: a native upstream's own response.failed mid-stream is stored as failed", async () => {
  const upstream = startRawUpstream();
  const gw = await startGateway(`
server: { host: 127.0.0.1, port: 0 }
providers:
  native: { type: openai, base_url: "${upstream.url}/v1", api_key: "${NATIVE_KEY}", native_responses: true }
models:
  chat-native: { type: chat, targets: [ { provider: native, model: m-native, retries: 0 } ] }
${TEST_TOKENS_YAML}`);
  try {
    const sse = (data: Json) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
    const response = (status: string, extra: Json = {}) => ({
      id: "resp_up1",
      object: "response",
      created_at: 1_700_000_000,
      status,
      model: "m-native",
      store: true,
      output: [],
      error: null,
      incomplete_details: null,
      ...extra,
    });
    const item = { id: "msg_up1", type: "message", status: "in_progress", role: "assistant", content: [] };
    upstream.next = {
      headers: { "content-type": "text/event-stream" },
      chunks: [
        sse({ type: "response.created", sequence_number: 0, response: response("in_progress") }),
        sse({ type: "response.output_item.added", sequence_number: 1, output_index: 0, item }),
        sse({
          type: "response.failed",
          sequence_number: 2,
          response: response("failed", {
            output: [{ ...item, status: "incomplete" }],
            error: { code: "server_error", message: "The model failed." },
          }),
        }),
      ],
    };
    const events = await streamed(gw, { model: "chat-native", input: "Tell me a story." });
    await assertStoredFailed(gw, events, "upstream response.failed");
  } finally {
    await gw.stop();
    await upstream.stop();
  }
});

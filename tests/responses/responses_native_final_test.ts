/**
 * A native Responses stream's final event (`response.completed`, `.incomplete`, `.failed`) carries the Response
 * the client keeps and the gateway stores: one whose `response` is not a Response (`null`, `[]`, a string, an
 * object without `object: "response"` and `output`) is held to the check a whole answer passes. Mid-stream the
 * client gets `error` then `response.failed`, the request is recorded as the upstream's 502 and the failed
 * Response is stored as the client received it (as OpenAI keeps a failed response); as the first event, before anything reached the client, the next target answers.
 */
import assert from "node:assert/strict";
import { NATIVE_ANSWER, NATIVE_KEY, startFakeNativeResponses } from "../helpers/fake_openai_responses.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";
import { parseSse } from "../helpers/responses_conformance.ts";

const sse = (data: Record<string, unknown>) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;

const item = {
  id: "msg_1",
  type: "message",
  role: "assistant",
  status: "completed",
  content: [{ type: "output_text", text: "Hi there", annotations: [] }],
};

/** A stream as OpenAI sends one, whose final event carries `final` as its `response`. */
function streamEndingWith(final: unknown): string[] {
  const response = { id: "resp_up", object: "response", created_at: 1, status: "in_progress", output: [] };
  return [
    sse({ type: "response.created", sequence_number: 0, response }),
    sse({
      type: "response.output_item.added",
      sequence_number: 1,
      output_index: 0,
      item: { ...item, content: [] },
    }),
    sse({
      type: "response.output_text.delta",
      sequence_number: 2,
      item_id: "msg_1",
      output_index: 0,
      content_index: 0,
      delta: "Hi there",
    }),
    sse({ type: "response.output_item.done", sequence_number: 3, output_index: 0, item }),
    sse({ type: "response.completed", sequence_number: 4, response: final }),
  ];
}

interface UsageLine {
  request_id: string;
  status: number;
  error_code: string | null;
}

Deno.test("native final event: a response that is not a Response ends the stream failed, recorded as the upstream's, stored as failed", async () => {
  const raw = startRawUpstream();
  const good = startFakeNativeResponses();
  const dir = await Deno.makeTempDir();
  const gw = await startGateway(`
routing: { backoff_base: 5ms, backoff_max: 10ms, eject_after: 1000 }
usage: { sqlite: none, jsonl: "${dir}/usage.jsonl", spill: "${dir}/spill.jsonl", flush_interval: 20ms }
providers:
  raw: { type: openai, base_url: "${raw.url}/v1", api_key: "sk-raw", native_responses: true }
  good: { type: openai, base_url: "${good.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
models:
  chat-raw: { type: chat, targets: [ { provider: raw, model: m, retries: 0 } ] }
  chat-two: { type: chat, targets: [ { provider: raw, model: m, retries: 0 }, { provider: good, model: resp-ok } ] }
${TEST_TOKENS_YAML}`);
  const post = async (id: string, model: string) => {
    const res = await fetch(`${gw.baseURL}/responses`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TEST_TOKEN}`,
        "content-type": "application/json",
        "x-request-id": id,
      },
      body: JSON.stringify({ model, input: "Hi", stream: true }),
    });
    return { status: res.status, text: await res.text() };
  };
  let stopped = false;
  try {
    const finals = [null, [], "done", { usage: { input_tokens: 3, output_tokens: 4 } }];
    for (const [i, final] of finals.entries()) {
      const label = JSON.stringify(final);
      raw.next = { headers: { "content-type": "text/event-stream" }, chunks: streamEndingWith(final) };
      const answer = await post(`final-${i}`, "chat-raw");
      assert.equal(answer.status, 200, answer.text);
      const events = parseSse(answer.text);
      assert.deepEqual(events.slice(-2).map((e) => e.type), ["error", "response.failed"], label);
      assert.equal(events.at(-2)!.code, "upstream_invalid_response", label);
      const failed = events.at(-1)!.response as { object: string; status: string; output: unknown[] };
      assert.deepEqual([failed.object, failed.status], ["response", "failed"], `${label}: a failed Response`);
      const id = (events[0].response as { id: string }).id;
      const read = await fetch(`${gw.baseURL}/responses/${id}`, {
        headers: { authorization: `Bearer ${TEST_TOKEN}` },
      });
      assert.equal(read.status, 200, `${label}: stored as failed`);
      assert.deepEqual(await read.json(), failed, `${label}: stored as the client received it`);
    }
    // The final event first: nothing reached the client yet, so the next target answers.
    raw.next = {
      headers: { "content-type": "text/event-stream" },
      chunks: [sse({ type: "response.completed", sequence_number: 0, response: [] })],
    };
    const over = await post("final-first", "chat-two");
    assert.equal(over.status, 200, over.text);
    const events = parseSse(over.text);
    assert.equal(events.at(-1)!.type, "response.completed", over.text.slice(-300));
    assert.ok(over.text.includes(NATIVE_ANSWER.slice(0, 6)), over.text.slice(0, 300));
    await gw.stop();
    stopped = true;
    const records: UsageLine[] = (await Deno.readTextFile(`${dir}/usage.jsonl`)).trim().split("\n")
      .map((l) => JSON.parse(l));
    for (const i of finals.keys()) {
      const [record] = records.filter((r) => r.request_id === `final-${i}`);
      assert.equal(record.error_code, "upstream_invalid_response", JSON.stringify(record));
    }
    assert.equal(records.find((r) => r.request_id === "final-first")?.error_code, null);
  } finally {
    if (!stopped) await gw.stop();
    await raw.stop();
    await good.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * A native Responses answer that hands the client a call to run is kept only under `cache_tool_calls` (off by
 * default), whatever kind of call it is (lib/api/responses/client_calls.ts): a hit would hand a coding agent the
 * same shell command or patch again without the model being asked. JSON and streamed, each kind twice: two
 * misses (the upstream asked both times) without the opt-in, a miss then a hit with it.
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { jsonStep, type RawStep, sseStep, startRawUpstream, typedEvents } from "../helpers/raw_upstream.ts";

type Json = Record<string, unknown>;

const CALLS: Json[] = [
  { type: "function_call", id: "fc_1", call_id: "call_1", name: "f", arguments: "{}" },
  { type: "shell_call", id: "sh_1", call_id: "call_2", action: { commands: ["rm -rf build"] } },
  {
    type: "apply_patch_call",
    id: "ap_1",
    call_id: "call_3",
    operation: { type: "update_file", path: "a.ts", diff: "@@\n-a\n+b\n" },
  },
  { type: "local_shell_call", id: "ls_1", call_id: "call_4", action: { type: "exec", command: ["make"] } },
  { type: "mcp_approval_request", id: "mcpr_1", name: "deploy", server_label: "ops", arguments: "{}" },
  { type: "tool_search_call", id: "ts_1", call_id: "call_5", execution: "client", arguments: { q: "x" } },
];

function response(item: Json): Json {
  return {
    id: "resp_up1",
    object: "response",
    created_at: 1,
    status: "completed",
    model: "gpt-5",
    output: [{ ...item, status: "completed" }],
    usage: { input_tokens: 5, output_tokens: 3, total_tokens: 8 },
  };
}

/** The answer streamed: the item added and done, then `response.completed` with the whole Response. */
function streamed(item: Json): RawStep {
  const done = response(item);
  return sseStep(typedEvents([
    {
      type: "response.created",
      sequence_number: 0,
      response: { ...done, status: "in_progress", output: [] },
    },
    {
      type: "response.output_item.added",
      sequence_number: 1,
      output_index: 0,
      item: { ...item, status: "in_progress" },
    },
    {
      type: "response.output_item.done",
      sequence_number: 2,
      output_index: 0,
      item: { ...item, status: "completed" },
    },
    { type: "response.completed", sequence_number: 3, response: done },
  ]));
}

async function cacheStatuses(toolCalls: boolean): Promise<Record<string, string>> {
  const up = startRawUpstream();
  const gw = await startGateway(`
providers:
  native: { type: openai, base_url: "${up.url}/v1", api_key: "sk-native-0123456789", native_responses: true }
models:
  chat-resp: { type: chat, targets: [{ provider: native, model: gpt-5 }], cache: { cache_tool_calls: ${toolCalls} } }
${TEST_TOKENS_YAML}`);
  const seen: Record<string, string> = {};
  try {
    for (const stream of [false, true]) {
      for (const item of CALLS) {
        up.next = stream ? streamed(item) : jsonStep(response(item));
        const asked = up.requests.length;
        const statuses: (string | null)[] = [];
        for (let i = 0; i < 2; i++) {
          const res = await fetch(`${gw.baseURL}/responses`, {
            method: "POST",
            headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "chat-resp", input: `run ${item.type}`, stream, store: false }),
          });
          const text = await res.text();
          assert.equal(res.status, 200, text);
          assert.ok(text.includes(String(item.id)), `${item.type}: the call reaches the client`);
          statuses.push(res.headers.get("x-cache"));
        }
        seen[`${item.type}${stream ? " (stream)" : ""}`] = `${statuses.join(",")} asked ${
          up.requests.length - asked
        }`;
      }
    }
  } finally {
    await gw.stop();
    await up.stop();
  }
  return seen;
}

Deno.test("cache native client calls: a Responses answer ending in any client call is not replayed by default", async () => {
  const seen = await cacheStatuses(false);
  assert.deepEqual(seen, Object.fromEntries(Object.keys(seen).map((kind) => [kind, "MISS,MISS asked 2"])));
});

Deno.test("cache native client calls: under cache_tool_calls each kind is replayed", async () => {
  const seen = await cacheStatuses(true);
  assert.deepEqual(seen, Object.fromEntries(Object.keys(seen).map((kind) => [kind, "MISS,HIT asked 1"])));
});

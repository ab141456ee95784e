import assert from "node:assert/strict";
import { withoutCutCalls } from "./cut_calls.ts";
import type { Conversation } from "../../usage/responses_store.ts";

Deno.test("cut calls: an unfinished call and its stored output are left out, nativeBy in step, each named", () => {
  const conversation: Conversation = {
    items: [
      { type: "message", role: "user", content: "Weather?" },
      {
        id: "fc_1",
        type: "function_call",
        status: "incomplete",
        call_id: "c1",
        name: "w",
        arguments: '{"ci',
      },
      { id: "ct_2", type: "custom_tool_call", status: "completed", call_id: "c2", name: "x", input: "ok" },
      { type: "function_call_output", call_id: "c1", output: "sunny" },
      { type: "custom_tool_call_output", call_id: "c2", output: "done" },
    ],
    nativeBy: [null, "p", "p", null, null],
    upstream: null,
  };
  const { conversation: kept, callIds, dropped } = withoutCutCalls(conversation);
  assert.deepEqual(kept.items.map((item) => item.type), [
    "message",
    "custom_tool_call",
    "custom_tool_call_output",
  ]);
  assert.deepEqual(kept.nativeBy, [null, "p", null]);
  assert.deepEqual([...callIds], ["c1"]);
  assert.deepEqual(dropped, ["previous_response_id:fc_1", "previous_response_id:c1"]);
});

Deno.test("cut calls: a conversation of finished calls is kept as it is", () => {
  const conversation: Conversation = {
    items: [{
      id: "fc_1",
      type: "function_call",
      status: "completed",
      call_id: "c1",
      name: "w",
      arguments: "{}",
    }],
    nativeBy: [null],
    upstream: null,
  };
  const result = withoutCutCalls(conversation);
  assert.equal(result.conversation, conversation);
  assert.deepEqual(result.dropped, []);
});

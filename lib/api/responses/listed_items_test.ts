import assert from "node:assert/strict";
import { listedItem } from "./listed_items.ts";

Deno.test("listed items: string content becomes parts, by role; messages and calls are completed", () => {
  assert.deepEqual(listedItem({ id: "msg_1", type: "message", role: "user", content: "Hi" }), {
    id: "msg_1",
    type: "message",
    role: "user",
    content: [{ type: "input_text", text: "Hi" }],
    status: "completed",
  });
  assert.deepEqual(listedItem({ id: "msg_2", role: "assistant", content: "Hello" }).content, [
    { type: "output_text", text: "Hello", annotations: [], logprobs: [] },
  ]);
  assert.deepEqual(
    listedItem({ id: "fco_1", type: "function_call_output", call_id: "c", output: "x" }).status,
    "completed",
  );
  assert.equal(
    listedItem({
      id: "fc_1",
      type: "function_call",
      call_id: "c",
      name: "f",
      arguments: "{}",
      status: "incomplete",
    })
      .status,
    "incomplete",
    "a status given is kept",
  );
});

Deno.test("listed items: parts get what the spec requires, and keep what they had", () => {
  const assistant = listedItem({
    id: "msg_3",
    type: "message",
    role: "assistant",
    content: [{ type: "output_text", text: "a", annotations: [{ type: "url_citation" }] }, {
      type: "refusal",
      refusal: "no",
    }],
  });
  assert.deepEqual(assistant.content, [
    { type: "output_text", text: "a", annotations: [{ type: "url_citation" }], logprobs: [] },
    { type: "refusal", refusal: "no" },
  ]);
  const user = listedItem({
    id: "msg_4",
    type: "message",
    role: "user",
    content: [{ type: "input_image", image_url: "https://x/y.png" }, { type: "input_text", text: "t" }],
  });
  assert.deepEqual(user.content, [
    { type: "input_image", image_url: "https://x/y.png", detail: "auto" },
    { type: "input_text", text: "t" },
  ]);
  const reasoning = { id: "rs_1", type: "reasoning", summary: [] };
  assert.equal(listedItem(reasoning), reasoning, "other items are listed as stored");
});

import assert from "node:assert/strict";
import { chatSchemaAccepts, isPlainChatRequest, parseChatRequest } from "./request_schemas.ts";
import type { JsonObject } from "../providers/types.ts";
import { seededRandom } from "../routing/plan.ts";

Deno.test("chat fast path: everyday requests skip the schema, and are still accepted by it", () => {
  const everyday: JsonObject[] = [
    { model: "m", messages: [{ role: "user", content: "Hello" }] },
    {
      model: "chat-default",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi", name: "ann" },
        { role: "assistant", content: "Hello!" },
        { role: "user", content: "" },
      ],
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.7,
      top_p: 1,
      max_tokens: 256,
      seed: 42,
      user: "u-1",
      metadata: { anything: ["goes", 1] }, // unknown parameters pass through
    },
  ];
  for (const body of everyday) {
    assert.equal(isPlainChatRequest(body), true, JSON.stringify(body));
    assert.equal(chatSchemaAccepts(body), true);
    assert.equal(parseChatRequest(body), body);
  }
});

Deno.test("chat fast path: never accepts what the schema refuses (20,000 generated requests)", () => {
  const random = seededRandom(7);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
  const values: unknown[] = [
    null,
    true,
    false,
    0,
    1,
    -1,
    2,
    2.5,
    -2.5,
    0.5,
    1.0000001,
    20,
    21,
    128,
    129,
    2 ** 53,
    1e308,
    -0,
    "",
    "x",
    "auto",
    [],
    ["a"],
    ["a", "b", "c", "d", "e"],
    [1],
    {},
    { include_usage: true },
    { include_usage: null },
    { include_usage: "yes" },
    { type: "text" },
  ];
  const messages: unknown[] = [
    { role: "user", content: "hi" },
    { role: "user", content: "" },
    { role: "user", content: null },
    { role: "user", content: [] },
    { role: "user", content: [{ type: "text", text: "hi" }] },
    { role: "user", content: "hi", name: null },
    { role: "user", content: "hi", name: 5 },
    { role: "system", content: "s" },
    { role: "system", content: [{ type: "image_url" }] },
    { role: "developer", content: "d" },
    { role: "assistant", content: "a" },
    { role: "assistant", content: null },
    { role: "assistant", content: "a", tool_calls: [] },
    { role: "assistant", content: "a", tool_calls: null },
    { role: "tool", content: "r", tool_call_id: "" },
    { role: "tool", content: "r", tool_call_id: "c1" },
    { role: "function", content: "f", name: "fn" },
    { role: "robot", content: "x" },
    { content: "no role" },
    "a string",
    null,
    [],
  ];
  const plain = { role: "user", content: "hi" };
  const keys = [
    "stream",
    "stream_options",
    "n",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "logprobs",
    "top_logprobs",
    "seed",
    "user",
    "parallel_tool_calls",
    "stop",
    "tools",
    "tool_choice",
    "response_format",
    "logit_bias",
    "unknown_param",
  ];
  let fast = 0;
  let accepted = 0;
  for (let i = 0; i < 20_000; i++) {
    const body: JsonObject = {};
    if (random() < 0.95) body.model = random() < 0.9 ? "m" : pick(values) as string;
    if (random() < 0.95) {
      body.messages = random() < 0.9
        ? Array.from(
          { length: Math.floor(random() * 4) },
          () => random() < 0.7 ? plain : pick(messages),
        ) as JsonObject[]
        : pick(values) as JsonObject[];
    }
    const extra = Math.floor(random() * 3);
    for (let k = 0; k < extra; k++) body[pick(keys)] = pick(values) as JsonObject;
    const isPlain = isPlainChatRequest(body);
    const valid = chatSchemaAccepts(body);
    if (isPlain) fast++;
    if (valid) accepted++;
    assert.ok(!isPlain || valid, `fast path accepted what the schema refuses: ${JSON.stringify(body)}`);
  }
  // The generator reaches both sides often enough for the check to mean something.
  assert.ok(fast > 1_000, `only ${fast} requests took the fast path`);
  assert.ok(accepted - fast > 100, "the schema still accepts forms the fast path leaves to it");
});

import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import type { GatewayError } from "../errors.ts";
import {
  chatSchemaAccepts,
  isPlainChatRequest,
  parseChatRequest,
  parseEmbeddingRequest,
} from "./request_schemas.ts";
import type { JsonObject } from "../openai/types.ts";
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

/** OpenAI's spec, kept outside the repository: the tests below use it only when it is present. */
const SPEC = "/work/shared/reference/openai-openapi.yaml";

/**
 * The top-level properties and required ones of a schema in OpenAI's spec (following `allOf` references), or
 * null without the spec. Only the schemas needed are cut out of the 3 MB file and parsed.
 */
async function specParams(name: string): Promise<{ all: Set<string>; required: Set<string> } | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(SPEC);
  } catch {
    return null;
  }
  const schema = (n: string): Record<string, unknown> => {
    const start = text.indexOf(`\n    ${n}:\n`);
    if (start < 0) throw new Error(`${n} is not in the spec`);
    const rest = text.slice(start + 1);
    const end = rest.slice(1).search(/\n {4}\S/);
    return (parseYaml(end < 0 ? rest : rest.slice(0, end + 1)) as Record<string, Record<string, unknown>>)[n];
  };
  const all = new Set<string>();
  const required = new Set<string>();
  const walk = (s: Record<string, unknown>) => {
    for (const part of (s.allOf as Record<string, unknown>[] | undefined) ?? [s]) {
      const ref = part.$ref as string | undefined;
      if (ref !== undefined) {
        walk(schema(ref.split("/").at(-1)!));
        continue;
      }
      for (const key of Object.keys((part.properties as object | undefined) ?? {})) all.add(key);
      for (const key of (part.required as string[] | undefined) ?? []) required.add(key);
    }
  };
  walk(schema(name));
  return { all, required };
}

/** The chat parameters the issue found refusing null, and the ones that always took it. */
const CHAT_OPTIONAL = [
  "tools",
  "tool_choice",
  "user",
  "parallel_tool_calls",
  "response_format",
  "stream",
  "stream_options",
  "n",
  "max_tokens",
  "max_completion_tokens",
  "temperature",
  "top_p",
  "presence_penalty",
  "frequency_penalty",
  "stop",
  "logit_bias",
  "logprobs",
  "top_logprobs",
  "seed",
  "metadata",
  "store",
  "service_tier",
  "reasoning_effort",
];

Deno.test("null means omitted for every optional chat parameter, and is not forwarded", async () => {
  const spec = await specParams("CreateChatCompletionRequest");
  if (spec !== null) assert.deepEqual([...spec.required].sort(), ["messages", "model"]);
  const optional = new Set([...CHAT_OPTIONAL, ...(spec?.all ?? [])].filter((k) => !spec?.required.has(k)));
  for (const name of optional) {
    const body: JsonObject = { model: "m", messages: [{ role: "user", content: "hi" }], [name]: null };
    let parsed: JsonObject;
    try {
      parsed = parseChatRequest(body);
    } catch (err) {
      assert.fail(`${name}: null refused: ${(err as Error).message}`);
    }
    assert.ok(!(name in parsed), `${name}: null forwarded`);
    assert.ok(chatSchemaAccepts(body), name);
  }
  // All at once, as the Python SDK sends them, and a null option inside stream_options.
  const all: JsonObject = { model: "m", messages: [{ role: "user", content: "hi" }] };
  for (const name of optional) all[name] = null;
  assert.deepEqual(parseChatRequest(all), { model: "m", messages: [{ role: "user", content: "hi" }] });
  const withOptions = parseChatRequest({
    model: "m",
    messages: [{ role: "user", content: "hi" }],
    stream: true,
    stream_options: { include_usage: null },
  });
  assert.deepEqual(withOptions.stream_options, {});
});

Deno.test("null parameters: message contents keep their nulls, required ones are refused by name", () => {
  const toolTurn = {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
  };
  const parsed = parseChatRequest({ model: "m", messages: [toolTurn], tools: null });
  assert.deepEqual(parsed.messages, [toolTurn]);
  assert.ok(!("tools" in parsed));
  for (const name of ["model", "messages"]) {
    assert.throws(
      () => parseChatRequest({ model: "m", messages: [{ role: "user", content: "hi" }], [name]: null }),
      (err: GatewayError) => err.status === 400 && err.param === name && err.code === "invalid_type",
      name,
    );
  }
  assert.throws(
    () => parseEmbeddingRequest({ model: "m", input: null }),
    (err: GatewayError) => err.param === "input" && err.code === "invalid_type",
  );
  // A `__proto__` key next to a null stays a plain key (never the object's prototype).
  const body = JSON.parse(
    '{"model":"m","messages":[{"role":"user","content":"hi"}],"user":null,"__proto__":{"x":1}}',
  );
  const clean = parseChatRequest(body);
  assert.equal(Object.getPrototypeOf(clean), Object.prototype);
  assert.deepEqual(Object.keys(clean), ["model", "messages", "__proto__"]);
});

Deno.test("null means omitted for every optional embeddings parameter", async () => {
  const spec = await specParams("CreateEmbeddingRequest");
  if (spec !== null) assert.deepEqual([...spec.required].sort(), ["input", "model"]);
  const optional = new Set(["encoding_format", "dimensions", "user", ...(spec?.all ?? [])]);
  for (const name of optional) {
    if (spec?.required.has(name)) continue;
    const parsed = parseEmbeddingRequest({ model: "m", input: "hi", [name]: null });
    assert.ok(!(name in parsed), name);
  }
});

Deno.test("a custom tool's call in an assistant turn is history as a function call is, held to its shape", () => {
  const custom = { id: "call_1", type: "custom", custom: { name: "grep", input: "TODO" } };
  const turn = (call: unknown) => ({
    model: "m",
    messages: [{ role: "user", content: "find TODOs" }, {
      role: "assistant",
      content: null,
      tool_calls: [call],
    }],
  });
  assert.deepEqual(parseChatRequest(turn(custom)).messages[1], turn(custom).messages[1]);
  const refused: [unknown, string, string][] = [
    [{ ...custom, custom: { name: "grep" } }, "custom.input", "missing_required_parameter"],
    [{ ...custom, custom: { name: "", input: "x" } }, "custom.name", "invalid_value"],
    [
      { id: "call_1", type: "custom", function: { name: "f", arguments: "{}" } },
      "custom",
      "missing_required_parameter",
    ],
    [{ ...custom, type: "mcp" }, "type", "invalid_value"],
  ];
  for (const [call, param, code] of refused) {
    assert.throws(
      () => parseChatRequest(turn(call)),
      (err: GatewayError) =>
        err.status === 400 && err.param === `messages[1].tool_calls[0].${param}` && err.code === code,
      param,
    );
  }
});

/**
 * Generators of client requests for `tests/chat/fuzz_requests_test.ts`: a valid request first (so the fuzz keeps
 * reaching the code behind validation), then, often, a few mutations — a parameter set to junk (wrong types,
 * nulls, huge numbers, unicode, deep nesting), a required field removed, a message broken, the JSON text
 * damaged — and headers from the plausible to the absurd. Each generated request says whether the gateway
 * must answer it with a 200: only when nothing about it is wrong.
 *
 * @module
 */
import fc from "fast-check";
import { type Caller, type FuzzTokens, headersArb, type HeaderSpec } from "./fuzz_headers.ts";

export type { FuzzTokens, HeaderSpec };

const encoder = new TextEncoder();

// --- values -------------------------------------------------------------------------------------------------

/** Text a valid request may carry: ASCII, graphemes, lone surrogates, a word the content rules redact, a lot. */
const validText = fc.oneof(
  { weight: 8, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 20 }) },
  fc.string({ unit: "binary", maxLength: 10 }),
  fc.constantFrom("my secret-123 here", "secret-1 secret-2", "x".repeat(5_000)),
);
const nonEmptyText = validText.filter((t) => t.length > 0);

/** Nested arrays or objects `depth` deep (JSON.stringify handles a few hundred levels). */
const nested = fc.tuple(fc.integer({ min: 1, max: 300 }), fc.boolean()).map(([depth, arrays]) => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = arrays ? [value] : { a: value };
  return value;
});

/** Anything in place of a value: wrong types, nulls, huge numbers, odd strings, deep nesting. */
export const junk: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(null) },
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  fc.constantFrom(
    1e308,
    -1e308,
    Number.MAX_SAFE_INTEGER + 2,
    -(2 ** 63),
    2 ** 31,
    5e-324,
    -0,
    0.1,
    1.5,
    -1,
    0,
  ),
  validText,
  fc.constantFrom("", "a bomb here", "null", "1", "true", "auto", [], {}, [null], [""], [[]], { type: 5 }),
  fc.boolean(),
  nested,
);

/** An optional parameter: often absent, sometimes null (which means absent), else a valid value. */
const opt = <T>(valid: fc.Arbitrary<T>) =>
  fc.option(valid as fc.Arbitrary<unknown>, { freq: 4, nil: null as unknown });

// --- chat ---------------------------------------------------------------------------------------------------

const toolCall = fc.record({
  id: fc.stringMatching(/^call_[a-z0-9]{1,8}$/),
  type: fc.constant("function"),
  function: fc.record({ name: fc.constantFrom("f", "get_weather"), arguments: validText }),
});

const validMessage = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      role: fc.constantFrom("user", "system", "developer"),
      content: validText,
      name: fc.string({ maxLength: 8 }),
    }, { requiredKeys: ["role", "content"] }),
  },
  fc.record({
    role: fc.constant("user"),
    content: fc.array(
      fc.oneof(
        fc.record({ type: fc.constant("text"), text: validText }),
        fc.record({ type: fc.constant("image_url"), image_url: fc.record({ url: fc.webUrl() }) }),
      ),
      { minLength: 1, maxLength: 3 },
    ),
  }),
  fc.record({ role: fc.constant("assistant"), content: validText }),
  fc.record({
    role: fc.constant("assistant"),
    content: fc.constant(null),
    tool_calls: fc.array(toolCall, { minLength: 1, maxLength: 2 }),
  }),
  fc.record({
    role: fc.constant("tool"),
    content: validText,
    tool_call_id: fc.stringMatching(/^call_[a-z0-9]{1,8}$/),
  }),
);

const validTool = fc.record({
  type: fc.constant("function"),
  function: fc.record({
    name: fc.stringMatching(/^[a-zA-Z0-9_-]{1,64}$/),
    description: validText,
    parameters: fc.oneof(
      fc.constant({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }),
      fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 4 }), { maxKeys: 3 }),
    ),
    strict: fc.boolean(),
  }, { requiredKeys: ["name"] }),
});

/** Every optional chat parameter the generator sets, with the values a valid request may hold. */
const CHAT_PARAMS = {
  stream: opt(fc.boolean()),
  stream_options: opt(fc.record({ include_usage: opt(fc.boolean()) }, { requiredKeys: [] })),
  n: opt(fc.constant(1)), // the builtin echo model answers n=1 only
  max_tokens: opt(fc.integer({ min: 1, max: 100_000 })),
  max_completion_tokens: opt(fc.integer({ min: 1, max: 100_000 })),
  temperature: opt(fc.double({ min: 0, max: 2, noNaN: true })),
  top_p: opt(fc.double({ min: 0, max: 1, noNaN: true })),
  presence_penalty: opt(fc.double({ min: -2, max: 2, noNaN: true })),
  frequency_penalty: opt(fc.double({ min: -2, max: 2, noNaN: true })),
  stop: opt(fc.oneof(validText, fc.array(validText, { minLength: 1, maxLength: 4 }))),
  tools: opt(fc.array(validTool, { maxLength: 3 })),
  tool_choice: opt(fc.oneof(
    fc.constantFrom("none", "auto", "required"),
    fc.record({ type: fc.constant("function"), function: fc.record({ name: fc.constant("f") }) }),
  )),
  parallel_tool_calls: opt(fc.boolean()),
  response_format: opt(fc.record({ type: fc.constantFrom("text", "json_object") })),
  logit_bias: opt(fc.dictionary(fc.stringMatching(/^[0-9]{1,6}$/), fc.integer({ min: -100, max: 100 }))),
  logprobs: opt(fc.boolean()),
  top_logprobs: opt(fc.integer({ min: 0, max: 20 })),
  seed: opt(fc.integer()),
  user: opt(fc.string({ maxLength: 20 })),
  metadata: opt(fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 3 })),
  store: opt(fc.boolean()),
  reasoning_effort: opt(fc.constantFrom("low", "medium", "high")),
};

/** A chat request the gateway must accept (for a token allowed its alias). */
const validChat = fc.record({
  model: fc.constantFrom("chat-echo", "team/chat"),
  messages: fc.array(validMessage, { minLength: 1, maxLength: 4 }),
  ...CHAT_PARAMS,
}, { requiredKeys: ["model", "messages"] }).map((body) => {
  // stream_options needs stream: true (null stream_options is omitted, so it may stay).
  if (body.stream_options !== undefined && body.stream_options !== null) body.stream = true;
  // A tool_choice that forces a call needs tools (OpenAI's 400 otherwise): without them, it is left out.
  const forced = body.tool_choice != null && body.tool_choice !== "none" && body.tool_choice !== "auto";
  if (forced && !(Array.isArray(body.tools) && body.tools.length > 0)) delete body.tool_choice;
  return body as Record<string, unknown>;
});

// --- embeddings ---------------------------------------------------------------------------------------------

const tokenIds = fc.array(fc.nat(200_000), { minLength: 1, maxLength: 6 });

const validEmbedding = fc.record({
  model: fc.constant("embed-local"),
  input: fc.oneof(
    { weight: 4, arbitrary: nonEmptyText },
    fc.array(nonEmptyText, { minLength: 1, maxLength: 5 }),
    tokenIds,
    fc.array(tokenIds, { minLength: 1, maxLength: 3 }),
  ),
  encoding_format: opt(fc.constantFrom("float", "base64")),
  dimensions: opt(fc.integer({ min: 1, max: 4096 })),
  user: opt(fc.string({ maxLength: 20 })),
}, { requiredKeys: ["model", "input"] }).map((body) => body as Record<string, unknown>);

// --- responses ----------------------------------------------------------------------------------------------

const callId = fc.stringMatching(/^call_[a-z0-9]{1,8}$/);

/** A Responses message item: a string content, or parts fitting its role; `type: "message"` optional. */
const responsesMessage = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      type: fc.constant("message"),
      role: fc.constantFrom("user", "system", "developer", "assistant"),
      content: validText,
    }, { requiredKeys: ["role", "content"] }),
  },
  fc.record({
    type: fc.constant("message"),
    role: fc.constant("user"),
    content: fc.array(
      fc.oneof(
        { weight: 3, arbitrary: fc.record({ type: fc.constant("input_text"), text: validText }) },
        fc.record({
          type: fc.constant("input_image"),
          image_url: fc.webUrl(),
          detail: fc.constantFrom("auto", "low", "high"),
        }, { requiredKeys: ["type", "image_url"] }),
      ),
      { minLength: 1, maxLength: 3 },
    ),
  }, { requiredKeys: ["role", "content"] }),
  fc.record({
    type: fc.constant("message"),
    role: fc.constantFrom("assistant", "system", "developer"),
    content: fc.array(
      fc.record({ type: fc.constant("output_text"), text: validText, annotations: fc.constant([]) }),
      { minLength: 1, maxLength: 2 },
    ),
  }, { requiredKeys: ["role", "content"] }),
);

/** Any input item a valid request may hold: messages, function calls and their outputs, reasoning. */
const responsesItem = fc.oneof(
  { weight: 4, arbitrary: responsesMessage },
  fc.record({
    type: fc.constant("function_call"),
    id: fc.stringMatching(/^fc_[a-f0-9]{1,8}$/),
    call_id: callId,
    name: fc.constantFrom("f", "get_weather"),
    arguments: validText,
    status: fc.constant("completed"),
  }, { requiredKeys: ["type", "call_id", "name", "arguments"] }),
  fc.record({
    type: fc.constant("function_call_output"),
    call_id: callId,
    output: fc.oneof(
      { weight: 3, arbitrary: validText },
      fc.array(fc.record({ type: fc.constant("input_text"), text: validText }), { maxLength: 2 }),
    ),
  }),
  fc.record({ type: fc.constant("reasoning"), id: fc.constant("rs_1"), summary: fc.constant([]) }),
);

const responsesTool = fc.record({
  type: fc.constant("function"),
  name: fc.stringMatching(/^[a-zA-Z0-9_-]{1,64}$/),
  description: opt(validText),
  parameters: opt(fc.oneof(
    fc.constant({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }),
    fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 4 }), { maxKeys: 3 }),
  )),
  strict: opt(fc.boolean()),
}, { requiredKeys: ["type", "name"] });

const textFormat = fc.oneof(
  fc.constant({ type: "text" }),
  fc.constant({ type: "json_object" }),
  fc.record({
    type: fc.constant("json_schema"),
    name: fc.stringMatching(/^[a-zA-Z0-9_-]{1,20}$/),
    schema: fc.oneof(
      fc.constant({ type: "object", properties: { a: { type: "string" } } }),
      fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 3 }),
    ),
    description: validText,
    strict: fc.boolean(),
  }, { requiredKeys: ["type", "name", "schema"] }),
);

/** Every optional Responses parameter the generator sets, with the values a valid request may hold. */
const RESPONSES_PARAMS = {
  instructions: opt(validText),
  stream: opt(fc.boolean()),
  max_output_tokens: opt(fc.integer({ min: 16, max: 100_000 })), // the spec's minimum
  temperature: opt(fc.double({ min: 0, max: 2, noNaN: true })),
  top_p: opt(fc.double({ min: 0, max: 1, noNaN: true })),
  tools: opt(fc.array(responsesTool, { maxLength: 3 })),
  tool_choice: opt(fc.oneof(
    fc.constantFrom("none", "auto", "required"),
    fc.record({ type: fc.constant("function"), name: fc.constant("f") }),
  )),
  parallel_tool_calls: opt(fc.boolean()),
  text: opt(fc.record({ format: textFormat }, { requiredKeys: [] })),
  reasoning: opt(fc.record({
    effort: fc.constantFrom("low", "medium", "high"),
    summary: fc.constantFrom("auto", "concise", "detailed"),
  }, { requiredKeys: [] })),
  store: opt(fc.boolean()),
  metadata: opt(fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 3 })),
  user: opt(fc.string({ maxLength: 20 })),
  safety_identifier: opt(fc.string({ maxLength: 20 })),
  prompt_cache_key: opt(fc.string({ maxLength: 20 })),
  truncation: opt(fc.constantFrom("auto", "disabled")),
  include: opt(fc.array(fc.constantFrom("reasoning.encrypted_content", "message.output_text.logprobs"))),
};

/** Parameters only set to junk: known to the endpoint, refused or looked up when given. */
const RESPONSES_JUNK_ONLY = [
  "background",
  "previous_response_id",
  "stream_options",
  "conversation",
  "prompt",
];

/** A Responses request the gateway must accept (for a token allowed its alias). */
const validResponses = fc.record({
  model: fc.constantFrom("chat-echo", "team/chat"),
  input: fc.oneof(
    { weight: 2, arbitrary: validText },
    // Items end with a user message, so there is always something to answer.
    fc.tuple(fc.array(responsesItem, { maxLength: 4 }), responsesMessage.filter((m) => m.role === "user"))
      .map(([items, last]) => [...items, last]),
  ),
  ...RESPONSES_PARAMS,
}, { requiredKeys: ["model", "input"] }).map((body) => {
  // A tool_choice that forces a call needs a function tool (a 400 otherwise): without one, it is left out.
  const forced = body.tool_choice != null && body.tool_choice !== "none" && body.tool_choice !== "auto";
  if (forced && !(Array.isArray(body.tools) && body.tools.length > 0)) delete body.tool_choice;
  return body as Record<string, unknown>;
});

// --- messages (Anthropic) -----------------------------------------------------------------------------------

const cacheControl = opt(fc.constant({ type: "ephemeral" }));
const textBlock = fc.record({ type: fc.constant("text"), text: nonEmptyText, cache_control: cacheControl }, {
  requiredKeys: ["type", "text"],
});
const toolUseId = fc.stringMatching(/^toolu_[a-z0-9]{1,8}$/);
const imageBlock = fc.record({
  type: fc.constant("image"),
  source: fc.oneof(
    fc.record({
      type: fc.constant("base64"),
      media_type: fc.constantFrom("image/png", "image/jpeg", "image/gif", "image/webp"),
      data: fc.base64String({ minLength: 4, maxLength: 40 }),
    }),
    fc.record({ type: fc.constant("url"), url: fc.webUrl() }),
  ),
});
/** A user turn's blocks: text, sometimes an image. */
const userBlocks = fc.array(fc.oneof({ weight: 4, arbitrary: textBlock }, imageBlock), {
  minLength: 1,
  maxLength: 3,
});

/** A Messages turn: a string or text blocks; an assistant turn may call a tool, a user turn answer one. */
const messagesTurn = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      role: fc.constantFrom("user", "assistant"),
      content: fc.oneof(nonEmptyText, fc.array(textBlock, { minLength: 1, maxLength: 3 })),
    }),
  },
  fc.record({
    role: fc.constant("assistant"),
    content: fc.tuple(
      textBlock,
      toolUseId,
      fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 })),
    )
      .map(([text, id, input]) => [text, { type: "tool_use", id, name: "get_weather", input }]),
  }),
  fc.record({
    role: fc.constant("user"),
    content: fc.tuple(
      toolUseId,
      fc.oneof(validText, fc.array(textBlock, { maxLength: 2 })),
      opt(fc.boolean()),
    )
      .map(([id, content, isError]) => [{
        type: "tool_result",
        tool_use_id: id,
        content,
        ...(isError === null ? {} : { is_error: isError }),
      }]),
  }),
);

const messagesTool = fc.record({
  name: fc.stringMatching(/^[a-zA-Z0-9_-]{1,64}$/),
  description: opt(validText),
  input_schema: fc.oneof(
    fc.constant({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }),
    fc.constant({ type: "object" }),
  ),
  cache_control: cacheControl,
}, { requiredKeys: ["name", "input_schema"] });

/** Every optional Messages parameter the generator sets (thinking is set with max_tokens, in the body). */
const MESSAGES_PARAMS = {
  system: opt(fc.oneof(validText, fc.array(textBlock, { minLength: 1, maxLength: 2 }))),
  stream: opt(fc.boolean()),
  stop_sequences: opt(fc.array(nonEmptyText, { maxLength: 3 })),
  temperature: opt(fc.double({ min: 0, max: 1, noNaN: true })),
  top_p: opt(fc.double({ min: 0, max: 1, noNaN: true })),
  // Names are unique, as Anthropic requires (a translated alias refuses a repeated one as it does).
  tools: opt(fc.uniqueArray(messagesTool, { maxLength: 3, selector: (tool) => tool.name })),
  tool_choice: opt(fc.oneof(
    fc.record({ type: fc.constantFrom("auto", "any", "none") }),
    fc.record({ type: fc.constant("auto"), disable_parallel_tool_use: fc.boolean() }),
  )),
  metadata: opt(fc.record({ user_id: fc.string({ maxLength: 20 }) }, { requiredKeys: [] })),
  service_tier: opt(fc.constantFrom("auto", "standard_only")),
};

/** Parameters only set to junk: known to the endpoint (`thinking`, and what only a Claude target serves). */
const MESSAGES_JUNK_ONLY = ["thinking", "top_k", "container", "output_config", "cache_control", "speed"];

/** A Messages request the gateway must accept (for a token allowed its alias): it ends with a user turn. */
const validMessages = fc.record({
  model: fc.constantFrom("chat-echo", "team/chat"),
  max_tokens: fc.integer({ min: 1, max: 100_000 }),
  turns: fc.array(messagesTurn, { maxLength: 3 }),
  last: fc.oneof(nonEmptyText, userBlocks),
  thinking: fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    fc.constant({ type: "disabled" }),
    fc.integer({ min: 1024, max: 20_000 }).map((budget) => ({ type: "enabled", budget_tokens: budget })),
  ),
  params: fc.record(MESSAGES_PARAMS, { requiredKeys: [] }),
}).map(({ model, max_tokens, turns, last, thinking, params }) => {
  const body: Record<string, unknown> = {
    model,
    max_tokens,
    messages: [...turns, { role: "user", content: last }],
    ...params,
  };
  if (thinking !== undefined) body.thinking = thinking;
  if (thinking?.type === "enabled" && max_tokens <= thinking.budget_tokens) {
    body.max_tokens = thinking.budget_tokens + 1 + (max_tokens % 1000);
  }
  return body;
});

/** A count_tokens request: a Messages request without what counting does not take. */
const validCount = validMessages.map((
  {
    max_tokens: _,
    stream: _s,
    stop_sequences: _q,
    temperature: _t,
    top_p: _p,
    metadata: _m,
    service_tier: _v,
    ...body
  },
) => body);

// --- mutations ----------------------------------------------------------------------------------------------

/** One change to a valid body; `keepsValid` ones leave it valid. */
type Mutation =
  | { kind: "set"; key: string; value: unknown }
  | { kind: "delete"; key: string }
  | { kind: "message"; index: number; field: string; value: unknown }
  | { kind: "extra"; key: string; value: unknown };

/** Where an endpoint keeps its list of messages (or items), which "message" mutations break. */
interface Shape {
  list: string;
  fields: readonly string[];
  /** Whether an unknown top-level parameter is passed through (chat) rather than refused (Responses). */
  extrasPass: boolean;
}

const CHAT_SHAPE: Shape = {
  list: "messages",
  fields: ["role", "content", "name", "tool_calls", "tool_call_id", "*"],
  extrasPass: true,
};
const MESSAGES_SHAPE: Shape = {
  list: "messages",
  fields: ["role", "content", "*"],
  extrasPass: false,
};
const RESPONSES_SHAPE: Shape = {
  list: "input",
  fields: ["type", "role", "content", "call_id", "name", "arguments", "output", "*"],
  extrasPass: false,
};

function mutationArb(
  params: readonly string[],
  required: readonly string[],
  shape: Shape,
): fc.Arbitrary<Mutation> {
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant("set" as const),
        key: fc.constantFrom(...params, ...required),
        value: junk,
      }),
    },
    fc.record({ kind: fc.constant("delete" as const), key: fc.constantFrom(...required) }),
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant("message" as const),
        index: fc.nat(4),
        field: fc.constantFrom(...shape.fields),
        value: junk,
      }),
    },
    fc.record({
      kind: fc.constant("extra" as const),
      key: fc.oneof(
        fc.string({ maxLength: 12 }).map((k) => `x_${k}`),
        fc.constantFrom("__proto__", "constructor", "toString", "hasOwnProperty"),
      ),
      value: fc.jsonValue({ maxDepth: 3 }),
    }),
  );
}

/** Applies `mutation` to `body` (in place); returns whether the body is still valid. */
function mutate(body: Record<string, unknown>, mutation: Mutation, shape: Shape): boolean {
  switch (mutation.kind) {
    case "set":
      // defineProperty: a `__proto__` key must stay a plain key, as JSON.parse would make it.
      Object.defineProperty(body, mutation.key, {
        value: mutation.value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
      return false;
    case "delete":
      delete body[mutation.key];
      return false;
    case "message": {
      const messages = body[shape.list];
      if (!Array.isArray(messages) || messages.length === 0) return false;
      const i = mutation.index % messages.length;
      if (mutation.field === "*") messages[i] = mutation.value;
      else messages[i] = { ...(messages[i] as object), [mutation.field]: mutation.value };
      return false;
    }
    case "extra":
      Object.defineProperty(body, mutation.key, {
        value: mutation.value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
      // Unknown parameters pass through chat (the well-known property names are plain keys in JSON); the
      // Responses endpoint refuses them, as OpenAI does.
      return shape.extrasPass;
  }
}

/** What becomes of a body's JSON text on its way: usually nothing, sometimes damage. */
export const damageArb = fc.oneof(
  { weight: 30, arbitrary: fc.constant({ kind: "none" as const }) },
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant("insert" as const),
    at: fc.nat(),
    text: fc.string({ minLength: 1, maxLength: 3 }),
  }),
  fc.record({ kind: fc.constant("byte" as const), at: fc.nat(), byte: fc.integer({ min: 0x80, max: 0xff }) }),
  fc.record({ kind: fc.constant("wrap" as const), depth: fc.integer({ min: 1, max: 100_000 }) }),
  fc.record({ kind: fc.constant("nest" as const), depth: fc.integer({ min: 60, max: 100_000 }) }),
  fc.record({
    kind: fc.constant("replace" as const),
    text: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  }),
  fc.constantFrom(
    { kind: "replace" as const, text: "" },
    { kind: "replace" as const, text: "\uFEFF{}" },
    { kind: "replace" as const, text: "{" },
    { kind: "replace" as const, text: "null" },
    {
      kind: "replace" as const,
      text: '{"model":"chat-echo","messages":[{"role":"user","content":"hi"}]}\n{}',
    },
    { kind: "replace" as const, text: `{"a":"${"\\".repeat(101)}"}` },
    { kind: "replace" as const, text: '{"a":"\\u12"}' },
  ),
);
export type Damage = typeof damageArb extends fc.Arbitrary<infer T> ? T : never;

/** The body's bytes: its JSON, then the damage. */
export function damaged(json: string, damage: Damage): Uint8Array<ArrayBuffer> {
  switch (damage.kind) {
    case "none":
      return encoder.encode(json);
    case "truncate":
      return encoder.encode(json.slice(0, damage.at % json.length));
    case "insert": {
      const at = damage.at % (json.length + 1);
      return encoder.encode(json.slice(0, at) + damage.text + json.slice(at));
    }
    case "byte": {
      const bytes = encoder.encode(json);
      bytes[damage.at % bytes.length] = damage.byte;
      return bytes;
    }
    case "wrap": // arrays around the body: refused on depth, or on shape when shallow
      return encoder.encode(`${"[".repeat(damage.depth)}${json}${"]".repeat(damage.depth)}`);
    case "nest": // a deep value inside the body: refused on depth
      return encoder.encode(
        `{"x_deep":${"[".repeat(damage.depth)}${"]".repeat(damage.depth)},${json.slice(1)}`,
      );
    case "replace":
      return encoder.encode(damage.text);
  }
}

// --- requests -----------------------------------------------------------------------------------------------

/**
 * One generated request; `valid` means the gateway must answer it with a 200, `expect` names the error it
 * must answer with when that is certain.
 */
export interface GeneratedRequest {
  method: string;
  path: string;
  body?: Uint8Array<ArrayBuffer>;
  spec: HeaderSpec;
  valid: boolean;
  expect?: { status: number; code: string };
}

/** The gateway's default `server.max_json_depth`. */
export const MAX_JSON_DEPTH = 64;

/** How deeply `text` (valid JSON) nests arrays and objects: the plain character-by-character way. */
export function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "[" || c === "{") deepest = Math.max(deepest, ++depth);
    else if (c === "]" || c === "}") depth--;
  }
  return deepest;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** `bytes` as text, or null when they are not UTF-8. */
export function utf8(bytes: Uint8Array): string | null {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return null;
  }
}

export function wellFormed(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const CHAT_REQUIRED = ["model", "messages"];
const EMBEDDING_REQUIRED = ["model", "input"];
const RESPONSES_REQUIRED = ["model", "input"];
const MESSAGES_REQUIRED = ["model", "max_tokens", "messages"];

/** Whether `caller` may use `alias` with the fuzz config's tokens. */
function allowed(caller: Caller, alias: unknown): boolean {
  if (caller === "client") return true;
  if (caller === "limited") return typeof alias === "string" && /^(team\/|embed-)/.test(alias);
  return false;
}

/** POST requests to `path` with bodies from `valid` bodies and their mutations. */
function postArb(
  path: string,
  valid: fc.Arbitrary<Record<string, unknown>>,
  params: readonly string[],
  required: readonly string[],
  tokens: FuzzTokens,
  shape: Shape = CHAT_SHAPE,
): fc.Arbitrary<GeneratedRequest> {
  return fc.record({
    body: valid,
    mutations: fc.oneof(
      { weight: 2, arbitrary: fc.constant([] as Mutation[]) },
      {
        weight: 3,
        arbitrary: fc.array(mutationArb(params, required, shape), { minLength: 1, maxLength: 3 }),
      },
    ),
    damage: damageArb,
    spec: headersArb(tokens),
  }).map(({ body, mutations, damage, spec }) => {
    let valid = true;
    for (const mutation of mutations) valid = mutate(body, mutation, shape) && valid;
    const bytes = damaged(JSON.stringify(body), damage);
    const readable = spec.contentType.json &&
      (spec.contentLength === "exact" || spec.contentLength === "none") &&
      (spec.authorization.caller === "client" || spec.authorization.caller === "limited");
    valid &&= readable && damage.kind === "none" && allowed(spec.authorization.caller, body.model);
    // Well-formed JSON nested past the limit is refused as such, whatever else is wrong inside it.
    let expect: GeneratedRequest["expect"];
    const text = readable ? utf8(bytes) : null;
    if (text !== null) {
      if (nestingDepth(text) > MAX_JSON_DEPTH && wellFormed(text)) {
        expect = { status: 400, code: "json_too_deep" };
        valid = false;
      }
    }
    return { method: "POST", path, body: bytes, spec, valid, expect };
  });
}

export const chatRequestArb = (tokens: FuzzTokens) =>
  postArb("/v1/chat/completions", validChat, Object.keys(CHAT_PARAMS), CHAT_REQUIRED, tokens);

export const embeddingRequestArb = (tokens: FuzzTokens) =>
  postArb(
    "/v1/embeddings",
    validEmbedding,
    ["encoding_format", "dimensions", "user"],
    EMBEDDING_REQUIRED,
    tokens,
  );

export const responsesRequestArb = (tokens: FuzzTokens) =>
  postArb(
    "/v1/responses",
    validResponses,
    [...Object.keys(RESPONSES_PARAMS), ...RESPONSES_JUNK_ONLY],
    RESPONSES_REQUIRED,
    tokens,
    RESPONSES_SHAPE,
  );

export const messagesRequestArb = (tokens: FuzzTokens) =>
  postArb(
    "/v1/messages",
    validMessages,
    [...Object.keys(MESSAGES_PARAMS), ...MESSAGES_JUNK_ONLY],
    MESSAGES_REQUIRED,
    tokens,
    MESSAGES_SHAPE,
  );

export const messagesCountRequestArb = (tokens: FuzzTokens) =>
  postArb(
    "/v1/messages/count_tokens",
    validCount,
    ["system", "tools", "tool_choice", ...MESSAGES_JUNK_ONLY],
    ["model", "messages"],
    tokens,
    MESSAGES_SHAPE,
  );

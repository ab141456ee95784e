/**
 * Validation of client requests against OpenAI's documented shapes. Only what the gateway relies on or what
 * OpenAI itself would reject is checked; every other parameter passes through to the provider untouched,
 * so new OpenAI features keep working without a gateway release. What a refusal says is in request_errors.ts.
 *
 * @module
 */
import { z } from "zod";
import { invalidRequest } from "../errors.ts";
import { type ChatRequest, type EmbeddingRequest, isObject, type JsonObject } from "../openai/types.ts";
import { DEC, INT, toRequestError } from "./request_errors.ts";

const int = () => z.number().int();

/** A numeric parameter's kind and bounds (inclusive). */
interface Bounds {
  readonly kind: typeof INT | typeof DEC;
  readonly min: number;
  readonly max?: number;
}

/** The bounded numeric chat parameters: the one list both the schema and the fast path check against. */
const CHAT_BOUNDS = {
  n: { kind: INT, min: 1, max: 128 },
  max_tokens: { kind: INT, min: 1 },
  max_completion_tokens: { kind: INT, min: 1 },
  temperature: { kind: DEC, min: 0, max: 2 },
  top_p: { kind: DEC, min: 0, max: 1 },
  presence_penalty: { kind: DEC, min: -2, max: 2 },
  frequency_penalty: { kind: DEC, min: -2, max: 2 },
  top_logprobs: { kind: INT, min: 0, max: 20 },
} as const satisfies Record<string, Bounds>;

/** The schema of a number within `b`. */
function bounded(b: Bounds) {
  const atLeast = (b.kind === INT ? int() : z.number()).min(b.min, b.kind);
  return b.max === undefined ? atLeast : atLeast.max(b.max, b.kind);
}

const textPart = z.looseObject({ type: z.literal("text"), text: z.string() });
/** Any typed content part (text, image_url, input_audio, file, refusal …): vendors check the rest. */
const contentPart = z.looseObject({ type: z.string().min(1) });
const partsOrText = z.union([z.string(), z.array(contentPart).min(1)]);
const textOnly = z.union([z.string(), z.array(textPart).min(1)]);

/**
 * An assistant turn's tool call, of either kind OpenAI answers with (ChatCompletionMessageToolCalls): a function
 * call, or a custom (freeform) tool's call, whose input is raw text. A client sends back the turn the model
 * answered, so both must be taken as history.
 */
const toolCall = z.discriminatedUnion("type", [
  z.looseObject({
    id: z.string().min(1),
    type: z.literal("function"),
    function: z.looseObject({ name: z.string().min(1), arguments: z.string() }),
  }),
  z.looseObject({
    id: z.string().min(1),
    type: z.literal("custom"),
    custom: z.looseObject({ name: z.string().min(1), input: z.string() }),
  }),
]);

const message = z.discriminatedUnion("role", [
  z.looseObject({ role: z.literal("system"), content: textOnly, name: z.string().optional() }),
  z.looseObject({ role: z.literal("developer"), content: textOnly, name: z.string().optional() }),
  z.looseObject({ role: z.literal("user"), content: partsOrText, name: z.string().optional() }),
  z.looseObject({
    role: z.literal("assistant"),
    content: z.union([z.string(), z.array(contentPart), z.null()]).optional(),
    tool_calls: z.array(toolCall).optional(),
    name: z.string().optional(),
  }),
  z.looseObject({ role: z.literal("tool"), content: partsOrText, tool_call_id: z.string().min(1) }),
  z.looseObject({ role: z.literal("function"), content: z.string().nullable(), name: z.string().min(1) }),
]);

const tool = z.looseObject({
  type: z.string().min(1),
  function: z.looseObject({
    name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, "must be 1-64 letters, digits, _ or -"),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }).optional(),
});

/**
 * The chat request. Optional parameters are not nullable here: {@linkcode withoutNullOptions} has removed
 * every null one before the schema runs.
 */
const chatSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(message).min(1),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).optional(),
  n: bounded(CHAT_BOUNDS.n).optional(),
  max_tokens: bounded(CHAT_BOUNDS.max_tokens).optional(),
  max_completion_tokens: bounded(CHAT_BOUNDS.max_completion_tokens).optional(),
  temperature: bounded(CHAT_BOUNDS.temperature).optional(),
  top_p: bounded(CHAT_BOUNDS.top_p).optional(),
  presence_penalty: bounded(CHAT_BOUNDS.presence_penalty).optional(),
  frequency_penalty: bounded(CHAT_BOUNDS.frequency_penalty).optional(),
  stop: z.union([z.string(), z.array(z.string()).min(1).max(4)]).optional(),
  tools: z.array(tool).optional(),
  tool_choice: z.union([z.enum(["none", "auto", "required"]), z.looseObject({ type: z.string() })])
    .optional(),
  parallel_tool_calls: z.boolean().optional(),
  response_format: z.looseObject({ type: z.string() }).optional(),
  logit_bias: z.record(z.string(), z.number()).optional(),
  logprobs: z.boolean().optional(),
  top_logprobs: bounded(CHAT_BOUNDS.top_logprobs).optional(),
  seed: int().optional(),
  user: z.string().optional(),
});

/** A number the schema's `int()` accepts. */
const isInt = (v: unknown): v is number => Number.isSafeInteger(v);
const isNum = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
/** Whether `v` is a number of `b`'s kind within its bounds: what {@linkcode bounded} accepts. */
const within = (b: Bounds) => (v: unknown): boolean =>
  isNum(v) && (b.kind !== INT || isInt(v)) && v >= b.min && (b.max === undefined || v <= b.max);

/**
 * Plain-text messages, the common case: the roles whose content may be a plain string, with a string content
 * (and a string name when there is one). Anything else (content parts, tool calls, tool results) is left to
 * the schema.
 */
function isPlainMessage(m: unknown): boolean {
  if (m === null || typeof m !== "object" || Array.isArray(m)) return false;
  const message = m as JsonObject;
  const role = message.role;
  if (role !== "user" && role !== "system" && role !== "developer" && role !== "assistant") return false;
  if (message.name !== undefined && typeof message.name !== "string") return false;
  if (role === "assistant") return message.tool_calls === undefined && typeof message.content === "string";
  return typeof message.content === "string";
}

/** The optional parameters the fast path checks itself, each with the schema's condition. */
const PLAIN_PARAMS: readonly (readonly [string, (v: unknown) => boolean])[] = [
  ["stream", (v) => typeof v === "boolean"],
  ...Object.entries(CHAT_BOUNDS).map(([name, b]) => [name, within(b)] as const),
  ["logprobs", (v) => typeof v === "boolean"],
  ["seed", isInt],
  ["user", (v) => typeof v === "string"],
  ["parallel_tool_calls", (v) => typeof v === "boolean"],
  [
    "stream_options",
    (v) =>
      v !== null && typeof v === "object" && !Array.isArray(v) &&
      ((v as JsonObject).include_usage == null || typeof (v as JsonObject).include_usage === "boolean"),
  ],
];

/** Parameters whose shapes the fast path does not check: when one is present, the schema decides. */
const SCHEMA_PARAMS = ["stop", "tools", "tool_choice", "response_format", "logit_bias"] as const;

/**
 * True only for a request the chat schema certainly accepts: a model, plain-text messages and simple
 * parameters within their bounds. Most requests are like that, and this check costs a fraction of running
 * the schema (which was ~7% of the gateway's time per request on Bun). It may say false for a valid request
 * — the schema then runs as before — but never true for one the validation would refuse
 * (`request_schemas_test.ts` checks that on generated requests). Like the validation, it takes a null
 * optional parameter for an omitted one.
 */
export function isPlainChatRequest(body: JsonObject): boolean {
  if (typeof body.model !== "string" || body.model === "") return false;
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) return false;
  for (const m of messages) if (!isPlainMessage(m)) return false;
  for (const [name, valid] of PLAIN_PARAMS) {
    const v = body[name];
    if (v != null && !valid(v)) return false;
  }
  for (const name of SCHEMA_PARAMS) if (body[name] != null) return false;
  return true;
}

/** Whether the full validation accepts `body` (for tests that hold the fast path to it). */
export function chatSchemaAccepts(body: JsonObject): boolean {
  return chatSchema.safeParse(withoutNullOptions(body, CHAT_REQUIRED)).success;
}

/** The parameters each endpoint requires; every other top-level parameter is optional. */
const CHAT_REQUIRED: ReadonlySet<string> = new Set(["model", "messages"]);
const EMBEDDING_REQUIRED: ReadonlySet<string> = new Set(["model", "input"]);

/**
 * Optional parameters that are objects of options themselves: a null option inside one is omitted too. (Not
 * message or tool contents, where a null can mean something, e.g. an assistant message's `content: null`.)
 */
const OPTION_OBJECTS: readonly string[] = ["stream_options"];

function hasNull(object: JsonObject, keep: ReadonlySet<string> | null): boolean {
  for (const key in object) if (object[key] === null && (keep === null || !keep.has(key))) return true;
  return false;
}

function dropNulls(object: JsonObject, keep: ReadonlySet<string> | null): JsonObject {
  // fromEntries defines own properties, so a `__proto__` key stays a plain key.
  return Object.fromEntries(
    Object.entries(object).filter(([key, v]) => v !== null || (keep !== null && keep.has(key))),
  ) as JsonObject;
}

/**
 * OpenAI treats a null optional parameter as omitted, and its SDKs send them (the Python SDK sends
 * `"tools": null` for `tools=None`); some vendors refuse them. So the one rule, for every endpoint: a null
 * top-level parameter that is not `required`, or a null option inside an {@linkcode OPTION_OBJECTS} one, is
 * removed before validation, and the provider never sees it. A null required parameter stays, to be refused
 * by name. Returns `body` itself when there is nothing to remove (the common case: no copy).
 */
export function withoutNullOptions(body: JsonObject, required: ReadonlySet<string>): JsonObject {
  let dirty = hasNull(body, required);
  if (!dirty) {
    for (const name of OPTION_OBJECTS) {
      const options = body[name];
      if (isObject(options) && hasNull(options, null)) dirty = true;
    }
    if (!dirty) return body;
  }
  const out = dropNulls(body, required);
  for (const name of OPTION_OBJECTS) {
    const options = out[name];
    if (isObject(options) && hasNull(options, null)) out[name] = dropNulls(options, null);
  }
  return out;
}

const MAX_INPUTS = 2048;
const tokenId = int().min(0, INT);
/**
 * Embedding inputs as OpenAI's spec bounds them: one token array of at most 2,048 ids, or at most 2,048 token
 * arrays, each of any length (the model's context bounds it: LangChain sends chunks of 8,191 ids this way).
 */
const embeddingSchema = z.looseObject({
  model: z.string().min(1),
  input: z.union([
    z.string().min(1),
    z.array(z.string().min(1)).min(1).max(MAX_INPUTS),
    z.array(tokenId).min(1).max(MAX_INPUTS),
    z.array(z.array(tokenId).min(1)).min(1).max(MAX_INPUTS),
  ]),
  encoding_format: z.enum(["float", "base64"]).optional(),
  dimensions: int().min(1, INT).optional(),
  user: z.string().optional(),
});

/**
 * Validates a chat completion request; throws a 400 `GatewayError` naming the first bad `param`. Returns the
 * request without its null optional parameters ({@linkcode withoutNullOptions}).
 */
export function parseChatRequest(given: JsonObject): ChatRequest {
  const body = withoutNullOptions(given, CHAT_REQUIRED);
  if (!isPlainChatRequest(body)) {
    const result = chatSchema.safeParse(body);
    if (!result.success) throw toRequestError(body, result.error.issues[0]);
  }
  if (body.stream_options !== undefined && body.stream !== true) {
    throw invalidRequest(
      "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
      "stream_options",
      "invalid_value",
    );
  }
  if (body.tool_choice !== undefined) checkToolChoice(body);
  if (body.response_format !== undefined) checkResponseFormat(body.response_format as JsonObject);
  // Validation keeps every key the client sent (loose objects) but the null options, and adds none.
  return body as ChatRequest;
}

/**
 * A `tool_choice` that forces a call (`required`, a named function, …) needs tools to call: OpenAI answers 400
 * without them, and a vendor translation would leave the choice out and answer in text. `auto` and `none`
 * force nothing and pass.
 */
function checkToolChoice(body: JsonObject): void {
  if (body.tool_choice === "auto" || body.tool_choice === "none") return;
  if (Array.isArray(body.tools) && body.tools.length > 0) return;
  throw invalidRequest(
    "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
    "tool_choice",
  );
}

/** A `json_schema` response format without its `json_schema` object: OpenAI's 400, not a free-form answer. */
function checkResponseFormat(format: JsonObject): void {
  if (format.type !== "json_schema" || isObject(format.json_schema)) return;
  throw invalidRequest(
    format.json_schema === undefined || format.json_schema === null
      ? "Missing required parameter: 'response_format.json_schema'."
      : "Invalid type for 'response_format.json_schema': expected an object.",
    "response_format.json_schema",
    format.json_schema == null ? "missing_required_parameter" : "invalid_type",
  );
}

/** Validates an embeddings request like {@linkcode parseChatRequest}. */
export function parseEmbeddingRequest(given: JsonObject): EmbeddingRequest {
  const body = withoutNullOptions(given, EMBEDDING_REQUIRED);
  const result = embeddingSchema.safeParse(body);
  if (!result.success) throw toRequestError(body, result.error.issues[0]);
  return body as EmbeddingRequest;
}

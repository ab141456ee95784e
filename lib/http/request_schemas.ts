/**
 * Validation of client requests against OpenAI's documented shapes. Only what the gateway relies on or what
 * OpenAI itself would reject is checked; every other parameter passes through to the provider untouched,
 * so new OpenAI features keep working without a gateway release.
 *
 * @module
 */
import { z } from "zod";
import { invalidRequest, printable } from "../errors.ts";
import type { ChatRequest, EmbeddingRequest, JsonObject } from "../openai/types.ts";

/**
 * Bound-check messages that tell {@linkcode toRequestError} whether a number is an integer or a decimal
 * parameter: OpenAI's codes say so (`integer_below_min_value`, `decimal_above_max_value`), zod's issues do not.
 */
const INT = "integer";
const DEC = "decimal";
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

const toolCall = z.looseObject({
  id: z.string().min(1),
  type: z.literal("function"),
  function: z.looseObject({ name: z.string().min(1), arguments: z.string() }),
});

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

const isObject = (v: unknown): v is JsonObject => v !== null && typeof v === "object" && !Array.isArray(v);

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
const tokenIds = z.array(int().min(0, INT)).min(1).max(MAX_INPUTS);
const embeddingSchema = z.looseObject({
  model: z.string().min(1),
  input: z.union([
    z.string().min(1),
    z.array(z.string().min(1)).min(1).max(MAX_INPUTS),
    tokenIds,
    z.array(tokenIds).min(1).max(MAX_INPUTS),
  ]),
  encoding_format: z.enum(["float", "base64"]).optional(),
  dimensions: int().min(1, INT).optional(),
  user: z.string().optional(),
});

/** `messages[0].content`: the `param` notation OpenAI uses in its errors. */
export function toParam(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else out += out === "" ? String(key) : `.${String(key)}`;
  }
  return out;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return "a number out of range";
    return Number.isInteger(value) ? "an integer" : "a decimal";
  }
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}

/** How far into the value a union branch got before failing: later indexes and deeper paths win. */
function compareProgress(a: readonly PropertyKey[], b: readonly PropertyKey[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (typeof x === "number" && typeof y === "number" && x !== y) return x - y;
  }
  return a.length - b.length;
}

/**
 * Replaces a plain (non-discriminated) union failure by the issue of the branch the client evidently meant:
 * a branch that accepted the value's type and got furthest into it. `stop: [5 strings]` thus reports the
 * array's length, not "an array is not an accepted form". Returns the issue unchanged when every branch
 * rejected the type itself.
 */
function meantIssue(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== "invalid_union" || "discriminator" in issue && issue.discriminator !== undefined) {
    return issue;
  }
  let best: z.core.$ZodIssue | undefined;
  for (const branch of issue.errors) {
    const first = branch[0];
    if (first === undefined) continue;
    // A branch that rejected the value's type itself is not the one the client meant.
    if (branch.some((i) => i.code === "invalid_type" && i.path.length === 0)) continue;
    if (best === undefined || compareProgress(first.path, best.path) > 0) best = first;
  }
  if (best === undefined) return issue;
  return meantIssue({ ...best, path: [...issue.path, ...best.path] } as z.core.$ZodIssue);
}

/** The types a union accepts, from its branches' root type errors: "string or array". */
function unionExpected(issue: z.core.$ZodIssueInvalidUnion): string {
  const expected = issue.errors.flatMap((branch) =>
    branch.flatMap((i) => (i.code === "invalid_type" && i.path.length === 0 ? [String(i.expected)] : []))
  );
  const unique = [...new Set(expected)];
  return unique.length > 1 ? `one of ${unique.join(" or ")}` : unique[0] ?? "another form";
}

/** `integer` or `decimal`, as OpenAI names a number's kind in its bound errors. */
function numberKind(issue: z.core.$ZodIssueTooSmall | z.core.$ZodIssueTooBig, value: unknown): string {
  if (issue.message === INT || issue.message === DEC) return issue.message;
  return Number.isInteger(value) ? INT : DEC;
}

/** Turns the first zod issue into the 400 OpenAI would send, naming the offending `param`. */
function toRequestError(body: JsonObject, first: z.core.$ZodIssue) {
  const issue = meantIssue(first);
  // zod puts a discriminated union's key (`role`) at the end of the path; older versions left it off.
  const path = issue.code === "invalid_union" && issue.discriminator !== undefined &&
      issue.path.at(-1) !== issue.discriminator
    ? [...issue.path, issue.discriminator]
    : issue.path;
  const param = toParam(path);
  const value = valueAt(body, path);
  if (value === undefined) {
    return invalidRequest(`Missing required parameter: '${param}'.`, param, "missing_required_parameter");
  }
  switch (issue.code) {
    case "invalid_type":
      return invalidRequest(
        `Invalid type for '${param}': expected ${issue.expected}, but got ${describe(value)} instead.`,
        param,
        "invalid_type",
      );
    case "too_small": {
      const min = String(issue.minimum);
      if (Array.isArray(value)) {
        if (value.length === 0) {
          return invalidRequest(
            `Invalid '${param}': empty array. Expected an array with minimum length ${min}, ` +
              "but got an empty array instead.",
            param,
            "empty_array",
          );
        }
        return invalidRequest(
          `Invalid '${param}': array too short. Expected an array with minimum length ${min}, ` +
            `but got an array with length ${value.length} instead.`,
          param,
          "array_below_min_length",
        );
      }
      if (typeof value === "string") {
        return invalidRequest(
          value === ""
            ? `Invalid '${param}': empty string. Expected a string with minimum length ${min}, ` +
              "but got an empty string instead."
            : `Invalid '${param}': string too short. Expected a string with minimum length ${min}, ` +
              `but got a string with length ${value.length} instead.`,
          param,
          "invalid_value",
        );
      }
      const kind = numberKind(issue, value);
      return invalidRequest(
        `Invalid '${param}': ${kind} below minimum value. Expected a value >= ${min}, ` +
          `but got ${value} instead.`,
        param,
        `${kind}_below_min_value`,
      );
    }
    case "too_big": {
      const max = String(issue.maximum);
      if (Array.isArray(value)) {
        return invalidRequest(
          `Invalid '${param}': array too long. Expected an array with maximum length ${max}, ` +
            `but got an array with length ${value.length} instead.`,
          param,
          "array_above_max_length",
        );
      }
      if (typeof value === "string") {
        return invalidRequest(
          `Invalid '${param}': string too long. Expected a string with maximum length ${max}, ` +
            `but got a string with length ${value.length} instead.`,
          param,
          "string_above_max_length",
        );
      }
      const kind = numberKind(issue, value);
      return invalidRequest(
        `Invalid '${param}': ${kind} above maximum value. Expected a value <= ${max}, ` +
          `but got ${value} instead.`,
        param,
        `${kind}_above_max_value`,
      );
    }
    case "invalid_value":
      return invalidRequest(
        `Invalid value for '${param}'. Supported values are: ${
          issue.values.map((v) => `'${String(v)}'`).join(", ")
        }.`,
        param,
        "invalid_value",
      );
    case "invalid_union": {
      // A discriminated union: the value at `messages[i].role` is not one of the roles.
      if (issue.discriminator !== undefined && "options" in issue && Array.isArray(issue.options)) {
        const supported = (issue.options as unknown[]).map((o) => `'${String(o)}'`).join(", ");
        if (typeof value !== "string") {
          return invalidRequest(
            `Invalid type for '${param}': expected one of ${supported}, but got ${describe(value)} instead.`,
            param,
            "invalid_type",
          );
        }
        return invalidRequest(
          `Invalid value for '${param}': '${printable(value)}'. Supported values are: ${supported}.`,
          param,
          "invalid_value",
        );
      }
      return invalidRequest(
        `Invalid type for '${param}': expected ${unionExpected(issue)}, but got ${describe(value)} instead.`,
        param,
        "invalid_type",
      );
    }
    default:
      return invalidRequest(`Invalid '${param}': ${issue.message}.`, param, "invalid_value");
  }
}

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
  // Validation keeps every key the client sent (loose objects) but the null options, and adds none.
  return body as ChatRequest;
}

/** Validates an embeddings request like {@linkcode parseChatRequest}. */
export function parseEmbeddingRequest(given: JsonObject): EmbeddingRequest {
  const body = withoutNullOptions(given, EMBEDDING_REQUIRED);
  const result = embeddingSchema.safeParse(body);
  if (!result.success) throw toRequestError(body, result.error.issues[0]);
  return body as EmbeddingRequest;
}

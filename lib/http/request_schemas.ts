/**
 * Validation of client requests against OpenAI's documented shapes. Only what the gateway relies on or what
 * OpenAI itself would reject is checked; every other parameter passes through to the provider untouched,
 * so new OpenAI features keep working without a gateway release.
 *
 * @module
 */
import { z } from "zod";
import { invalidRequest } from "../errors.ts";
import type { ChatRequest, EmbeddingRequest, JsonObject } from "../providers/types.ts";

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

const chatSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(message).min(1),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  n: z.number().int().min(1).max(128).nullable().optional(),
  max_tokens: z.number().int().min(1).nullable().optional(),
  max_completion_tokens: z.number().int().min(1).nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  presence_penalty: z.number().min(-2).max(2).nullable().optional(),
  frequency_penalty: z.number().min(-2).max(2).nullable().optional(),
  stop: z.union([z.string(), z.array(z.string()).min(1).max(4)]).nullable().optional(),
  tools: z.array(tool).optional(),
  tool_choice: z.union([z.enum(["none", "auto", "required"]), z.looseObject({ type: z.string() })])
    .optional(),
  parallel_tool_calls: z.boolean().optional(),
  response_format: z.looseObject({ type: z.string() }).optional(),
  logit_bias: z.record(z.string(), z.number()).nullable().optional(),
  logprobs: z.boolean().nullable().optional(),
  top_logprobs: z.number().int().min(0).max(20).nullable().optional(),
  seed: z.number().int().nullable().optional(),
  user: z.string().optional(),
});

const MAX_INPUTS = 2048;
const tokenIds = z.array(z.number().int().nonnegative()).min(1).max(MAX_INPUTS);
const embeddingSchema = z.looseObject({
  model: z.string().min(1),
  input: z.union([
    z.string().min(1),
    z.array(z.string().min(1)).min(1).max(MAX_INPUTS),
    tokenIds,
    z.array(tokenIds).min(1).max(MAX_INPUTS),
  ]),
  encoding_format: z.enum(["float", "base64"]).optional(),
  dimensions: z.number().int().min(1).optional(),
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
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a decimal";
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}

/** Turns the first zod issue into the 400 OpenAI would send, naming the offending `param`. */
function toRequestError(body: JsonObject, issue: z.core.$ZodIssue) {
  // A discriminated union reports a bad discriminator at the object; point at the `role` key instead.
  const path = issue.code === "invalid_union" && "discriminator" in issue && issue.discriminator
    ? [...issue.path, issue.discriminator as string]
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
    case "too_small":
      if (Array.isArray(value) && value.length === 0) {
        return invalidRequest(
          `Invalid '${param}': empty array. Expected an array with minimum length ${issue.minimum}, ` +
            "but got an empty array instead.",
          param,
          "empty_array",
        );
      }
      if (typeof value === "string") {
        return invalidRequest(
          `Invalid '${param}': string too short (minimum ${issue.minimum}).`,
          param,
          "invalid_value",
        );
      }
      return invalidRequest(
        `Invalid '${param}': below the minimum of ${issue.minimum}.`,
        param,
        "invalid_value",
      );
    case "too_big":
      return invalidRequest(
        `Invalid '${param}': above the maximum of ${issue.maximum}.`,
        param,
        "invalid_value",
      );
    case "invalid_value":
      return invalidRequest(
        `Invalid value for '${param}'. Supported values are: ${
          issue.values.map((v) => `'${String(v)}'`).join(", ")
        }.`,
        param,
        "invalid_value",
      );
    case "invalid_union":
      return invalidRequest(
        `Invalid value for '${param}': ${describe(value)} is not an accepted form.`,
        param,
        "invalid_type",
      );
    default:
      return invalidRequest(`Invalid '${param}': ${issue.message}.`, param, "invalid_value");
  }
}

/** Validates a chat completion request; throws a 400 `GatewayError` naming the first bad `param`. */
export function parseChatRequest(body: JsonObject): ChatRequest {
  const result = chatSchema.safeParse(body);
  if (!result.success) throw toRequestError(body, result.error.issues[0]);
  if (body.stream_options != null && body.stream !== true) {
    throw invalidRequest(
      "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
      "stream_options",
      "invalid_value",
    );
  }
  // Validation keeps every key the client sent (loose objects) and adds none.
  return body as ChatRequest;
}

/** Validates an embeddings request; throws a 400 `GatewayError` naming the first bad `param`. */
export function parseEmbeddingRequest(body: JsonObject): EmbeddingRequest {
  const result = embeddingSchema.safeParse(body);
  if (!result.success) throw toRequestError(body, result.error.issues[0]);
  return body as EmbeddingRequest;
}

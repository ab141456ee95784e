/**
 * Anthropic's Messages API passed through to Claude on Bedrock: InvokeModel (`/model/{id}/invoke`) and
 * InvokeModelWithResponseStream (`/invoke-with-response-stream`) take the Anthropic body itself, with the model
 * in the path instead of the body, `anthropic_version: "bedrock-2023-05-31"` (the gateway's, whatever the body
 * says) and the client's betas that Bedrock takes as `anthropic_beta` (the header's and the body's, held to the
 * same list; the others are left out: `betas.ts`). The whole answer is Anthropic's Message
 * object; the stream is AWS event-stream frames whose `chunk` events carry `{"bytes": <base64 of one Anthropic
 * event's JSON>}`, and whose exception frames are Bedrock's (mapped as for ConverseStream). CountTokens counts
 * the same body (`input.invokeModel.body`, base64).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { badGateway } from "../../errors.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import type { SyncTransformer } from "../../streams/pull_through.ts";
import { messagesEventTransformer } from "../anthropic/native.ts";
import type { EventStreamMessage } from "./eventstream.ts";
import { isClaudeModel } from "./request.ts";
import { bedrockStreamError, bedrockStreamException } from "./response.ts";

/** The Messages API version Bedrock's Claude models take in the body. */
export const BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31";

/** What Bedrock adds to a streamed `message_stop` that is not part of Anthropic's event; not passed on. */
const BEDROCK_METRICS = "amazon-bedrock-invocationMetrics";

/** Whether a Bedrock model id (or inference profile, or ARN naming one) is a Claude model, served natively. */
export function servesMessages(model: string): boolean {
  return isClaudeModel(model);
}

/**
 * The InvokeModel body for a Messages body: everything the client sent but `model` (in the path) and `stream`
 * (the action says it), the Bedrock version, and `betas` (the client's names Bedrock takes, from its
 * `anthropic-beta` and its body's `anthropic_beta`: `bedrockBetas(…).forwarded`, see `betas.ts`) as
 * `anthropic_beta`. The body's own `anthropic_version` and `anthropic_beta` are InvokeModel's fields, which the
 * gateway owns: sent as the client wrote them, they would replace the version Bedrock takes (a 400) or pass
 * names past the entry's `anthropic_betas`.
 */
export function invokeMessagesBody(body: JsonObject, betas: readonly string[]): JsonObject {
  const { model: _model, stream: _stream, anthropic_version: _version, anthropic_beta: _betas, ...rest } =
    body;
  const out: JsonObject = { anthropic_version: BEDROCK_ANTHROPIC_VERSION, ...rest };
  if (betas.length > 0) out.anthropic_beta = [...betas];
  return out;
}

/**
 * Whether a Messages body's own `anthropic_version` is one Bedrock does not get ({@linkcode invokeMessagesBody}
 * sends its own): the client is told it went without it, as `x-gateway-dropped` names a field.
 */
export function versionReplaced(body: JsonObject): boolean {
  const version = body.anthropic_version;
  return version !== undefined && version !== null && version !== BEDROCK_ANTHROPIC_VERSION;
}

/**
 * The `max_tokens` a count_tokens body is invoked with, which has none of its own: InvokeModel requires one, and
 * Claude requires it above the thinking budget (`thinking.budget_tokens`, which is part of the output), else
 * CountTokens refuses the body as InvokeModel would and the client gets an estimate instead of the count. The
 * output limit does not change how many tokens the input is, so the least one Claude takes is sent.
 */
function countMaxTokens(body: JsonObject): number {
  const thinking = body.thinking;
  const budget = isObject(thinking) ? thinking.budget_tokens : undefined;
  return typeof budget === "number" && Number.isFinite(budget) && budget >= 1 ? Math.floor(budget) + 1 : 1;
}

/**
 * The CountTokens body for a Messages body (a request's, or a count_tokens request's): the InvokeModel body,
 * base64-encoded as the JSON protocol has blobs. A count_tokens request's body gets a `max_tokens`
 * ({@linkcode countMaxTokens}); a request's keeps its own.
 */
export function countMessagesBody(body: JsonObject, betas: readonly string[]): JsonObject {
  const invoke = JSON.stringify(invokeMessagesBody({ max_tokens: countMaxTokens(body), ...body }, betas));
  return { input: { invokeModel: { body: Buffer.from(invoke, "utf8").toString("base64") } } };
}

function payloadJson(provider: string, payload: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(payload));
  } catch {
    throw invalid(provider, "a stream event that is not JSON");
  }
}

function invalid(provider: string, what: string) {
  return badGateway(`Provider "${provider}" sent ${what}.`, "upstream_invalid_response");
}

/**
 * The one Anthropic event a `chunk` frame carries, or null for a frame that carries none (another event type);
 * exception and error frames throw the mapped `GatewayError`.
 */
export function chunkEvent(
  provider: string,
  message: EventStreamMessage,
  secrets: readonly string[],
): { data: unknown } | null {
  const messageType = message.headers[":message-type"];
  if (messageType === "exception") {
    const payload = payloadJson(provider, message.payload);
    const text = isObject(payload) && typeof payload.message === "string" ? payload.message : null;
    const type = String(message.headers[":exception-type"] ?? "unknownException");
    throw bedrockStreamException(provider, type, text, secrets, payload);
  }
  if (messageType === "error") {
    throw bedrockStreamError(provider, message.headers, secrets);
  }
  if (messageType !== "event" || message.headers[":event-type"] !== "chunk") return null;
  const payload = payloadJson(provider, message.payload);
  if (!isObject(payload) || typeof payload.bytes !== "string") {
    throw invalid(provider, "a chunk without bytes");
  }
  const data = payloadJson(provider, Buffer.from(payload.bytes, "base64"));
  if (isObject(data) && data.type === "message_stop" && BEDROCK_METRICS in data) {
    const { [BEDROCK_METRICS]: _metrics, ...event } = data;
    return { data: event };
  }
  return { data };
}

/** Decoded event-stream frames → Anthropic event objects, as the Anthropic adapter's stage gives them. */
export function invokeChunkTransformer(
  provider: string,
  secrets: readonly string[] = [],
): SyncTransformer<EventStreamMessage, JsonObject> {
  return messagesEventTransformer<EventStreamMessage>(
    provider,
    (message) => chunkEvent(provider, message, secrets),
    secrets,
  );
}

/**
 * Claude on the fake Bedrock runtime through InvokeModel (`/invoke`), InvokeModelWithResponseStream
 * (`/invoke-with-response-stream`) and CountTokens with `input.invokeModel`: the Anthropic Messages body with
 * `anthropic_version: "bedrock-2023-05-31"` (required), no `model` or `stream` (refused as extraneous keys, as
 * Bedrock does), a `max_tokens` above any `thinking.budget_tokens` (Claude's rule, CountTokens' too), and an `anthropic_beta` that names only betas Bedrock takes (the gateway's built-in list; any
 * other is Bedrock's `400 {"message":"invalid beta flag"}`), answered with Anthropic's Message, or an event
 * stream whose `chunk` frames carry `{"bytes": <base64 of one Anthropic event>}`; the `message_stop` event
 * carries Bedrock's invocation metrics.
 *
 * Behaviour by model id: `…midstream…` streams some text, then a `modelStreamErrorException` frame;
 * `…error-chunk…` streams some text, then an Anthropic `overloaded_error` event inside a chunk; anything
 * else answers {@linkcode FAKE_BEDROCK_CLAUDE_ANSWER}. With `thinking` enabled, a signed thinking block comes
 * first (streamed as thinking deltas and a `signature_delta`); a thinking block sent back with another signature
 * is refused. Every `cache_control` in the body adds cache counts to usage ({@linkcode FAKE_BEDROCK_CACHE}).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { encodeFrame, exceptionFrame } from "./fake_bedrock.ts";
import { BEDROCK_ANTHROPIC_BETAS } from "../../lib/providers/bedrock/betas.ts";

/** The text a Claude model answers on InvokeModel. */
export const FAKE_BEDROCK_CLAUDE_ANSWER = "Hello from Claude on fake Bedrock!";
/** The thinking of a Claude model on InvokeModel with thinking enabled. */
export const FAKE_BEDROCK_CLAUDE_THINKING = "Bedrock thinking: greet back ✓.";
/** Its signature, which the client must get, and send back, unchanged. */
export const FAKE_BEDROCK_CLAUDE_SIGNATURE = "EqoBBedrockInvokeSignatureXYZ==";
/** The cache counts of a request with `cache_control`. */
export const FAKE_BEDROCK_CACHE = { cache_creation_input_tokens: 11, cache_read_input_tokens: 222 } as const;
/** What CountTokens adds to the characters of an InvokeModel body's texts. */
export const FAKE_BEDROCK_INVOKE_COUNT_BASE = 5000;

function validation(message: string): Response {
  return new Response(JSON.stringify({ message }), {
    status: 400,
    headers: {
      "content-type": "application/json",
      "x-amzn-errortype": "ValidationException:http://internal",
    },
  });
}

/** Bedrock's checks on a Claude InvokeModel body; the error answer, or null. */
function invalidBody(body: Record<string, unknown>): Response | null {
  for (const key of ["model", "stream"]) {
    if (key in body) return validation(`extraneous key [${key}] is not permitted`);
  }
  if (body.anthropic_version !== "bedrock-2023-05-31") return validation("invalid anthropic_version");
  // Bedrock refuses the whole request for one beta name it does not take, in these words.
  const betas = body.anthropic_beta;
  if (betas !== undefined) {
    if (!Array.isArray(betas) || betas.some((b) => !BEDROCK_ANTHROPIC_BETAS.includes(b))) {
      return validation("invalid beta flag");
    }
  }
  if (typeof body.max_tokens !== "number") return validation("required key [max_tokens] not found");
  // Claude's own rule, which InvokeModel (and CountTokens with an InvokeModel body) applies: the thinking budget
  // is part of the output limit.
  const budget = (body.thinking as { budget_tokens?: unknown } | undefined)?.budget_tokens;
  if (typeof budget === "number" && body.max_tokens <= budget) {
    return validation("`max_tokens` must be greater than `thinking.budget_tokens`");
  }
  const messages = Array.isArray(body.messages) ? body.messages as { content?: unknown }[] : [];
  for (const message of messages) {
    for (const block of Array.isArray(message.content) ? message.content as Record<string, unknown>[] : []) {
      if (block.type === "thinking" && block.signature !== FAKE_BEDROCK_CLAUDE_SIGNATURE) {
        return validation("Invalid `signature` in `thinking` block");
      }
    }
  }
  return null;
}

function usageOf(body: Record<string, unknown>, output: number) {
  const cache = JSON.stringify(body).includes('"cache_control"') ? FAKE_BEDROCK_CACHE : {};
  return { input_tokens: 17, output_tokens: output, ...cache };
}

function thinkingOn(body: Record<string, unknown>): boolean {
  return (body.thinking as { type?: unknown } | undefined)?.type === "enabled";
}

/** InvokeModel for a Claude model: the Message. */
export function invokeClaude(body: Record<string, unknown>): Response {
  const refused = invalidBody(body);
  if (refused !== null) return refused;
  const content = [
    ...(thinkingOn(body)
      ? [{
        type: "thinking",
        thinking: FAKE_BEDROCK_CLAUDE_THINKING,
        signature: FAKE_BEDROCK_CLAUDE_SIGNATURE,
      }]
      : []),
    { type: "text", text: FAKE_BEDROCK_CLAUDE_ANSWER },
  ];
  return Response.json({
    id: "msg_bdrk_01FakeInvoke",
    type: "message",
    role: "assistant",
    model: "claude-sonnet-fake",
    content,
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: usageOf(body, 9),
  });
}

/** One `chunk` frame carrying an Anthropic event. */
export function chunkFrame(event: Record<string, unknown>): Uint8Array {
  const bytes = Buffer.from(JSON.stringify(event), "utf8").toString("base64");
  return encodeFrame(
    { ":event-type": "chunk", ":content-type": "application/json", ":message-type": "event" },
    JSON.stringify({ bytes, p: "abcdefgh" }),
  );
}

/** InvokeModelWithResponseStream for a Claude model: the frames of the answer. */
export function invokeClaudeStream(modelId: string, body: Record<string, unknown>): Uint8Array[] | Response {
  const refused = invalidBody(body);
  if (refused !== null) return refused;
  const message = {
    id: "msg_bdrk_01FakeStream",
    type: "message",
    role: "assistant",
    model: "claude-sonnet-fake",
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: usageOf(body, 1),
  };
  const events: Record<string, unknown>[] = [{ type: "message_start", message }];
  let index = 0;
  if (thinkingOn(body)) {
    events.push(
      {
        type: "content_block_start",
        index,
        content_block: { type: "thinking", thinking: "", signature: "" },
      },
      ...FAKE_BEDROCK_CLAUDE_THINKING.split(/(?<= )/).map((t) => ({
        type: "content_block_delta",
        index,
        delta: { type: "thinking_delta", thinking: t },
      })),
      {
        type: "content_block_delta",
        index,
        delta: { type: "signature_delta", signature: FAKE_BEDROCK_CLAUDE_SIGNATURE },
      },
      { type: "content_block_stop", index },
    );
    index++;
  }
  events.push({ type: "content_block_start", index, content_block: { type: "text", text: "" } });
  const words = FAKE_BEDROCK_CLAUDE_ANSWER.split(/(?<= )/);
  const frames = () => events.map(chunkFrame);
  if (modelId.includes("midstream")) {
    events.push({ type: "content_block_delta", index, delta: { type: "text_delta", text: words[0] } });
    return [...frames(), exceptionFrame("modelStreamErrorException", "The model stream failed.")];
  }
  if (modelId.includes("error-chunk")) {
    events.push(
      { type: "content_block_delta", index, delta: { type: "text_delta", text: words[0] } },
      { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
    );
    return frames();
  }
  events.push(
    ...words.map((text) => ({ type: "content_block_delta", index, delta: { type: "text_delta", text } })),
    { type: "content_block_stop", index },
    {
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: 12 },
    },
    {
      type: "message_stop",
      "amazon-bedrock-invocationMetrics": {
        inputTokenCount: 17,
        outputTokenCount: 12,
        invocationLatency: 420,
        firstByteLatency: 120,
      },
    },
  );
  return frames();
}

function textLength(value: unknown): number {
  if (typeof value === "string") return value.length;
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + textLength(v), 0);
  if (value === null || typeof value !== "object") return 0;
  const o = value as Record<string, unknown>;
  return typeof o.text === "string" ? o.text.length : textLength(o.content);
}

/**
 * CountTokens with `input.invokeModel.body` (base64 of an InvokeModel body, checked as InvokeModel checks it):
 * {@linkcode FAKE_BEDROCK_INVOKE_COUNT_BASE} plus the characters of its system prompt and messages.
 */
export function countInvokeTokens(encoded: unknown): Response {
  if (typeof encoded !== "string") return validation("input.invokeModel.body is required");
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(Buffer.from(encoded, "base64").toString("utf8"));
  } catch {
    return validation("input.invokeModel.body is not a JSON document");
  }
  const refused = invalidBody(body);
  if (refused !== null) return refused;
  return Response.json({
    inputTokens: FAKE_BEDROCK_INVOKE_COUNT_BASE + textLength(body.system) + textLength(body.messages),
  });
}

/**
 * A fake Bedrock runtime speaking the documented wire format — Converse JSON, ConverseStream's binary
 * event-stream, InvokeModel for Titan and Cohere embeddings, and Bedrock's error bodies with
 * `x-amzn-ErrorType` — that VERIFIES every request's SigV4 signature by recomputing it from what arrived
 * (raw path, signed headers, body hash). A wrong secret gets 403 InvalidSignatureException, an unknown key id
 * 403 UnrecognizedClientException, as AWS answers.
 *
 * Behaviour is picked by the model id in the path:
 * - anything else: a text answer (`FAKE_BEDROCK_ANSWER`), streamed in word deltas.
 * - `…tools…`: a text block then a `get_weather` tool use (streamed as input fragments), stop `tool_use`.
 * - `…throttle…` 429 ThrottlingException · `…overload…` 503 ServiceUnavailableException ·
 *   `…denied…` 403 AccessDeniedException · `…invalid…` 400 ValidationException · `…quota…` 400
 *   ServiceQuotaExceededException (AWS sends the account's quota as a 400 that asks to resubmit later).
 * - `…midstream…`: two deltas, then a `modelStreamErrorException` frame.  `…badcrc…`: a frame with a bad CRC.
 * - `amazon.titan-embed-text…` / `cohere.embed…` (invoke): deterministic embeddings.
 * - an `…anthropic.claude…` model asked for `additionalModelRequestFields.thinking` (enabled): a
 *   `reasoningContent` block ({@linkcode FAKE_BEDROCK_REASONING}, signed; streamed as reasoning deltas and a
 *   signature delta) and a redacted one come first. Like Bedrock, it refuses thinking for other models, a
 *   budget under 1,024 or not below `maxTokens`, a `temperature` other than 1 or a `topP` under 0.95 beside it,
 *   and a final assistant turn with toolUse that does not start with reasoning.
 * - a forced tool (`toolConfig.toolChoice` `{tool: {name}}`, or `{any: {}}` on a model other than `…tools…`, which
 *   then uses its last tool): a `toolUse` of that tool whose input matches its `inputSchema.json`
 *   (`valueForSchema`, every string `FAKE_BEDROCK_ANSWER`), streamed as input fragments. Like Bedrock, it refuses
 *   `{tool}` for models other than Claude and Nova, and a forced tool with Claude's thinking enabled.
 * - `…cached…`: the usage also reports prompt-cache reads and writes, as Converse's `TokenUsage` does when a
 *   request's cache points hit and fill the cache: `cacheReadInputTokens` ({@linkcode FAKE_BEDROCK_CACHE_READ})
 *   and `cacheWriteInputTokens` ({@linkcode FAKE_BEDROCK_CACHE_WRITE}), apart from `inputTokens` and within
 *   `totalTokens` (JSON `usage` and the stream's `metadata` event alike).
 * - any Converse request with more than four `cachePoint` blocks (in `toolConfig.tools`, `system` and the turns),
 *   or one asking `ttl: "1h"` after a shorter-lived one: AWS's 400 ValidationException.
 * - any Converse request with a blank text block (empty or whitespace only, in a turn or a tool result): AWS's
 *   400 ValidationException "The text field in the ContentBlock object at messages.N.content.M is blank".
 * - any Converse request whose shape Bedrock refuses (`vendor_refusals.ts`: tool blocks without a `toolConfig`,
 *   a document's name of characters Bedrock does not take or taken twice, a document without a text block
 *   beside it, …): its 400 ValidationException.
 * - `count-tokens`: a deterministic count (see `countTokens`); `…nocount…` cannot count, nor can an inference
 *   profile (`us.…`, or its ARN: AWS's ValidationException), but its foundation model can; a `…profilecount…`
 *   profile counts and its foundation model cannot.
 * - `…anthropic.claude…` through `invoke` / `invoke-with-response-stream` (and `count-tokens` with
 *   `input.invokeModel`): the Anthropic Messages API, in `fake_bedrock_claude.ts`.
 *
 * @module
 */
import { crc32 } from "../../lib/providers/bedrock/crc32.ts";
import { sha256Hex, signatureFromParts } from "../../lib/aws/sigv4.ts";
import { countInvokeTokens, invokeClaude, invokeClaudeStream } from "./fake_bedrock_claude.ts";
import { fragments, valueForSchema } from "./fake_json_schema.ts";
import { converseRefusal } from "./vendor_refusals.ts";

/** The credentials the fake accepts. */
export const FAKE_AWS = {
  accessKeyId: "AKIDFAKEBEDROCK00001",
  secretAccessKey: "fakeSecret/Key+0123456789abcdefghijklmn",
} as const;
/** The region the fake expects in the credential scope. */
export const FAKE_REGION = "us-east-1";
/** What the default chat model answers. */
export const FAKE_BEDROCK_ANSWER = "Hello from fake Bedrock!";
/** The reasoning a Claude model answers with when thinking is enabled. */
export const FAKE_BEDROCK_REASONING = "The user says hello; a short greeting fits ✓.";
/** The signature of that reasoning, which must never reach a client. */
export const FAKE_BEDROCK_SIGNATURE = "ErcBCkgIBhABGAIiQFakeBedrockSignature";
/** The tool use id in AWS's tool-use documentation example. */
export const FAKE_TOOL_USE_ID = "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q";

/** One request the fake accepted or refused. */
export interface RecordedBedrockRequest {
  /** The path as it arrived, still percent-encoded. */
  rawPath: string;
  modelId: string;
  action: string;
  headers: Headers;
  body: Record<string, unknown>;
  signatureValid: boolean;
}

/** A running fake. */
export interface FakeBedrock {
  url: string;
  requests: RecordedBedrockRequest[];
  stop(): Promise<void>;
}

const enc = new TextEncoder();

/** Encodes one event-stream message with string headers (all Bedrock sends). */
export function encodeFrame(headers: Record<string, string>, payload: string): Uint8Array {
  const body = enc.encode(payload);
  const block: number[] = [];
  for (const [name, value] of Object.entries(headers)) {
    const n = enc.encode(name);
    const v = enc.encode(value);
    block.push(n.length, ...n, 7, v.length >> 8, v.length & 0xff, ...v);
  }
  const total = 16 + block.length + body.length;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  view.setUint32(0, total);
  view.setUint32(4, block.length);
  view.setUint32(8, crc32(out.subarray(0, 8)));
  out.set(block, 12);
  out.set(body, 12 + block.length);
  view.setUint32(total - 4, crc32(out.subarray(0, total - 4)));
  return out;
}

/** An `:message-type event` frame as ConverseStream sends it (with Bedrock's `p` padding field). */
export function eventFrame(type: string, payload: Record<string, unknown>): Uint8Array {
  return encodeFrame(
    { ":event-type": type, ":content-type": "application/json", ":message-type": "event" },
    JSON.stringify({ ...payload, p: "abcdefghij" }),
  );
}

/** An `:message-type exception` frame. */
export function exceptionFrame(type: string, message: string): Uint8Array {
  return encodeFrame(
    { ":exception-type": type, ":content-type": "application/json", ":message-type": "exception" },
    JSON.stringify({ message }),
  );
}

function awsError(status: number, type: string, message: string): Response {
  return new Response(JSON.stringify({ message }), {
    status,
    headers: {
      "content-type": "application/json",
      "x-amzn-errortype": `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
      "x-amzn-requestid": crypto.randomUUID(),
    },
  });
}

const AUTH_RE =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/;

async function verify(req: Request, rawPath: string, query: string, body: string): Promise<Response | null> {
  const match = AUTH_RE.exec(req.headers.get("authorization") ?? "");
  if (!match) return awsError(403, "MissingAuthenticationTokenException", "Missing Authentication Token");
  const [, keyId, day, region, service, signedHeaders, signature] = match;
  if (keyId !== FAKE_AWS.accessKeyId) {
    return awsError(
      403,
      "UnrecognizedClientException",
      "The security token included in the request is invalid.",
    );
  }
  const amzDate = req.headers.get("x-amz-date") ?? "";
  const names = signedHeaders.split(";");
  const required = ["content-type", "host", "x-amz-date"];
  if (req.headers.has("x-amz-security-token")) required.push("x-amz-security-token");
  if (
    region !== FAKE_REGION || service !== "bedrock" || !amzDate.startsWith(day) ||
    required.some((h) => !names.includes(h))
  ) {
    return awsError(403, "InvalidSignatureException", "Credential should be scoped correctly.");
  }
  const expected = await signatureFromParts({
    method: req.method,
    path: rawPath,
    query,
    headers: names.map((n) => [n, req.headers.get(n) ?? ""] as const),
    payloadHash: await sha256Hex(body),
    amzDate,
    region,
    service,
    credentials: FAKE_AWS,
  });
  if (expected.signature !== signature) {
    return awsError(
      403,
      "InvalidSignatureException",
      "The request signature we calculated does not match the signature you provided. Check your AWS Secret " +
        "Access Key and signing method. Consult the service documentation for details.",
    );
  }
  return null;
}

function vector(seed: string, dims: number): number[] {
  let h = 2166136261;
  for (const ch of seed) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
  return Array.from({ length: dims }, (_, i) => Math.round(Math.sin(h + i) * 1e6) / 1e6);
}

function streamResponse(frames: Uint8Array[]): Response {
  const all = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  frames.reduce((at, f) => (all.set(f, at), at + f.length), 0);
  // Odd-sized writes so frames straddle reads on the gateway side.
  let at = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (at >= all.length) return controller.close();
      await new Promise((r) => setTimeout(r, 1));
      controller.enqueue(all.slice(at, at + 37));
      at += 37;
    },
  });
  return new Response(body, { headers: { "content-type": "application/vnd.amazon.eventstream" } });
}

const USAGE = { inputTokens: 12, outputTokens: 6, totalTokens: 18 };

/** The prompt-cache reads a `…cached…` model reports (`cacheReadInputTokens`, not in `inputTokens`). */
export const FAKE_BEDROCK_CACHE_READ = 300;
/** The prompt-cache writes a `…cached…` model reports (`cacheWriteInputTokens`, not in `inputTokens`). */
export const FAKE_BEDROCK_CACHE_WRITE = 40;

/**
 * The `TokenUsage` a model answers with: {@linkcode USAGE}, plus cache reads and writes for a `…cached…` model.
 * As AWS reports them, `inputTokens` excludes both and `totalTokens` includes both.
 */
function usageOf(modelId: string): Record<string, number> {
  if (!modelId.includes("cached")) return USAGE;
  return {
    ...USAGE,
    totalTokens: USAGE.totalTokens + FAKE_BEDROCK_CACHE_READ + FAKE_BEDROCK_CACHE_WRITE,
    cacheReadInputTokens: FAKE_BEDROCK_CACHE_READ,
    cacheWriteInputTokens: FAKE_BEDROCK_CACHE_WRITE,
  };
}

/** Bedrock's checks on a request with Claude's thinking enabled; the error answer, or null when it is fine. */
function thinkingError(modelId: string, body: Record<string, unknown>): Response | null {
  const fields = body.additionalModelRequestFields as { thinking?: { budget_tokens?: unknown } };
  const budget = fields.thinking?.budget_tokens;
  const maxTokens = (body.inferenceConfig as { maxTokens?: number } | undefined)?.maxTokens ?? 4096;
  if (!modelId.includes("anthropic.claude")) {
    return awsError(
      400,
      "ValidationException",
      "The model returned the following errors: extraneous key [thinking]",
    );
  }
  if (typeof budget !== "number" || budget < 1024 || budget >= maxTokens) {
    return awsError(
      400,
      "ValidationException",
      "thinking.budget_tokens must be >= 1024 and below max_tokens.",
    );
  }
  const inference = body.inferenceConfig as { temperature?: number; topP?: number } | undefined;
  if (inference?.temperature !== undefined && inference.temperature !== 1) {
    return awsError(
      400,
      "ValidationException",
      "The model returned the following errors: `temperature` may only be set to 1 when thinking is enabled.",
    );
  }
  if (inference?.topP !== undefined && inference.topP < 0.95) {
    return awsError(
      400,
      "ValidationException",
      "The model returned the following errors: `top_p` must be greater than or equal to 0.95 when thinking " +
        "is enabled.",
    );
  }
  const turns = Array.isArray(body.messages) ? body.messages as { role: string; content: object[] }[] : [];
  const last = turns.findLast((t) => t.role === "assistant");
  if (last?.content.some((b) => "toolUse" in b) && !("reasoningContent" in (last.content[0] ?? {}))) {
    return awsError(
      400,
      "ValidationException",
      "Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final " +
        "`assistant` message must start with a thinking block.",
    );
  }
  return null;
}

/** Bedrock's checks on a Converse body's `cachePoint` blocks; the error message, or null when they are fine. */
function cachePointError(body: Record<string, unknown>): string | null {
  const list = (v: unknown) => Array.isArray(v) ? v as Record<string, unknown>[] : [];
  const tools = list((body.toolConfig as { tools?: unknown } | undefined)?.tools);
  const blocks = [...tools, ...list(body.system), ...list(body.messages).flatMap((m) => list(m.content))];
  const points = blocks.map((b) => b.cachePoint as { ttl?: unknown } | undefined).filter((p) =>
    p !== undefined
  );
  if (points.length > 4) return `A maximum of 4 cache points may be provided. Found ${points.length}.`;
  const shorter = points.findIndex((p) => p.ttl !== "1h");
  if (shorter >= 0 && points.slice(shorter).some((p) => p.ttl === "1h")) {
    return "Cache point TTLs must not increase from toolConfig to system to messages.";
  }
  return null;
}

/** Where a Converse body has a blank text block, as AWS names it (`messages.N.content.M`), or null. */
function blankTextAt(body: Record<string, unknown>): string | null {
  const turns = Array.isArray(body.messages) ? body.messages as { content?: unknown }[] : [];
  const blank = (b: unknown) =>
    typeof (b as { text?: unknown }).text === "string" &&
    String((b as { text: string }).text).trim() === "";
  for (const [i, turn] of turns.entries()) {
    const blocks = Array.isArray(turn.content) ? turn.content as Record<string, unknown>[] : [];
    for (const [j, block] of blocks.entries()) {
      if (blank(block)) return `messages.${i}.content.${j}`;
      const result = block.toolResult as { content?: unknown } | undefined;
      const inner = Array.isArray(result?.content) ? result.content : [];
      const k = inner.findIndex(blank);
      if (k >= 0) return `messages.${i}.content.${j}.toolResult.content.${k}`;
    }
  }
  return null;
}

/** The reasoning blocks a Claude answer with thinking on starts with. */
const REASONING_BLOCKS = [
  {
    reasoningContent: { reasoningText: { text: FAKE_BEDROCK_REASONING, signature: FAKE_BEDROCK_SIGNATURE } },
  },
  { reasoningContent: { redactedContent: "AAECAwQFBgc=" } },
];

function converse(modelId: string, thinking = false): Response {
  const tools = modelId.includes("tools");
  const answer = tools
    ? [{ text: "Let me check." }, {
      toolUse: { toolUseId: FAKE_TOOL_USE_ID, name: "get_weather", input: { city: "Paris" } },
    }]
    : [{ text: FAKE_BEDROCK_ANSWER }];
  const content = thinking ? [...REASONING_BLOCKS, ...answer] : answer;
  return Response.json({
    output: { message: { role: "assistant", content } },
    stopReason: tools ? "tool_use" : "end_turn",
    usage: usageOf(modelId),
    metrics: { latencyMs: 42 },
  });
}

function converseStream(modelId: string, thinking = false): Response {
  const frames = [eventFrame("messageStart", { role: "assistant" })];
  if (thinking) {
    // Reasoning blocks come first (0 and 1); the answer's blocks follow them (`ix`).
    frames.push(
      ...FAKE_BEDROCK_REASONING.split(/(?<= )/).map((text) =>
        eventFrame("contentBlockDelta", { contentBlockIndex: 0, delta: { reasoningContent: { text } } })
      ),
      eventFrame("contentBlockDelta", {
        contentBlockIndex: 0,
        delta: { reasoningContent: { signature: FAKE_BEDROCK_SIGNATURE } },
      }),
      eventFrame("contentBlockStop", { contentBlockIndex: 0 }),
      eventFrame("contentBlockDelta", {
        contentBlockIndex: 1,
        delta: { reasoningContent: { redactedContent: "AAEC" } },
      }),
      eventFrame("contentBlockStop", { contentBlockIndex: 1 }),
    );
  }
  const ix = (i: number) => thinking ? i + 2 : i;
  if (modelId.includes("tools")) {
    frames.push(
      eventFrame("contentBlockDelta", { contentBlockIndex: ix(0), delta: { text: "Let me check." } }),
      eventFrame("contentBlockStop", { contentBlockIndex: ix(0) }),
      eventFrame("contentBlockStart", {
        contentBlockIndex: ix(1),
        start: { toolUse: { toolUseId: FAKE_TOOL_USE_ID, name: "get_weather" } },
      }),
      eventFrame("contentBlockDelta", { contentBlockIndex: ix(1), delta: { toolUse: { input: '{"city"' } } }),
      eventFrame("contentBlockDelta", {
        contentBlockIndex: ix(1),
        delta: { toolUse: { input: ':"Paris"}' } },
      }),
      eventFrame("contentBlockStop", { contentBlockIndex: ix(1) }),
      eventFrame("messageStop", { stopReason: "tool_use" }),
    );
  } else {
    const words = FAKE_BEDROCK_ANSWER.split(/(?= )/);
    const upTo = modelId.includes("midstream") ? 2 : words.length;
    for (const word of words.slice(0, upTo)) {
      frames.push(eventFrame("contentBlockDelta", { contentBlockIndex: ix(0), delta: { text: word } }));
    }
    if (modelId.includes("midstream")) {
      frames.push(exceptionFrame("modelStreamErrorException", "The model stream failed."));
      return streamResponse(frames);
    }
    if (modelId.includes("badcrc")) {
      const bad = eventFrame("contentBlockStop", { contentBlockIndex: ix(0) });
      bad[bad.length - 1] ^= 0xff;
      frames.push(bad);
      return streamResponse(frames);
    }
    frames.push(
      eventFrame("contentBlockStop", { contentBlockIndex: ix(0) }),
      eventFrame("messageStop", { stopReason: "end_turn" }),
    );
  }
  frames.push(eventFrame("metadata", { usage: usageOf(modelId), metrics: { latencyMs: 42 } }));
  return streamResponse(frames);
}

/** The tool use a forced `toolChoice` gets, an error answer for a choice Bedrock refuses, or null. */
function forcedToolUse(
  modelId: string,
  body: Record<string, unknown>,
  thinking: boolean,
): { name: string; input: unknown } | Response | null {
  const config = body.toolConfig as {
    tools?: unknown;
    toolChoice?: { tool?: { name?: unknown }; any?: unknown };
  };
  const choice = config?.toolChoice;
  if (choice?.tool === undefined && choice?.any === undefined) return null;
  if (choice.tool !== undefined && !/anthropic\.claude|amazon\.nova/.test(modelId)) {
    return awsError(
      400,
      "ValidationException",
      "This model doesn't support the toolConfig.toolChoice.tool field.",
    );
  }
  if (thinking) {
    return awsError(
      400,
      "ValidationException",
      "Thinking may not be enabled when tool_choice forces tool use.",
    );
  }
  if (choice.tool === undefined && modelId.includes("tools")) return null;
  const specs = (Array.isArray(config.tools) ? config.tools : []) as {
    toolSpec?: { name?: unknown; inputSchema?: { json?: unknown } };
  }[];
  const spec = choice.tool !== undefined
    ? specs.find((t) => t.toolSpec?.name === choice.tool?.name)
    : specs.at(-1);
  if (spec?.toolSpec === undefined) {
    return awsError(400, "ValidationException", "The tool named in toolChoice is not in toolConfig.tools.");
  }
  return {
    name: String(spec.toolSpec.name),
    input: valueForSchema(spec.toolSpec.inputSchema?.json, FAKE_BEDROCK_ANSWER),
  };
}

/** The whole answer, or the stream, of a forced tool use. */
function forcedAnswer(modelId: string, use: { name: string; input: unknown }, stream: boolean): Response {
  const toolUseId = "tooluse_fakeForced0000001";
  if (!stream) {
    return Response.json({
      output: { message: { role: "assistant", content: [{ toolUse: { toolUseId, ...use } }] } },
      stopReason: "tool_use",
      usage: usageOf(modelId),
      metrics: { latencyMs: 42 },
    });
  }
  return streamResponse([
    eventFrame("messageStart", { role: "assistant" }),
    eventFrame("contentBlockStart", {
      contentBlockIndex: 0,
      start: { toolUse: { toolUseId, name: use.name } },
    }),
    ...fragments(JSON.stringify(use.input)).map((input) =>
      eventFrame("contentBlockDelta", { contentBlockIndex: 0, delta: { toolUse: { input } } })
    ),
    eventFrame("contentBlockStop", { contentBlockIndex: 0 }),
    eventFrame("messageStop", { stopReason: "tool_use" }),
    eventFrame("metadata", { usage: usageOf(modelId), metrics: { latencyMs: 42 } }),
  ]);
}

function invoke(modelId: string, body: Record<string, unknown>): Response {
  if (modelId.includes("titan-embed")) {
    const text = String(body.inputText ?? "");
    const dims = typeof body.dimensions === "number" ? body.dimensions : 1024;
    const embedding = vector(text, dims);
    return Response.json({
      embedding,
      embeddingsByType: { float: embedding },
      inputTextTokenCount: text.split(/\s+/).filter(Boolean).length,
    });
  }
  if (modelId.includes("cohere.embed")) {
    const texts = Array.isArray(body.texts) ? body.texts.map(String) : [];
    const tokens = texts.reduce((n, t) => n + t.split(/\s+/).filter(Boolean).length, 0);
    return Response.json({
      embeddings: texts.map((t) => vector(t, 1024)),
      id: crypto.randomUUID(),
      response_type: "embeddings_floats",
      texts,
    }, { headers: { "x-amzn-bedrock-input-token-count": String(tokens) } });
  }
  return awsError(400, "ValidationException", "The provided model identifier is invalid.");
}

/** What the fake's CountTokens adds to the text's length, so a test can tell its count from an estimate. */
export const FAKE_BEDROCK_COUNT_BASE = 3000;

/** The characters of every `text` block under `value` (messages' content, system blocks). */
function textLength(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + textLength(v), 0);
  if (value === null || typeof value !== "object") return 0;
  const o = value as Record<string, unknown>;
  return typeof o.text === "string" ? o.text.length : textLength(o.content);
}

/** A cross-region inference profile id, or an inference-profile ARN ending in one. */
const FAKE_PROFILE_ID =
  /^(?:arn:aws[\w-]*:bedrock:[\w-]*:\d*:inference-profile\/)?(?:us|us-gov|eu|apac|jp|au|ca|global)\./;

/**
 * CountTokens for the Converse form (`{input: {converse: {messages, system?, toolConfig?}}}`):
 * {@linkcode FAKE_BEDROCK_COUNT_BASE} plus the characters of its messages and system blocks. A model id with
 * `nocount` gets AWS's answer for a model that cannot count.
 */
function countTokens(modelId: string, body: Record<string, unknown>): Response {
  // As most public reports have it, a cross-region inference profile (or its ARN) cannot count, its foundation
  // model can; a `…profilecount…` model is the other way round (litellm #34272 reports some).
  const profile = FAKE_PROFILE_ID.test(modelId);
  const refused = modelId.includes("profilecount") ? !profile : profile;
  if (modelId.includes("nocount") || refused) {
    return awsError(400, "ValidationException", "The provided model doesn't support counting tokens.");
  }
  const input = body.input as
    | { converse?: Record<string, unknown>; invokeModel?: { body?: unknown } }
    | undefined;
  if (input?.invokeModel !== undefined) return countInvokeTokens(input.invokeModel.body);
  const converse = input?.converse;
  if (converse === undefined || !Array.isArray(converse.messages)) {
    return awsError(400, "ValidationException", "input.converse.messages is required.");
  }
  const extra = Object.keys(converse).find((k) =>
    !["messages", "system", "toolConfig", "additionalModelRequestFields"].includes(k)
  );
  if (extra !== undefined) {
    return awsError(400, "ValidationException", `Unknown field input.converse.${extra}.`);
  }
  return Response.json({
    inputTokens: FAKE_BEDROCK_COUNT_BASE + textLength(converse.messages) + textLength(converse.system),
  });
}

/** Starts the fake on 127.0.0.1 and a free port. */
export function startFakeBedrock(): FakeBedrock {
  const requests: RecordedBedrockRequest[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    const text = await req.text();
    const m = /^\/model\/([^/]+)\/(converse|converse-stream|invoke|invoke-with-response-stream|count-tokens)$/
      .exec(url.pathname);
    const denied = await verify(req, url.pathname, url.search, text);
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text);
    } catch { /* recorded as {} */ }
    const modelId = m ? decodeURIComponent(m[1]) : "";
    requests.push({
      rawPath: url.pathname,
      modelId,
      action: m?.[2] ?? "",
      headers: req.headers,
      body,
      signatureValid: denied === null,
    });
    if (denied) return denied;
    if (!m) return awsError(404, "UnknownOperationException", "Unknown operation");
    if (modelId.includes("throttle")) {
      return awsError(429, "ThrottlingException", "Too many requests, please wait before trying again.");
    }
    if (modelId.includes("quota")) {
      return awsError(
        400,
        "ServiceQuotaExceededException",
        "Your request exceeds the service quota for your account. You can resubmit your request later.",
      );
    }
    if (modelId.includes("overload")) {
      return awsError(503, "ServiceUnavailableException", "Bedrock is unable to process your request.");
    }
    if (modelId.includes("denied")) {
      return awsError(
        403,
        "AccessDeniedException",
        "You don't have access to the model with the specified model ID.",
      );
    }
    if (modelId.includes("invalid")) {
      return awsError(400, "ValidationException", "The provided model identifier is invalid.");
    }
    if (m[2] === "count-tokens") return countTokens(modelId, body);
    if (modelId.includes("anthropic.claude") && m[2].startsWith("invoke")) {
      if (m[2] === "invoke") return invokeClaude(body);
      const frames = invokeClaudeStream(modelId, body);
      return frames instanceof Response ? frames : streamResponse(frames);
    }
    const pointError = m[2].startsWith("converse") ? cachePointError(body) : null;
    if (pointError !== null) return awsError(400, "ValidationException", pointError);
    const blankAt = m[2].startsWith("converse") ? blankTextAt(body) : null;
    if (blankAt !== null) {
      return awsError(
        400,
        "ValidationException",
        `The text field in the ContentBlock object at ${blankAt} is blank. Add text to the text field, and try ` +
          "again.",
      );
    }
    const refusal = m[2].startsWith("converse") ? converseRefusal(body, modelId) : null;
    if (refusal !== null) return awsError(400, "ValidationException", refusal);
    const thinking = (body.additionalModelRequestFields as { thinking?: { type?: unknown } } | undefined)
      ?.thinking?.type === "enabled";
    const refused = thinking && m[2] !== "count-tokens" ? thinkingError(modelId, body) : null;
    if (refused !== null) return refused;
    const forced = m[2].startsWith("converse") ? forcedToolUse(modelId, body, thinking) : null;
    if (forced instanceof Response) return forced;
    if (forced !== null) return forcedAnswer(modelId, forced, m[2] === "converse-stream");
    if (m[2] === "converse") return converse(modelId, thinking);
    if (m[2] === "converse-stream") return converseStream(modelId, thinking);
    return invoke(modelId, body);
  });
  const addr = server.addr as Deno.NetAddr;
  return {
    url: `http://127.0.0.1:${addr.port}`,
    requests,
    stop: () => server.shutdown(),
  };
}

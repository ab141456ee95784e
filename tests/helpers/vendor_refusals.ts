/**
 * What the vendors refuse in the shape of a request that OpenAI's chat completions accept, for the fakes
 * (`fake_anthropic.ts`, `fake_bedrock.ts`, `fake_gemini.ts`, and the OpenAI-compatible ones of Groq and of a
 * thinking Kimi K2 that tests script on a raw upstream) to refuse the same way, with the vendors' own words, so
 * that a test of what a client sends through the gateway fails where the real vendor would.
 *
 * @module
 */

type Body = Record<string, unknown>;

const list = (value: unknown): Record<string, unknown>[] =>
  Array.isArray(value) ? value.filter((v) => typeof v === "object" && v !== null) : [];

/** Every content block of a Messages or Converse body's turns. */
const blocks = (body: Body) => list(body.messages).flatMap((m) => list(m.content));

/**
 * What Claude Sonnet 4.5, Haiku 4.5, Opus 4.1 and later models say of a request setting both `temperature`
 * and `top_p`, on Anthropic's API and (after Bedrock's "The model returned the following errors: ") on
 * Bedrock's; the fakes refuse it for every Claude model.
 */
export const CLAUDE_SAMPLING_REFUSAL =
  "`temperature` and `top_p` cannot both be specified for this model. Please use only one.";

/**
 * What Claude says of a request that sets `top_k` with extended thinking enabled, on Anthropic's API and (after
 * Bedrock's "The model returned the following errors: ") on Bedrock's.
 */
export const CLAUDE_THINKING_TOP_K_REFUSAL =
  "`top_k` must be unset when thinking is enabled. Please consult our " +
  "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#important-considerations-when-using-extended-thinking";

/** Whether a Messages body (or Converse's `additionalModelRequestFields`) enables thinking beside a `top_k`. */
function thinkingBesideTopK(fields: Body | undefined): boolean {
  const thinking = fields?.thinking as { type?: unknown } | undefined;
  return thinking?.type === "enabled" && fields?.top_k != null;
}

/** What Claude says of a stop sequence that is empty or only whitespace, on Anthropic's API and Bedrock's. */
export const CLAUDE_BLANK_STOP_REFUSAL = "stop_sequences: each stop sequence must contain non-whitespace";

/** Whether a Messages body's `stop_sequences` (or Converse's `stopSequences`) holds a blank one. */
function blankStop(sequences: unknown): boolean {
  return Array.isArray(sequences) && sequences.some((s) => typeof s === "string" && s.trim() === "");
}

/** Whether a Messages body (or a Converse `inferenceConfig`) sets both of Claude's sampling controls. */
function bothSampling(temperature: unknown, topP: unknown): boolean {
  return typeof temperature === "number" && typeof topP === "number";
}

/**
 * Claude's refusal of a Messages body (Anthropic's `/v1/messages`, or the scripted agents' upstream) that sets
 * both `temperature` and `top_p`, or null.
 */
export function claudeSamplingRefusal(body: Body): string | null {
  return bothSampling(body.temperature, body.top_p) ? CLAUDE_SAMPLING_REFUSAL : null;
}

/**
 * Anthropic's Messages API (`POST /v1/messages`): the error message of a refused request, or null.
 * - `tool_use` / `tool_result` blocks in a request without tools.
 * - no messages (a request of a system prompt only), or a first turn that is not the user's.
 * - a `temperature` above 1 (Claude's range is 0 to 1).
 * - `temperature` beside `top_p` ({@linkcode CLAUDE_SAMPLING_REFUSAL}).
 * - `top_k` with thinking enabled ({@linkcode CLAUDE_THINKING_TOP_K_REFUSAL}).
 * - a stop sequence that is empty or only whitespace ({@linkcode CLAUDE_BLANK_STOP_REFUSAL}).
 */
export function anthropicRefusal(body: Body): string | null {
  if (list(body.messages).length === 0) return "messages: at least one message is required";
  if (blankStop(body.stop_sequences)) return CLAUDE_BLANK_STOP_REFUSAL;
  if (typeof body.temperature === "number" && body.temperature > 1) {
    return "temperature: Input should be less than or equal to 1";
  }
  const sampling = claudeSamplingRefusal(body);
  if (sampling !== null) return sampling;
  if (thinkingBesideTopK(body)) return CLAUDE_THINKING_TOP_K_REFUSAL;
  const toolBlocks = blocks(body).some((b) => b.type === "tool_use" || b.type === "tool_result");
  if (toolBlocks && list(body.tools).length === 0) {
    return "Requests which include `tool_use` or `tool_result` blocks must define tools.";
  }
  return null;
}

/**
 * Bedrock's Converse / ConverseStream: the ValidationException's message of a refused request, or null.
 * - `toolUse` / `toolResult` blocks in a request without a `toolConfig`.
 * - no messages (a request of a system prompt only), or a first turn that is not the user's.
 * - on a Claude model (`modelId` naming `anthropic.claude`), `inferenceConfig.temperature` above 1, or beside
 *   `inferenceConfig.topP` ({@linkcode CLAUDE_SAMPLING_REFUSAL}), or `additionalModelRequestFields.top_k` beside
 *   its `thinking` ({@linkcode CLAUDE_THINKING_TOP_K_REFUSAL}), or a blank `inferenceConfig.stopSequences` entry
 *   ({@linkcode CLAUDE_BLANK_STOP_REFUSAL}).
 * - a `document` block Bedrock refuses: see {@linkcode converseDocumentRefusal}.
 */
export function converseRefusal(body: Body, modelId: string): string | null {
  const inference = body.inferenceConfig as
    | { temperature?: unknown; topP?: unknown; stopSequences?: unknown }
    | undefined;
  const temperature = inference?.temperature;
  if (modelId.includes("anthropic.claude") && blankStop(inference?.stopSequences)) {
    return `The model returned the following errors: ${CLAUDE_BLANK_STOP_REFUSAL}`;
  }
  if (modelId.includes("anthropic.claude") && typeof temperature === "number" && temperature > 1) {
    return "The model returned the following errors: temperature: range: 0..1";
  }
  if (modelId.includes("anthropic.claude") && bothSampling(temperature, inference?.topP)) {
    return `The model returned the following errors: ${CLAUDE_SAMPLING_REFUSAL}`;
  }
  if (modelId.includes("anthropic.claude") && thinkingBesideTopK(body.additionalModelRequestFields as Body)) {
    return `The model returned the following errors: ${CLAUDE_THINKING_TOP_K_REFUSAL}`;
  }
  const first = list(body.messages)[0] as Body | undefined;
  if (first === undefined || first.role !== "user") {
    return "A conversation must start with a user message. Try again with a conversation that starts with a " +
      "user message.";
  }
  const toolBlocks = blocks(body).some((b) => "toolUse" in b || "toolResult" in b);
  if (toolBlocks && body.toolConfig === undefined) {
    return "The toolConfig field must be defined when using toolUse and toolResult content blocks.";
  }
  const documents = converseDocumentRefusal(body);
  if (documents !== null) return documents;
  return null;
}

/** A Converse document name as AWS's DocumentBlock reference allows it: its characters, one space at a time. */
const DOCUMENT_NAME = /^[A-Za-z0-9()[\]-]+(?: [A-Za-z0-9()[\]-]+)*$/;

/**
 * What Bedrock's Converse says of the `document` blocks of a body's turns, in its own words, or null:
 * - a name with a character the DocumentBlock reference does not list (a filename's dot, an underscore,
 *   non-ASCII letters), two whitespace characters in a row, or more than 200 characters;
 * - two documents of one name anywhere in the request;
 * - a message with a document and no `text` block.
 */
export function converseDocumentRefusal(body: Body): string | null {
  const names = new Set<string>();
  for (const message of list(body.messages)) {
    const content = list(message.content);
    const documents = content.flatMap((b) => list([b.document]));
    for (const { name } of documents) {
      if (typeof name !== "string" || name.length > 200 || !DOCUMENT_NAME.test(name.trim())) {
        return "The document file name can only contain alphanumeric characters, whitespace characters, " +
          "hyphens, parentheses, and square brackets. The name can't contain more than one consecutive " +
          "whitespace character. Check that the file name conforms to these restrictions and retry your request.";
      }
      if (names.has(name)) {
        return "Messages can't contain duplicate document names. Rename the document and retry your request.";
      }
      names.add(name);
    }
    if (documents.length > 0 && !content.some((b) => typeof b.text === "string")) {
      return "A text block must be included when using documents.";
    }
  }
  return null;
}

/**
 * Gemini's `generateContent` / `streamGenerateContent` for `model`: the INVALID_ARGUMENT message of a refused
 * request, or null.
 * - No contents (a request of a system instruction only).
 * - On Gemini 3 models (the fake's `gem-3…`): a model turn of the current turn (from the last user prompt that
 *   is not only function results) whose first function call has no thought signature.
 */
export function geminiRefusal(model: string, body: Body): string | null {
  const contents = list(body.contents);
  if (contents.length === 0) return "* GenerateContentRequest.contents: contents is not specified";
  const prompt = contents.findLastIndex((c) =>
    c.role === "user" && list(c.parts).some((p) => !("functionResponse" in p))
  );
  if (model.startsWith("gem-3")) {
    for (const [i, content] of contents.entries()) {
      if (i < prompt || content.role !== "model") continue;
      const first = list(content.parts).find((p) => "functionCall" in p);
      if (first !== undefined && typeof first.thoughtSignature !== "string") {
        const name = (first.functionCall as { name?: unknown }).name;
        return "Function call is missing a thought_signature in functionCall parts. This is required for tools " +
          "to work correctly, and missing thought_signature may lead to degraded model performance. Additional " +
          `data, function call \`${String(name)}\` , position ${i + 1}. Please refer to ` +
          "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.";
      }
    }
  }
  return null;
}

/** An assistant turn of a chat completions body, with its index in `messages`. */
const assistantTurns = (body: Body) =>
  list(body.messages).map((m, i) => [i, m] as const).filter(([, m]) => m.role === "assistant");

/**
 * Groq's OpenAI-compatible chat completions (and Cerebras', whose schema is as strict): an assistant turn that
 * carries reasoning back, `reasoning_content` (what DeepSeek's clients and a gateway that shows reasoning as
 * such send) or `reasoning` (Groq's own name for it in answers), is refused with its 400's message, or null.
 */
export function groqRefusal(body: Body): string | null {
  for (const [i, turn] of assistantTurns(body)) {
    const field = ["reasoning_content", "reasoning"].find((name) => name in turn);
    if (field !== undefined) {
      return `'messages.${i}' : for 'role:assistant' the following must be satisfied` +
        `[('messages.${i}' : property '${field}' is unsupported)]`;
    }
  }
  return null;
}

/**
 * Kimi K2 in thinking mode (and DeepSeek's thinking mode, in its own words): a tool-calling assistant turn
 * without its `reasoning_content` is refused with this 400's message, or null.
 */
export function thinkingToolTurnRefusal(body: Body): string | null {
  const missing = assistantTurns(body).find(([, turn]) =>
    Array.isArray(turn.tool_calls) && typeof turn.reasoning_content !== "string"
  );
  return missing === undefined
    ? null
    : `thinking is enabled but reasoning_content is missing in assistant tool call message at index ${
      missing[0]
    }`;
}

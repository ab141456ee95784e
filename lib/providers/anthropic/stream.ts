/**
 * Anthropic's stream → OpenAI chunks, as one stream stage after `sseParseTransformer`.
 *
 * Anthropic streams typed events (`message_start`, `content_block_start/delta/stop`, `message_delta`,
 * `message_stop`, `ping`, `error`); OpenAI streams flat deltas. The stage keeps the little state the
 * translation needs — the completion's identity, which Anthropic block is which OpenAI tool call, usage so
 * far, the stop reason — and emits chunks that the openai SDK's strict stream helper accepts:
 *
 * - `message_start` → first chunk `delta: {role: "assistant", content: ""}`;
 * - text deltas → `content`; `tool_use` block start → a tool call `{index: k, id, type, function: {name,
 *   arguments: ""}}`, where k counts tool calls in this response (Anthropic's block index also counts text
 *   blocks); `input_json_delta` → `arguments` fragments on the same k (`{}` for a tool called without input);
 * - the reserved answer tool (a `response_format` served by a forced tool, `../shared/json_answer_tool.ts`) is
 *   the answer itself: its `input_json_delta`s are `content` as they arrive, and a turn that called no other
 *   tool finishes with `stop`;
 * - thinking (a `thinking` block's start text and its `thinking_delta`s) → `reasoning_content`, the chat
 *   form's reasoning, never `content`;
 * - signature and citation deltas, redacted thinking, `ping` and unknown event types are dropped (OpenAI chat
 *   has no place for them; Anthropic's versioning policy says new event types may appear);
 * - `message_stop` → a chunk `delta: {}` with the finish reason, then one usage-only chunk (the server removes
 *   it unless the client asked for usage) when the stream reported usable counts (none: the gateway counts the
 *   tokens itself, as for an OpenAI stream without usage); nothing after `message_stop` is read;
 * - an `error` event → the stream errors with the mapped `GatewayError`; a stream that ends before
 *   `message_stop` errors with a 502 instead of looking complete.
 *
 * @module
 */
import { badGateway } from "../../errors.ts";
import type { SseEvent } from "../../sse/parse.ts";
import { type ChunkIdentity, makeChunk, makeUsageChunk } from "../shared/chunks.ts";
import {
  answerFinishReason,
  anthropicStreamError,
  completionId,
  readAnthropicUsage,
  toOpenAIUsage,
} from "./response.ts";
import { isJsonAnswer } from "../shared/json_answer_tool.ts";
import { type ChatCompletionChunk, isObject, type JsonObject } from "../../openai/types.ts";
import type { SyncTransformer } from "../../streams/pull_through.ts";
import { promptOfUsage, withReportedPrompt } from "../../openai/reported_prompt.ts";

/** Options for {@linkcode anthropicChunkTransformer}. */
export interface anthropicChunkTransformerOptions {
  /** The provider's name in config, for error messages. */
  provider: string;
  /** The upstream model id, shown as `model` until the server replaces it with the alias. */
  model: string;
  /** Scrubbed from upstream error messages. */
  secrets?: readonly string[];
  /** Unix seconds for `created`; defaults to now. */
  created?: number;
}

/**
 * One open tool call: its OpenAI index (-1 for the answer tool, whose input is content) and whether any
 * argument text was sent for it yet.
 */
interface OpenTool {
  k: number;
  sentArguments: boolean;
}

/** Translates parsed Anthropic SSE events into OpenAI `chat.completion.chunk`s. */
export function anthropicChunkTransformer(
  options: anthropicChunkTransformerOptions,
): SyncTransformer<SseEvent, ChatCompletionChunk> {
  const { provider, model } = options;
  const secrets = options.secrets ?? [];
  const invalid = (what: string) =>
    badGateway(`Provider "${provider}" sent an invalid stream: ${what}.`, "upstream_invalid_response");
  let identity: ChunkIdentity | undefined;
  // The usage fields as reported so far (message_start's, each overlaid by message_delta's), read at the end.
  let reported: JsonObject = {};
  let stopReason: unknown = null;
  let toolCount = 0;
  let answered = false;
  const tools = new Map<number, OpenTool>();
  let done = false;

  return {
    transform(event, controller) {
      if (done) return;
      let data: unknown;
      try {
        data = JSON.parse(event.data);
      } catch {
        throw invalid("an event is not JSON");
      }
      if (!isObject(data)) throw invalid("an event is not an object");
      const type = typeof data.type === "string" ? data.type : event.event;
      if (type === "error") throw anthropicStreamError(provider, data, secrets);
      if (type === "ping") return;
      if (type === "message_start") {
        const message = isObject(data.message) ? data.message : {};
        identity = { id: completionId(message.id), created: options.created ?? nowSeconds(), model };
        reported = isObject(message.usage) ? { ...message.usage } : {};
        const start = makeChunk(identity, { role: "assistant", content: "" });
        // The prompt is counted already: a stream that breaks before message_stop is recorded with it, and
        // with its cache reads and writes, which are priced apart.
        const prompt = readAnthropicUsage({ output_tokens: 0, ...reported });
        controller.enqueue(prompt ? withReportedPrompt(start, promptOfUsage(toOpenAIUsage(prompt))) : start);
        return;
      }
      if (identity === undefined) throw invalid(`'${String(type)}' before message_start`);
      const id = identity;
      const emit = (delta: JsonObject) => controller.enqueue(makeChunk(id, delta));
      const index = typeof data.index === "number" ? data.index : -1;

      switch (type) {
        case "content_block_start": {
          const block = isObject(data.content_block) ? data.content_block : {};
          if (block.type === "text" && typeof block.text === "string" && block.text !== "") {
            emit({ content: block.text });
          } else if (
            block.type === "thinking" && typeof block.thinking === "string" && block.thinking !== ""
          ) {
            emit({ reasoning_content: block.thinking });
          } else if (block.type === "tool_use") {
            const answer = isJsonAnswer(block.name);
            const tool: OpenTool = { k: answer ? -1 : toolCount++, sentArguments: false };
            tools.set(index, tool);
            // Anthropic opens a tool_use block with `input: {}` and streams the input as JSON deltas; a
            // non-empty input here (not seen in practice) is sent whole.
            const input = isObject(block.input) && Object.keys(block.input).length > 0
              ? JSON.stringify(block.input)
              : "";
            tool.sentArguments = input !== "";
            if (answer) {
              answered = true;
              if (input !== "") emit({ content: input });
              return;
            }
            emit({
              tool_calls: [{
                index: tool.k,
                id: String(block.id),
                type: "function",
                function: { name: String(block.name), arguments: input },
              }],
            });
          }
          return;
        }
        case "content_block_delta": {
          const delta = isObject(data.delta) ? data.delta : {};
          if (delta.type === "text_delta" && typeof delta.text === "string" && delta.text !== "") {
            emit({ content: delta.text });
          } else if (
            delta.type === "thinking_delta" && typeof delta.thinking === "string" && delta.thinking !== ""
          ) {
            emit({ reasoning_content: delta.thinking });
          } else if (delta.type === "input_json_delta" && typeof delta.partial_json === "string") {
            const tool = tools.get(index);
            if (tool === undefined) throw invalid("input_json_delta for a block that is not a tool call");
            if (delta.partial_json === "") return;
            tool.sentArguments = true;
            if (tool.k < 0) emit({ content: delta.partial_json });
            else emit({ tool_calls: [{ index: tool.k, function: { arguments: delta.partial_json } }] });
          }
          return;
        }
        case "content_block_stop": {
          const tool = tools.get(index);
          if (tool !== undefined && !tool.sentArguments) {
            // A tool called without input: OpenAI clients parse `arguments`, so send an empty object.
            tool.sentArguments = true;
            if (tool.k < 0) emit({ content: "{}" });
            else emit({ tool_calls: [{ index: tool.k, function: { arguments: "{}" } }] });
          }
          return;
        }
        case "message_delta": {
          const delta = isObject(data.delta) ? data.delta : {};
          if (delta.stop_reason !== undefined && delta.stop_reason !== null) stopReason = delta.stop_reason;
          // Counts in message_delta are cumulative: take each one that is present (Anthropic sends null for
          // a count it does not update); one that is not a count makes the usage read at the end untrusted.
          const update = isObject(data.usage) ? data.usage : {};
          for (const [field, value] of Object.entries(update)) {
            if (value !== undefined && value !== null) reported[field] = value;
          }
          return;
        }
        case "message_stop": {
          done = true;
          controller.enqueue(makeChunk(id, {}, answerFinishReason(stopReason, answered && toolCount === 0)));
          const usage = readAnthropicUsage(reported);
          if (usage !== undefined) controller.enqueue(makeUsageChunk(id, toOpenAIUsage(usage)));
          controller.terminate();
          return;
        }
        default:
          return;
      }
    },
    flush() {
      if (!done) {
        throw badGateway(`Provider "${provider}" ended the stream before it was complete.`);
      }
    },
  };
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

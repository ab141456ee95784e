/**
 * ConverseStream events (decoded event-stream messages) → OpenAI `chat.completion.chunk`s.
 *
 *   messageStart        → first chunk: role "assistant", content ""
 *   contentBlockStart   → (toolUse) first tool-call fragment: index k, id, type, name, arguments ""
 *   contentBlockDelta   → text content, reasoning text (→ `reasoning_content`), or a tool call's argument
 *                         fragment; reasoning signatures and redacted reasoning are not forwarded
 *   (answer tool)       → the reserved tool of a `response_format` (`../shared/json_answer_tool.ts`): its
 *                         input fragments are text content, and it is not a tool call
 *   messageStop         → the finish chunk with the mapped finish_reason (`stop` when only the answer tool
 *                         was called); a malformed tool use or output errors the stream (a 502)
 *   metadata            → one usage-only chunk (the server drops it unless the client asked for usage), when
 *                         its usage has counts (none: the gateway counts the tokens itself)
 *   exception frames    → the stream errors with a GatewayError, so the client gets an OpenAI error event
 *
 * A stream that ends before `messageStop` was cut short and errors rather than looking complete.
 *
 * @module
 */
import { badGateway } from "../../errors.ts";
import { type ChunkIdentity, makeChunk, makeUsageChunk, newCompletionId } from "../shared/chunks.ts";
import { answerStopReason, bedrockStreamError, bedrockStreamException, mapUsage } from "./response.ts";
import { isJsonAnswer } from "../shared/json_answer_tool.ts";
import type { EventStreamMessage } from "./eventstream.ts";
import { type ChatCompletionChunk, isObject, type JsonObject } from "../../openai/types.ts";
import type { SyncTransformer } from "../../streams/pull_through.ts";

function parsePayload(provider: string, message: EventStreamMessage): JsonObject {
  if (message.payload.length === 0) return {};
  try {
    const json = JSON.parse(new TextDecoder().decode(message.payload));
    if (isObject(json)) return json;
  } catch { /* reported below */ }
  throw badGateway(
    `Provider "${provider}" sent a stream event that is not a JSON object.`,
    "upstream_invalid_response",
  );
}

/** Options for {@linkcode converseChunkTransformer}. */
export interface converseChunkTransformerOptions {
  provider: string;
  model: string;
  /** Scrubbed from upstream messages that reach the client. */
  secrets?: readonly string[];
  identity?: ChunkIdentity;
}

/** Event-stream messages → chunks; see the module documentation for the mapping. */
export function converseChunkTransformer(
  options: converseChunkTransformerOptions,
): SyncTransformer<EventStreamMessage, ChatCompletionChunk> {
  const { provider } = options;
  const identity: ChunkIdentity = options.identity ?? {
    id: newCompletionId(),
    created: Math.floor(Date.now() / 1000),
    model: options.model,
  };
  let started = false;
  let stopped = false;
  let usageSent = false;
  /** contentBlockIndex → OpenAI tool_calls index; -1 for the answer tool, whose input is content. */
  const toolIndex = new Map<number, number>();
  let clientTools = 0;
  let answered = false;
  /** Answer-tool blocks whose input has not started yet (an empty input is still the answer `{}`). */
  const answersPending = new Set<number>();
  /** Blocks of client tool calls whose input has not begun yet. */
  const callsWithoutInput = new Set<number>();
  const start = (controller: TransformStreamDefaultController<ChatCompletionChunk>) => {
    if (started) return;
    started = true;
    controller.enqueue(makeChunk(identity, { role: "assistant", content: "" }));
  };
  return {
    transform(message, controller) {
      const messageType = message.headers[":message-type"];
      if (messageType === "exception") {
        const payload = parsePayload(provider, message);
        const type = String(message.headers[":exception-type"] ?? "unknownException");
        const text = typeof payload.message === "string" ? payload.message : null;
        throw bedrockStreamException(provider, type, text, options.secrets ?? [], payload);
      }
      if (messageType === "error") {
        throw bedrockStreamError(provider, message.headers, options.secrets ?? []);
      }
      if (messageType !== "event") return;
      const event = parsePayload(provider, message);
      switch (message.headers[":event-type"]) {
        case "messageStart":
          start(controller);
          break;
        case "contentBlockStart": {
          start(controller);
          const begin = isObject(event.start) ? event.start : {};
          if (isObject(begin.toolUse) && isJsonAnswer(begin.toolUse.name)) {
            toolIndex.set(Number(event.contentBlockIndex ?? 0), -1);
            answersPending.add(Number(event.contentBlockIndex ?? 0));
            answered = true;
          } else if (isObject(begin.toolUse)) {
            const k = clientTools++;
            toolIndex.set(Number(event.contentBlockIndex ?? 0), k);
            callsWithoutInput.add(Number(event.contentBlockIndex ?? 0));
            controller.enqueue(makeChunk(identity, {
              tool_calls: [{
                index: k,
                id: String(begin.toolUse.toolUseId),
                type: "function",
                function: { name: String(begin.toolUse.name), arguments: "" },
              }],
            }));
          }
          break;
        }
        case "contentBlockDelta": {
          start(controller);
          const delta = isObject(event.delta) ? event.delta : {};
          if (typeof delta.text === "string") {
            if (delta.text !== "") controller.enqueue(makeChunk(identity, { content: delta.text }));
          } else if (isObject(delta.reasoningContent)) {
            const text = delta.reasoningContent.text;
            if (typeof text === "string" && text !== "") {
              controller.enqueue(makeChunk(identity, { reasoning_content: text }));
            }
          } else if (isObject(delta.toolUse) && typeof delta.toolUse.input === "string") {
            const k = toolIndex.get(Number(event.contentBlockIndex ?? 0));
            if (k === undefined) {
              throw badGateway(
                `Provider "${provider}" sent tool input for a block it never started.`,
                "upstream_invalid_response",
              );
            }
            if (k < 0) {
              if (delta.toolUse.input !== "") {
                answersPending.delete(Number(event.contentBlockIndex ?? 0));
                controller.enqueue(makeChunk(identity, { content: delta.toolUse.input }));
              }
            } else if (delta.toolUse.input !== "") {
              callsWithoutInput.delete(Number(event.contentBlockIndex ?? 0));
              controller.enqueue(makeChunk(identity, {
                tool_calls: [{ index: k, function: { arguments: delta.toolUse.input } }],
              }));
            }
          }
          // Other delta kinds (citations, …) have no OpenAI chunk field; they are not forwarded.
          break;
        }
        case "contentBlockStop": {
          const block = Number(event.contentBlockIndex ?? 0);
          if (answersPending.delete(block)) controller.enqueue(makeChunk(identity, { content: "{}" }));
          // A call with no input streamed: its arguments are `{}`, as the whole answer and Anthropic's stream
          // give them, never an empty string a client cannot parse.
          if (callsWithoutInput.delete(block)) {
            controller.enqueue(makeChunk(identity, {
              tool_calls: [{ index: toolIndex.get(block)!, function: { arguments: "{}" } }],
            }));
          }
          break;
        }
        case "messageStop":
          start(controller);
          stopped = true;
          controller.enqueue(
            makeChunk(
              identity,
              {},
              answerStopReason(provider, event.stopReason, answered && clientTools === 0),
            ),
          );
          break;
        case "metadata":
          if (!usageSent) {
            usageSent = true;
            const usage = mapUsage(event.usage);
            if (usage !== undefined) controller.enqueue(makeUsageChunk(identity, usage));
          }
          break;
        default:
          break;
      }
    },
    flush() {
      if (!stopped) throw badGateway(`Provider "${provider}" ended the stream before it was complete.`);
    },
  };
}

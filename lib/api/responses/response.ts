/**
 * The Response object (OpenAI Responses API) built from the chat form: a whole `ChatCompletion` for a
 * non-streamed answer, and the same builder for the snapshots a stream's events carry. Shapes follow
 * OpenAI's `Response`, `OutputMessage`, `ReasoningItem`, `FunctionToolCall` and `ResponseUsage` schemas
 * exactly (tests validate them against the published spec), with the alias as `model`.
 *
 * @module
 */
import { clientCall } from "./namespaces.ts";
import { customCallItem } from "./custom_tools.ts";
import type { ChatCompletion, JsonObject, Usage } from "../../openai/types.ts";
import type { ResponseParams } from "./request.ts";
import { tokenClassesOf } from "../../pricing/cost.ts";
import { gatewayReasoningId } from "./gateway_reasoning.ts";

/** `resp_`, `msg_`, `fc_` … followed by 48 random hex digits, like OpenAI's ids. */
export function newId(prefix: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Response `status`. */
export type ResponseStatus = "in_progress" | "completed" | "incomplete" | "failed";

/** `ResponseUsage` from the chat usage: cached and reasoning token counts kept, zero when not reported. */
export function responseUsage(usage: Usage): JsonObject {
  // The chat form's classes as the gateway reads them everywhere (its cache writes are by lifetime).
  const classes = tokenClassesOf(usage.prompt_tokens, usage.completion_tokens, usage);
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: {
      cached_tokens: classes.cachedRead ?? 0,
      cache_write_tokens: (classes.cacheWrite5m ?? 0) + (classes.cacheWrite1h ?? 0),
    },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: classes.reasoning ?? 0 },
    total_tokens: usage.total_tokens ?? usage.prompt_tokens + usage.completion_tokens,
  };
}

/**
 * How a chat `finish_reason` ends a Response: `length` is OpenAI's `max_output_tokens` incomplete reason,
 * `content_filter` its own; everything else completes.
 */
export function endOf(finishReason: unknown): { status: ResponseStatus; reason: string | null } {
  if (finishReason === "length") return { status: "incomplete", reason: "max_output_tokens" };
  if (finishReason === "content_filter") return { status: "incomplete", reason: "content_filter" };
  return { status: "completed", reason: null };
}

/** An `output_text` content part. */
export function outputText(text: string): JsonObject {
  return { type: "output_text", text, annotations: [], logprobs: [] };
}

/** An assistant `message` output item. */
export function messageItem(id: string, status: string, content: JsonObject[]): JsonObject {
  return { id, type: "message", status, role: "assistant", content };
}

/** A `summary_text` part of a reasoning item's summary. */
export function summaryText(text: string): JsonObject {
  return { type: "summary_text", text };
}

/**
 * A `reasoning` output item. The chat form's `reasoning_content` (how DeepSeek, vLLM and the gateway's own
 * providers carry upstream reasoning) becomes its summary: the Responses API's readable form of reasoning,
 * and the one its clients show. The gateway's own have ids it knows again (gateway_reasoning.ts).
 */
export function reasoningItem(id: string, status: string, summary: JsonObject[]): JsonObject {
  return { id, type: "reasoning", status, summary };
}

/**
 * A `function_call` output item; a `custom_tool_call` one when the function stands for a custom tool of the
 * request (custom_tools.ts).
 */
export function functionCallItem(
  id: string,
  status: string,
  call: { call_id: string; name: string; arguments: string },
  tools: readonly JsonObject[] = [],
): JsonObject {
  // A tool of a namespace tool was called by its flat chat name: the client gets its name and namespace.
  const { name, namespace, custom } = clientCall(tools, call.name);
  if (custom) return customCallItem(id, status, { ...call, name }, namespace);
  const item: JsonObject = {
    id,
    type: "function_call",
    status,
    call_id: call.call_id,
    name,
    arguments: call.arguments,
  };
  if (namespace !== undefined) item.namespace = namespace;
  return item;
}

/** What identifies one Response and what it echoes. */
export interface ResponseFrame {
  id: string;
  /** Unix seconds. */
  createdAt: number;
  alias: string;
  params: ResponseParams;
  /** The tools the model may call, when the input added some (`ResponsesRequest.callable`); else `params.tools`. */
  callable?: readonly JsonObject[];
}

/** A Response object: the frame, its state, and its output so far. */
export function responseObject(
  frame: ResponseFrame,
  state: {
    status: ResponseStatus;
    output: JsonObject[];
    usage?: JsonObject | null;
    incompleteReason?: string | null;
    error?: JsonObject | null;
  },
): JsonObject {
  const p = frame.params;
  const response: JsonObject = {
    id: frame.id,
    object: "response",
    created_at: frame.createdAt,
    status: state.status,
    background: false,
    completed_at: state.status === "completed" ? Math.floor(Date.now() / 1000) : null,
    error: state.error ?? null,
    incomplete_details: state.incompleteReason ? { reason: state.incompleteReason } : null,
    instructions: p.instructions,
    max_output_tokens: p.max_output_tokens,
    max_tool_calls: p.max_tool_calls,
    model: frame.alias,
    output: state.output,
    parallel_tool_calls: p.parallel_tool_calls,
    previous_response_id: p.previous_response_id,
    prompt_cache_key: p.prompt_cache_key,
    reasoning: p.reasoning,
    safety_identifier: p.safety_identifier,
    service_tier: p.service_tier,
    store: p.store,
    temperature: p.temperature,
    text: p.text,
    tool_choice: p.tool_choice,
    tools: p.tools,
    top_logprobs: 0,
    top_p: p.top_p,
    truncation: p.truncation,
    usage: state.usage ?? null,
    user: p.user,
    metadata: p.metadata,
  };
  // The spec types these two as present-or-absent, never null (`ResponseUsage`, a string): a snapshot before
  // the end has no usage, and a request without `user` has none to echo.
  if (response.usage === null) delete response.usage;
  if (response.user === null) delete response.user;
  return response;
}

/**
 * The output items of a chat completion's first choice: its reasoning, its message (text, refusal), then its
 * tool calls (OpenAI's order). At an incomplete end the last item, the one being written when the output
 * stopped (a call whose arguments were cut off, or the message), is `incomplete`; the ones before it were
 * finished, as a stream closes them (stream.ts).
 */
function outputItems(message: JsonObject, incomplete: boolean, tools: readonly JsonObject[]): JsonObject[] {
  const out: JsonObject[] = [];
  if (typeof message.reasoning_content === "string" && message.reasoning_content !== "") {
    out.push(reasoningItem(gatewayReasoningId(), "completed", [summaryText(message.reasoning_content)]));
  }
  const content: JsonObject[] = [];
  if (typeof message.content === "string" && message.content !== "") {
    content.push(outputText(message.content));
  }
  if (typeof message.refusal === "string" && message.refusal !== "") {
    content.push({ type: "refusal", refusal: message.refusal });
  }
  if (content.length > 0) out.push(messageItem(newId("msg_"), "completed", content));
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls as JsonObject[] : [];
  for (const call of calls) {
    const fn = (call.function ?? {}) as { name?: unknown; arguments?: unknown };
    out.push(functionCallItem(newId("fc_"), "completed", {
      call_id: typeof call.id === "string" ? call.id : newId("call_"),
      name: typeof fn.name === "string" ? fn.name : "",
      arguments: typeof fn.arguments === "string" ? fn.arguments : "",
    }, tools));
  }
  const last = out.at(-1);
  if (incomplete && last !== undefined) last.status = "incomplete";
  return out;
}

/**
 * A whole chat completion as a Response. `usage` is the upstream's, or the gateway's count when the upstream
 * reported none (so a Response always carries usage, as OpenAI's do).
 */
export function completionToResponse(
  completion: ChatCompletion,
  frame: ResponseFrame,
  usage: Usage,
): JsonObject {
  const choice = (completion.choices[0] ?? {}) as JsonObject;
  const message = (choice.message ?? {}) as JsonObject;
  const end = endOf(choice.finish_reason);
  const output = outputItems(message, end.status === "incomplete", frame.callable ?? frame.params.tools);
  return responseObject(frame, {
    status: end.status,
    output,
    usage: responseUsage(usage),
    incompleteReason: end.reason,
  });
}

/**
 * A stored Response as the event stream that builds it, for `GET /v1/responses/{id}?stream=true` (the
 * `openai` SDK's `responses.retrieve(id, {stream: true})`): `response.created`, `response.in_progress`, each
 * output item added, its text (a message's parts, a reasoning item's summary, a call's arguments, a custom
 * call's input) as one delta and its `.done`, the item done, then the stored end (`response.completed`,
 * `.incomplete` or `.failed`), numbered from 0 so `starting_after` resumes where a client left off.
 *
 * The translated stream's builder (stream.ts) reads chat chunks and gives items new ids, and a native target's
 * Response may hold items it never builds (a web search call): the replay is written from the stored items
 * themselves, so every id, item and the final Response are the stored ones. Items without text of their own are
 * added as stored and done at once.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import { type ResponseEvent, streamErrorEvent } from "./stream_events.ts";

/** The stored status's final event; a response stored unfinished ends as OpenAI's `response.failed` would not. */
const ENDS: Readonly<Record<string, string>> = {
  completed: "response.completed",
  incomplete: "response.incomplete",
  failed: "response.failed",
};

/** The Response before any output: what `response.created` and `response.in_progress` carry. */
function started(response: JsonObject): JsonObject {
  const out: JsonObject = {
    ...response,
    status: "in_progress",
    output: [],
    error: null,
    incomplete_details: null,
  };
  if ("completed_at" in out) out.completed_at = null;
  delete out.usage;
  return out;
}

/** A message's content parts, each added empty, its text as one delta, then done. */
function messageEvents(item: JsonObject, at: JsonObject): ResponseEvent[] {
  const parts = Array.isArray(item.content) ? item.content.filter(isObject) : [];
  return parts.flatMap((part, content_index): ResponseEvent[] => {
    const where = { ...at, content_index };
    if (part.type === "output_text") {
      const text = String(part.text ?? "");
      const logprobs: unknown[] = Array.isArray(part.logprobs) ? part.logprobs : [];
      return [
        { type: "response.content_part.added", ...where, part: { ...part, text: "" } },
        { type: "response.output_text.delta", ...where, delta: text, logprobs },
        { type: "response.output_text.done", ...where, text, logprobs },
        { type: "response.content_part.done", ...where, part },
      ];
    }
    if (part.type === "refusal") {
      const refusal = String(part.refusal ?? "");
      return [
        { type: "response.content_part.added", ...where, part: { ...part, refusal: "" } },
        { type: "response.refusal.delta", ...where, delta: refusal },
        { type: "response.refusal.done", ...where, refusal },
        { type: "response.content_part.done", ...where, part },
      ];
    }
    return [
      { type: "response.content_part.added", ...where, part },
      { type: "response.content_part.done", ...where, part },
    ];
  });
}

/** A reasoning item's summary parts, each added empty, its text as one delta, then done. */
function reasoningEvents(item: JsonObject, at: JsonObject): ResponseEvent[] {
  const parts = Array.isArray(item.summary) ? item.summary.filter(isObject) : [];
  return parts.flatMap((part, summary_index): ResponseEvent[] => {
    const where = { ...at, summary_index };
    const text = String(part.text ?? "");
    return [
      { type: "response.reasoning_summary_part.added", ...where, part: { ...part, text: "" } },
      { type: "response.reasoning_summary_text.delta", ...where, delta: text },
      { type: "response.reasoning_summary_text.done", ...where, text },
      { type: "response.reasoning_summary_part.done", ...where, part },
    ];
  });
}

/** One output item's events: added (in progress, its text not yet there), its text, done as stored. */
function itemEvents(item: JsonObject, output_index: number): ResponseEvent[] {
  const at = { item_id: item.id, output_index };
  const progress = "status" in item ? { status: "in_progress" } : {};
  let added: JsonObject = item;
  let inner: ResponseEvent[] = [];
  if (item.type === "message") {
    added = { ...item, ...progress, content: [] };
    inner = messageEvents(item, at);
  } else if (item.type === "reasoning") {
    added = { ...item, ...progress, summary: [] };
    inner = reasoningEvents(item, at);
  } else if (item.type === "function_call") {
    const args = String(item.arguments ?? "");
    added = { ...item, ...progress, arguments: "" };
    inner = [
      { type: "response.function_call_arguments.delta", ...at, delta: args },
      { type: "response.function_call_arguments.done", ...at, name: item.name, arguments: args },
    ];
  } else if (item.type === "custom_tool_call") {
    const input = String(item.input ?? "");
    added = { ...item, ...progress, input: "" };
    inner = [
      { type: "response.custom_tool_call_input.delta", ...at, delta: input },
      { type: "response.custom_tool_call_input.done", ...at, input },
    ];
  }
  return [
    { type: "response.output_item.added", output_index, item: added },
    ...inner,
    { type: "response.output_item.done", output_index, item },
  ];
}

/**
 * The events of stored Response `response`, numbered from 0, only those after sequence number `startingAfter`
 * (all of them when it is undefined).
 */
export function replayEvents(response: JsonObject, startingAfter?: number): ResponseEvent[] {
  const output = Array.isArray(response.output) ? response.output.filter(isObject) : [];
  const end = ENDS[String(response.status)] ?? "response.completed";
  const events: ResponseEvent[] = [
    { type: "response.created", response: started(response) },
    { type: "response.in_progress", response: started(response) },
    ...output.flatMap((item, i) => itemEvents(item, i)),
  ];
  if (end === "response.failed" && isObject(response.error)) {
    events.push(streamErrorEvent(response.error.code, response.error.message));
  }
  events.push({ type: end, response });
  return events
    .map((event, i) => ({ ...event, sequence_number: i }))
    .filter((event) => startingAfter === undefined || event.sequence_number > startingAfter);
}

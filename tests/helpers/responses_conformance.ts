/**
 * What a Responses API client may rely on, checked on the wire: every Response object validates against the
 * spec's `Response` and every streamed event against `ResponseStreamEvent` (when the spec is at hand, see
 * `openapi_schema.ts`), and a stream holds together whatever the spec cannot say: sequence numbers rise by
 * one from 0, it starts with `response.created` + `response.in_progress` (their output empty, as OpenAI's)
 * and ends with exactly one terminal event, each item is added before anything refers to it and nothing refers
 * to it after its `output_item.done`, deltas concatenate to their `.done` text and to the text of the item
 * done, and the final Response holds exactly the items that were done, each `completed` (at
 * `response.incomplete` the last may be `incomplete`); a `response.failed` that lists output holds the items
 * done as they were and the open ones as their deltas built them, `incomplete`.
 *
 * {@linkcode ResponsesWire} records what the `openai` SDK received (its `fetch` option) so SDK-driven tests
 * check the bytes the SDK parsed, not the SDK's view of them.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { OpenApiSchemas } from "./openapi_schema.ts";

/** One parsed stream event. */
export type WireEvent = Record<string, unknown> & { type: string; sequence_number: number };

/** Validates a Response object (and the shapes the gateway promises on top of the spec). */
export function checkResponse(schemas: OpenApiSchemas | null, response: unknown, what = "Response"): void {
  schemas?.assert("Response", response, what);
  const r = response as Record<string, unknown>;
  assert.match(String(r.id), /^resp_[0-9a-f]{48}$/, `${what}: id`);
  assert.equal(r.object, "response", `${what}: object`);
}

/** The frames of an SSE body: each exactly one `event:` line and one `data:` line that agree on the type. */
export function parseSse(text: string): WireEvent[] {
  const events: WireEvent[] = [];
  for (const frame of text.split("\n\n")) {
    if (frame.trim() === "") continue;
    const lines = frame.split("\n");
    assert.equal(lines.length, 2, `one event line and one data line: ${frame}`);
    assert.match(lines[0], /^event: /);
    assert.match(lines[1], /^data: /);
    const event = JSON.parse(lines[1].slice("data: ".length)) as WireEvent;
    assert.equal(lines[0].slice("event: ".length), event.type, "the event line names the data's type");
    events.push(event);
  }
  return events;
}

const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed"]);

/** Text a delta event family builds, keyed by item and part. */
function keyOf(e: WireEvent): string {
  return `${e.item_id}/${e.content_index ?? e.summary_index ?? ""}`;
}

/**
 * Checks a whole stream (see the module doc). Returns the terminal event's Response. `schemas` null skips
 * only the schema validation.
 */
export function checkEvents(schemas: OpenApiSchemas | null, events: WireEvent[]): Record<string, unknown> {
  assert.ok(events.length >= 3, `a stream has at least created, in_progress and an end: ${events.length}`);
  events.forEach((e, i) => {
    assert.equal(e.sequence_number, i, `sequence numbers rise by one from 0 (${e.type})`);
    schemas?.assert("ResponseStreamEvent", e, `event ${i} (${e.type})`);
    if ("response" in e) checkResponse(schemas, e.response, `${e.type}.response`);
  });
  assert.equal(events[0].type, "response.created");
  assert.equal(events[1].type, "response.in_progress");
  // Nothing has been added yet: an item listed here would be added twice (the `openai` SDK's stream() throws).
  for (const e of events.slice(0, 2)) {
    assert.deepEqual((e.response as { output: unknown[] }).output, [], `${e.type} lists no output yet`);
  }
  const last = events.at(-1)!;
  assert.ok(TERMINAL.has(last.type), `the stream ends with a terminal event, not ${last.type}`);
  assert.equal(events.filter((e) => TERMINAL.has(e.type)).length, 1, "exactly one terminal event");
  if (last.type === "response.failed") assert.equal(events.at(-2)!.type, "error", "error, then failed");
  const id = (events[0].response as { id: string }).id;
  for (const e of events) {
    if ("response" in e) assert.equal((e.response as { id: string }).id, id, "one response id throughout");
  }

  const open = new Map<string, number>(); // item id → output_index, while added and not done
  const done = new Map<number, Record<string, unknown>>();
  const deltas = new Map<string, string>();
  for (const e of events) {
    if (e.type === "response.output_item.added") {
      const item = e.item as { id: string };
      assert.ok(!open.has(item.id) && !done.has(e.output_index as number), `item ${item.id} added once`);
      assert.equal(e.output_index, open.size + done.size, "output indexes are given in order");
      open.set(item.id, e.output_index as number);
      continue;
    }
    if (e.type === "response.output_item.done") {
      const item = e.item as { id: string };
      assert.equal(open.get(item.id), e.output_index, `item ${item.id} was added at this index and is open`);
      open.delete(item.id);
      done.set(e.output_index as number, item);
      continue;
    }
    if (typeof e.item_id === "string") {
      assert.equal(
        open.get(e.item_id),
        e.output_index,
        `${e.type} (#${e.sequence_number}) refers to an open item at its index`,
      );
    }
    if (e.type.endsWith(".delta")) {
      const key = `${e.type.slice(0, -".delta".length)}|${keyOf(e)}`;
      deltas.set(key, (deltas.get(key) ?? "") + String(e.delta));
    }
    const whole = e.type === "response.output_text.done" || e.type === "response.reasoning_summary_text.done"
      ? e.text
      : e.type === "response.refusal.done"
      ? e.refusal
      : e.type === "response.function_call_arguments.done"
      ? e.arguments
      : e.type === "response.custom_tool_call_input.done"
      ? e.input
      : undefined;
    if (whole !== undefined) {
      const key = `${e.type.slice(0, -".done".length)}|${keyOf(e)}`;
      assert.equal(deltas.get(key) ?? "", whole, `${e.type}: the deltas concatenate to the final text`);
    }
  }

  for (const [, item] of done) assertBuiltByDeltas(item, deltas, "output_item.done");
  const final = last.response as { output: Record<string, unknown>[] };
  if (last.type !== "response.failed") {
    assert.equal(open.size, 0, "every item added is done before the end");
    const items = [...done.entries()].sort(([a], [b]) => a - b).map(([, item]) => item);
    assert.deepEqual(final.output, items, "the final Response holds exactly the items that were done");
    // Completed: every item is. Incomplete: only the last, the one being written when the output stopped, may
    // not be.
    final.output.forEach((item, i) => {
      if (item.status === undefined) return;
      const cut = last.type === "response.incomplete" && i === final.output.length - 1;
      assert.ok(
        item.status === "completed" || (cut && item.status === "incomplete"),
        `${last.type}: item ${i} (${item.type}) is ${item.status}`,
      );
    });
  } else if (final.output.length > 0) {
    // Failed: the items done as they were done, the ones still open as their deltas built them, incomplete. (A
    // native passthrough's own failure carries the last Response the upstream sent, with no output yet: not
    // held to it.)
    assert.equal(final.output.length, open.size + done.size, "response.failed holds every item added");
    final.output.forEach((item, i) => {
      const whole = done.get(i);
      if (whole !== undefined) return assert.deepEqual(item, whole, `response.failed: item ${i} as done`);
      assert.equal(open.get(String(item.id)), i, `response.failed: item ${i} is the one added there`);
      assert.equal(item.status, "incomplete", `response.failed: open item ${i} is incomplete`);
      assertBuiltByDeltas(item, deltas, "response.failed");
    });
  }
  return last.response as Record<string, unknown>;
}

/**
 * An item's text (a message's parts, a reasoning item's summary, a call's arguments, a custom call's input) is
 * what its deltas added, part by part: what a client that reads only the deltas shows.
 */
function assertBuiltByDeltas(
  item: Record<string, unknown>,
  deltas: Map<string, string>,
  where: string,
): void {
  const built = (family: string, index: number | "") => deltas.get(`${family}|${item.id}/${index}`) ?? "";
  const what = `${where}: ${item.type} ${item.id}`;
  if (item.type === "message" && Array.isArray(item.content)) {
    (item.content as Record<string, unknown>[]).forEach((part, i) => {
      if (part.type === "output_text") assert.equal(part.text, built("response.output_text", i), what);
      if (part.type === "refusal") assert.equal(part.refusal, built("response.refusal", i), what);
    });
  } else if (item.type === "reasoning" && Array.isArray(item.summary)) {
    (item.summary as Record<string, unknown>[]).forEach((part, i) => {
      assert.equal(part.text, built("response.reasoning_summary_text", i), what);
    });
  } else if (item.type === "function_call") {
    assert.equal(item.arguments, built("response.function_call_arguments", ""), what);
  } else if (item.type === "custom_tool_call") {
    assert.equal(item.input, built("response.custom_tool_call_input", ""), what);
  }
}

/** `output_text` as the SDKs compute it: every `output_text` part of every message, joined. */
export function outputTextOf(response: Record<string, unknown>): string {
  const output = response.output as { type: string; content?: { type: string; text?: string }[] }[];
  return output.flatMap((i) => i.type === "message" ? i.content ?? [] : [])
    .filter((p) => p.type === "output_text").map((p) => p.text).join("");
}

/**
 * Records every `/responses` answer the SDK receives through its `fetch` option (a copy of the body is read
 * on the side, so the SDK streams as before) and checks each: a Response object, or a whole stream.
 */
export class ResponsesWire {
  readonly #pending: Promise<void>[] = [];
  readonly #failures: unknown[] = [];
  /** How many Response objects and streams were checked. */
  readonly counts = { responses: 0, streams: 0 };

  constructor(private readonly schemas: OpenApiSchemas | null) {}

  /** A `fetch` for the SDK's options. */
  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await globalThis.fetch(input, init);
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (response.ok && /\/responses(\/[^/]+)?$/.test(url.pathname)) {
      const copy = response.clone();
      this.#pending.push(this.#check(copy).catch((err) => void this.#failures.push(err)));
    }
    return response;
  };

  async #check(response: Response): Promise<void> {
    const type = response.headers.get("content-type") ?? "";
    if (type.startsWith("text/event-stream")) {
      checkEvents(this.schemas, parseSse(await response.text()));
      this.counts.streams++;
    } else {
      const body = await response.json() as Record<string, unknown>;
      if (body.object !== "response") return; // e.g. a deletion's confirmation
      checkResponse(this.schemas, body);
      this.counts.responses++;
    }
  }

  /** Waits for every recorded answer and throws the first violation found. */
  async check(): Promise<{ responses: number; streams: number }> {
    await Promise.all(this.#pending);
    if (this.#failures.length > 0) throw this.#failures[0];
    return this.counts;
  }
}

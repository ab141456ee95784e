/**
 * A fake upstream speaking OpenAI's Responses API natively (`POST /v1/responses`, JSON and the SSE event
 * stream with `event:` lines and sequence numbers, per the published spec), with behaviour picked by the
 * upstream `model`, so one server covers every scenario:
 *
 * - `resp-ok`: answers by what the request holds: after a `function_call_output`, {@linkcode NATIVE_AFTER_TOOL};
 *   with the `get_weather` function tool, a `function_call`; with a `web_search` tool, a `web_search_call` item,
 *   then the answer; with a `json_schema` text format, {@linkcode NATIVE_JSON}; otherwise a `reasoning` item (with
 *   a summary, and {@linkcode NATIVE_ENCRYPTED} content when `include` asks for it) and
 *   {@linkcode NATIVE_ANSWER}. Usage {@linkcode NATIVE_USAGE}.
 * - `resp-program`: a `program` item and its `program_output` (programmatic tool calling), then
 *   {@linkcode NATIVE_ANSWER}.
 * - `resp-length`: a partial answer, `incomplete` with reason `max_output_tokens`.
 * - `resp-error`: streams `response.created`, a delta, then an `error` event (rate limit).
 * - `resp-cut`: streams `response.created`, a delta, then the connection is torn down.
 * - `resp-held`: streams up to its first text delta, then waits for the test to resolve `release` before the
 *   rest (a whole, completed stream).
 * - `resp-hang`: streams `response.created`, a delta, then nothing until the request is aborted (noted in
 *   `aborted`).
 * - `resp-500`: an HTTP 500 with OpenAI's error body.
 *
 * `POST /v1/responses/compact` answers any model with the input's user messages and one `compaction` item.
 *
 * Every request is recorded (`requests`), and every response it made is kept (but one asked for with `store:
 * false`, as OpenAI keeps none) so `previous_response_id` can be checked: an unknown one is a 400 as OpenAI answers.
 * As OpenAI, a `store: false` request whose input holds a `reasoning` item without `encrypted_content` is a 404
 * (the item can only be looked up by its id, and nothing is kept).
 *
 * @module
 */

/** The key the fake expects; another key gets 401. */
export const NATIVE_KEY = "sk-native-upstream-key-0987654321";
/** `resp-ok`'s plain answer. */
export const NATIVE_ANSWER = "Native hello from the Responses upstream!";
/** `resp-ok`'s answer after a tool result. */
export const NATIVE_AFTER_TOOL = "It is 21 degrees in Paris.";
/** `resp-ok`'s answer under a json_schema format. */
export const NATIVE_JSON = '{"greeting":"bonjour"}';
/** The summary of `resp-ok`'s reasoning item. */
export const NATIVE_SUMMARY = "Thinking about a greeting.";
/** What a reasoning item's `encrypted_content` starts with (then its id), when `include` asks for it. */
export const NATIVE_ENCRYPTED = "enc-upstream-reasoning-";
/** The usage `resp-ok` reports (input, output). */
export const NATIVE_USAGE = { input: 31, output: 9, cached: 4, reasoning: 3 };

/** One request the fake received. */
export interface NativeRequest {
  path: string;
  headers: Headers;
  body: Record<string, unknown>;
}

/** A running fake. */
export interface FakeNativeUpstream {
  /** Base URL including `/v1`. */
  baseURL: string;
  requests: NativeRequest[];
  /** Ids of the responses it made and kept (not those of `store: false` requests). */
  made: Set<string>;
  /** Resolved by the test to let a `resp-held` stream go on; replace it before each use. */
  release: PromiseWithResolvers<void>;
  /** Resolved when a `resp-hang` stream is aborted by the gateway. */
  aborted: PromiseWithResolvers<void>;
  stop(): Promise<void>;
}

type Json = Record<string, unknown>;
const encoder = new TextEncoder();
let counter = 0;
const upId = (prefix: string) => `${prefix}_up${(++counter).toString().padStart(6, "0")}`;

function words(text: string): string[] {
  return text.match(/\S+\s*/g) ?? [text];
}

/** The Response object the fake answers with, echoing the request as OpenAI does. */
function responseObject(req: Json, id: string, status: string, output: Json[], extra: Json = {}): Json {
  const reasoning = (req.reasoning ?? {}) as Json;
  return {
    id,
    object: "response",
    created_at: 1_700_000_000,
    status,
    background: false,
    completed_at: status === "completed" ? 1_700_000_001 : null,
    error: null,
    incomplete_details: null,
    instructions: req.instructions ?? null,
    max_output_tokens: req.max_output_tokens ?? null,
    max_tool_calls: null,
    model: req.model,
    output,
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    previous_response_id: req.previous_response_id ?? null,
    prompt_cache_key: null,
    reasoning: { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null },
    safety_identifier: null,
    service_tier: "default",
    store: req.store ?? true,
    temperature: req.temperature ?? 1,
    text: req.text ?? { format: { type: "text" } },
    tool_choice: req.tool_choice ?? "auto",
    tools: req.tools ?? [],
    top_logprobs: 0,
    top_p: req.top_p ?? 1,
    truncation: req.truncation ?? "disabled",
    metadata: req.metadata ?? {},
    // The spec has no null for these: OpenAI leaves them out until there is one.
    ...(typeof req.user === "string" ? { user: req.user } : {}),
    ...extra,
  };
}

function usage(): Json {
  return {
    input_tokens: NATIVE_USAGE.input,
    input_tokens_details: { cached_tokens: NATIVE_USAGE.cached, cache_write_tokens: 0 },
    output_tokens: NATIVE_USAGE.output,
    output_tokens_details: { reasoning_tokens: NATIVE_USAGE.reasoning },
    total_tokens: NATIVE_USAGE.input + NATIVE_USAGE.output,
  };
}

/** An output item with what its stream events need: its final form and its events between added and done. */
interface Planned {
  item: Json;
  /** The item as `output_item.added` shows it. */
  added: Json;
  /** The events between added and done (without output_index, added by the writer). */
  middle: Json[];
}

function message(text: string, status = "completed"): Planned {
  const id = upId("msg");
  const part = { type: "output_text", text, annotations: [], logprobs: [] };
  const at = { item_id: id, content_index: 0 };
  return {
    item: { id, type: "message", status, role: "assistant", content: [part] },
    added: { id, type: "message", status: "in_progress", role: "assistant", content: [] },
    middle: [
      { type: "response.content_part.added", ...at, part: { ...part, text: "" } },
      ...words(text).map((delta) => ({ type: "response.output_text.delta", ...at, delta, logprobs: [] })),
      { type: "response.output_text.done", ...at, text, logprobs: [] },
      { type: "response.content_part.done", ...at, part },
    ],
  };
}

/** A reasoning item, with its encrypted state when the request's `include` asks for it (as OpenAI's). */
function reasoningItem(req: Json): Planned {
  const id = upId("rs");
  const summary = NATIVE_SUMMARY;
  const at = { item_id: id, summary_index: 0 };
  const include = Array.isArray(req.include) ? req.include : [];
  return {
    item: {
      id,
      type: "reasoning",
      summary: [{ type: "summary_text", text: summary }],
      encrypted_content: include.includes("reasoning.encrypted_content") ? `${NATIVE_ENCRYPTED}${id}` : null,
    },
    added: { id, type: "reasoning", summary: [] },
    middle: [
      { type: "response.reasoning_summary_part.added", ...at, part: { type: "summary_text", text: "" } },
      ...words(summary).map((delta) => ({ type: "response.reasoning_summary_text.delta", ...at, delta })),
      { type: "response.reasoning_summary_text.done", ...at, text: summary },
      { type: "response.reasoning_summary_part.done", ...at, part: { type: "summary_text", text: summary } },
    ],
  };
}

function functionCall(): Planned {
  const id = upId("fc");
  const args = '{"city":"Paris"}';
  const fields = { call_id: upId("call"), name: "get_weather" };
  return {
    item: { id, type: "function_call", status: "completed", ...fields, arguments: args },
    added: { id, type: "function_call", status: "in_progress", ...fields, arguments: "" },
    middle: [
      { type: "response.function_call_arguments.delta", item_id: id, delta: args.slice(0, 8) },
      { type: "response.function_call_arguments.delta", item_id: id, delta: args.slice(8) },
      { type: "response.function_call_arguments.done", item_id: id, name: "get_weather", arguments: args },
    ],
  };
}

function webSearch(): Planned {
  const id = upId("ws");
  const action = { type: "search", query: "weather paris" };
  return {
    item: { id, type: "web_search_call", status: "completed", action },
    added: { id, type: "web_search_call", status: "in_progress", action },
    middle: [
      { type: "response.web_search_call.in_progress", item_id: id },
      { type: "response.web_search_call.searching", item_id: id },
      { type: "response.web_search_call.completed", item_id: id },
    ],
  };
}

/** The `fingerprint` of `resp-program`'s program item: opaque, to be sent back as it is. */
export const NATIVE_PROGRAM_FINGERPRINT = "fp-upstream-program-0001";

/** A program the upstream ran (programmatic tool calling) and its output: items only a native upstream reads. */
function program(): Planned[] {
  const callId = upId("call");
  const code = { id: upId("prog"), type: "program", call_id: callId, code: "return 1 + 1;" };
  const ran = { ...code, fingerprint: NATIVE_PROGRAM_FINGERPRINT };
  const output = {
    id: upId("po"),
    type: "program_output",
    call_id: callId,
    result: "2",
    status: "completed",
  };
  return [{ item: ran, added: ran, middle: [] }, { item: output, added: output, middle: [] }];
}

/** The upstream's own compaction item: opaque state only this upstream can read back. */
export const NATIVE_COMPACTION = "enc-upstream-compaction-0001";

/**
 * `POST /v1/responses/compact`, as OpenAI answers it: the input's user messages kept, the rest replaced by one
 * `compaction` item holding the upstream's opaque state.
 */
function compacted(req: Json): Json {
  const input = Array.isArray(req.input)
    ? req.input as Json[]
    : [{ role: "user", content: String(req.input) }];
  const users = input.filter((item) => item.role === "user").map((item) => ({ type: "message", ...item }));
  return {
    id: upId("resp"),
    object: "response.compaction",
    created_at: Math.floor(Date.now() / 1000),
    output: [...users, { id: upId("cmp"), type: "compaction", encrypted_content: NATIVE_COMPACTION }],
    usage: usage(),
  };
}

/** What `resp-ok` answers with for this request. */
function plan(req: Json): Planned[] {
  const input = Array.isArray(req.input) ? req.input as Json[] : [];
  const tools = Array.isArray(req.tools) ? req.tools as Json[] : [];
  if (input.at(-1)?.type === "function_call_output") return [message(NATIVE_AFTER_TOOL)];
  if (tools.some((t) => t.type === "function" && t.name === "get_weather")) return [functionCall()];
  if (tools.some((t) => t.type === "web_search")) return [webSearch(), message(NATIVE_ANSWER)];
  const format = ((req.text ?? {}) as Json).format as Json | undefined;
  if (format?.type === "json_schema") return [message(NATIVE_JSON)];
  return [reasoningItem(req), message(NATIVE_ANSWER)];
}

function errorJson(status: number, message: string, code: string | null, param: string | null = null) {
  return new Response(JSON.stringify({ error: { message, type: "invalid_request_error", param, code } }), {
    status,
    headers: { "content-type": "application/json" },
  });
}

/** The id of the input's first reasoning item without encrypted content, which a `store: false` request cannot name. */
function unreadableReasoning(input: unknown): string | undefined {
  if (!Array.isArray(input)) return undefined;
  const item = input.find((i) => i?.type === "reasoning" && typeof i.encrypted_content !== "string");
  return item === undefined ? undefined : String(item.id);
}

/** Starts the fake on a free loopback port. */
export function startFakeNativeResponses(): FakeNativeUpstream {
  const fake: FakeNativeUpstream = {
    baseURL: "",
    requests: [],
    made: new Set(),
    aborted: Promise.withResolvers<void>(),
    release: Promise.withResolvers<void>(),
    stop: () => server.shutdown(),
  };
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (request) => {
    const path = new URL(request.url).pathname;
    const body = (await request.json().catch(() => ({}))) as Json;
    fake.requests.push({ path, headers: request.headers, body });
    if (request.headers.get("authorization") !== `Bearer ${NATIVE_KEY}`) {
      return errorJson(401, "Incorrect API key provided.", "invalid_api_key");
    }
    if (path === "/v1/responses/compact") return Response.json(compacted(body));
    if (path !== "/v1/responses") return errorJson(404, `Unknown path ${path}`, null);
    const previous = body.previous_response_id;
    if (typeof previous === "string" && !fake.made.has(previous)) {
      return errorJson(
        400,
        `Previous response with id '${previous}' not found.`,
        "previous_response_not_found",
        "previous_response_id",
      );
    }
    const lost = body.store === false ? unreadableReasoning(body.input) : undefined;
    if (lost !== undefined) {
      return errorJson(
        404,
        `Item with id '${lost}' not found. Items are not persisted when \`store\` is set to false. Try again ` +
          "with `store` set to true, or remove this item from your input.",
        null,
        "input",
      );
    }
    const model = String(body.model);
    if (model === "resp-500") {
      return new Response(
        JSON.stringify({
          error: { message: "The server had an error", type: "server_error", param: null, code: null },
        }),
        { status: 500, headers: { "content-type": "application/json" } },
      );
    }
    const id = upId("resp");
    // As OpenAI: a response made with `store: false` cannot be continued from by its id.
    if (body.store !== false) fake.made.add(id);
    const items = model === "resp-ok"
      ? plan(body)
      : model === "resp-program"
      ? [...program(), message(NATIVE_ANSWER)]
      : [message(NATIVE_ANSWER)];
    const length = model === "resp-length";
    if (length) {
      const partial = message("Native hello", "incomplete");
      items.splice(0, items.length, partial);
    }
    const status = length ? "incomplete" : "completed";
    const finalExtra = {
      usage: usage(),
      incomplete_details: length ? { reason: "max_output_tokens" } : null,
    };
    if (body.stream !== true) {
      return Response.json(responseObject(body, id, status, items.map((p) => p.item), finalExtra));
    }
    return streamed(body, id, status, items, finalExtra, model, request.signal, fake);
  });
  fake.baseURL = `http://127.0.0.1:${server.addr.port}/v1`;
  return fake;
}

/** The SSE answer: created, in_progress, each item's events, then completed / incomplete (or a failure). */
function streamed(
  req: Json,
  id: string,
  status: string,
  items: Planned[],
  finalExtra: Json,
  model: string,
  signal: AbortSignal,
  fake: FakeNativeUpstream,
) {
  const aborted = fake.aborted;
  let held = model === "resp-held";
  let seq = 0;
  const frame = (event: Json) => {
    const data: Json = { ...event, sequence_number: seq++ };
    return encoder.encode(`event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  const events: Json[] = [
    { type: "response.created", response: responseObject(req, id, "in_progress", []) },
    { type: "response.in_progress", response: responseObject(req, id, "in_progress", []) },
  ];
  items.forEach((p, output_index) => {
    events.push({ type: "response.output_item.added", output_index, item: p.added });
    for (const e of p.middle) events.push({ ...e, output_index });
    events.push({ type: "response.output_item.done", output_index, item: p.item });
  });
  const kind = status === "incomplete" ? "response.incomplete" : "response.completed";
  events.push({
    type: kind,
    response: responseObject(req, id, status, items.map((p) => p.item), finalExtra),
  });
  const broken = model === "resp-error" || model === "resp-cut" || model === "resp-hang";
  // A broken stream stops after the first text delta.
  const cutAt = broken ? events.findIndex((e) => e.type === "response.output_text.delta") + 1 : events.length;
  return new Response(
    new ReadableStream<Uint8Array>({
      cancel() {
        if (model === "resp-hang") aborted.resolve();
      },
      async start(controller) {
        for (const event of events.slice(0, cutAt)) {
          controller.enqueue(frame(event));
          if (held && event.type === "response.output_text.delta") {
            held = false; // only the first delta is held
            await fake.release.promise;
          }
          await new Promise((r) => setTimeout(r, 2));
        }
        if (model === "resp-error") {
          controller.enqueue(frame({
            type: "error",
            code: "rate_limit_exceeded",
            message: `Rate limit reached (key ${NATIVE_KEY}).`,
            param: null,
          }));
        }
        if (model === "resp-hang") {
          await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve()));
          aborted.resolve();
          return;
        }
        if (model === "resp-cut") {
          // Let what was sent leave before the reset: a reset right behind the last write can take those bytes
          // with it (Bun's fetch was seen to lose the delta), and what is tested is the gateway forwarding them.
          await new Promise((r) => setTimeout(r, 25));
          controller.error(new Error("connection reset"));
          return;
        }
        controller.close();
      },
    }),
    { headers: { "content-type": "text/event-stream" } },
  );
}

/**
 * One scripted fake upstream for the coding-agent tests: it speaks, by path, Anthropic Messages
 * (`/v1/messages`, `/v1/messages/count_tokens`), OpenAI chat completions (`/v1/chat/completions`) and OpenAI
 * Responses (`/v1/responses`) and, in scripted_gemini.ts, Google's Gemini API (`/v1beta/models/...`), JSON or SSE
 * as the request asks, each in its vendor's documented wire format.
 *
 * The script, for every API:
 *
 * - a request whose conversation ends with a tool result: the final text {@linkcode FINAL_TEXT};
 * - a request that declares a tool able to write a file (a `write` or `write_file` tool taking a path and
 *   content, else a shell tool, else `apply_patch`): ONE call of that tool, writing {@linkcode FILE_NAME} with
 *   {@linkcode FILE_TEXT} in {@linkcode ScriptedUpstream.workdir};
 * - anything else (titles, summaries, `max_tokens: 1` quota probes, small-model calls): the short text
 *   {@linkcode SIDE_TEXT}.
 *
 * Like Claude Sonnet 4.5 (the model the aliases name), a Messages request that sets both `temperature` and
 * `top_p` is refused with Anthropic's 400 (`vendor_refusals.ts`).
 *
 * In `cut` mode, an answer that would call the tool or give the final text is cut: a stream stops after a few
 * events (the connection is torn down), a JSON body after a few bytes.
 *
 * Every request is recorded with its body and the headers that tell agents apart.
 *
 * @module
 */

/** The file the agent is made to write, and its text. */
export const FILE_NAME = "hello.txt";
export const FILE_TEXT = "hi from the fake";
/** The final answer after the tool result. */
export const FINAL_TEXT = "DONE: wrote hello.txt";
/** The answer to every side request. */
export const SIDE_TEXT = "Hello file";

import { geminiRequest } from "./scripted_gemini.ts";
import { claudeSamplingRefusal } from "../helpers/vendor_refusals.ts";

type Json = Record<string, unknown>;

/** Which API a request spoke. */
export type Api = "messages" | "count_tokens" | "chat" | "responses" | "gemini" | "gemini_models" | "other";

/** What the fake answered. */
export type Answer =
  /** A request the vendor would refuse: its 400. */
  | "refused"
  | "tool_call"
  | "final"
  | "side"
  | "cut"
  | "count"
  | "models"
  | "not_found";

/** One request the fake received. */
export interface RecordedRequest {
  api: Api;
  method: string;
  path: string;
  /** Every header but the credentials. */
  headers: Record<string, string>;
  body: Json;
  answer: Answer;
  /** The tool the fake called, when it called one. */
  tool?: string;
}

/** A running scripted upstream. */
export interface ScriptedUpstream {
  /** `http://127.0.0.1:<port>` (no `/v1`). */
  url: string;
  /** The directory the tool call writes into (absolute paths for `write` tools, `workdir` for shells). */
  workdir: string;
  /** `cut`: main answers stop mid-way. */
  mode: "normal" | "cut";
  requests: RecordedRequest[];
  stop(): Promise<void>;
}

const encoder = new TextEncoder();
let counter = 0;
const nextId = (prefix: string) => `${prefix}_fake${(++counter).toString().padStart(6, "0")}`;

const USAGE = { input: 42, output: 12 };

/** A tool as any of the APIs declares it. */
export interface DeclaredTool {
  name: string;
  /** `function` (JSON-schema arguments) or `custom` (free-form input, Responses only). */
  kind: "function" | "custom";
  schema: Json;
}

/** A planned tool call. */
export interface ToolCall {
  name: string;
  kind: "function" | "custom";
  /** JSON arguments for a function tool; the raw input for a custom tool. */
  input: string;
}

/** File-writing tools: Claude Code's and opencode's `write`, Gemini CLI's `write_file`. */
const WRITE_TOOLS = ["write", "write_file"];

const SHELL_TOOLS = [
  "shell",
  "shell_command",
  "exec_command",
  "bash",
  "local_shell",
  "container.exec",
];

function props(schema: Json): Json {
  return (schema.properties ?? {}) as Json;
}

/** The tool call that writes the file, chosen from the declared tools; undefined when none can. */
export function planToolCall(
  tools: DeclaredTool[],
  workdir: string,
): ToolCall | undefined {
  const path = workdir ? `${workdir}/${FILE_NAME}` : FILE_NAME;
  const writer = tools.find((t) => {
    if (t.kind !== "function" || !WRITE_TOOLS.includes(t.name.toLowerCase())) return false;
    const p = props(t.schema);
    return "content" in p &&
      ["file_path", "filePath", "path"].some((k) => k in p);
  });
  if (writer) {
    const p = props(writer.schema);
    const key = ["file_path", "filePath", "path"].find((k) => k in p)!;
    return {
      name: writer.name,
      kind: "function",
      input: JSON.stringify({ [key]: path, content: FILE_TEXT }),
    };
  }
  const shell = tools.find((t) => t.kind === "function" && SHELL_TOOLS.includes(t.name));
  if (shell) {
    const p = props(shell.schema);
    const script = `printf '%s' '${FILE_TEXT}' > ${FILE_NAME}`;
    const args: Json = {};
    if ("command" in p) {
      args.command = (p.command as Json).type === "array" ? ["bash", "-lc", script] : script;
    } else if ("cmd" in p) {
      args.cmd = script;
    } else {
      args.command = script;
    }
    if (workdir && "workdir" in p) args.workdir = workdir;
    return { name: shell.name, kind: "function", input: JSON.stringify(args) };
  }
  const patcher = tools.find((t) => t.name === "apply_patch");
  if (patcher) {
    const patch = `*** Begin Patch\n*** Add File: ${path}\n+${FILE_TEXT}\n*** End Patch\n`;
    return patcher.kind === "custom" ? { name: patcher.name, kind: "custom", input: patch } : {
      name: patcher.name,
      kind: "function",
      input: JSON.stringify({ input: patch }),
    };
  }
  return undefined;
}

/** Splits `text` into `n` pieces (for streamed fragments). */
function pieces(text: string, n = 3): string[] {
  const size = Math.max(1, Math.ceil(text.length / n));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length ? out : [""];
}

/** A body that tears the connection down after `keep` of `chunks` (or sends them all). */
function body(
  chunks: Uint8Array[],
  cut: boolean,
  keep = 3,
): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = cut ? chunks.slice(0, Math.min(keep, chunks.length - 1)) : chunks;
      for (const chunk of send) {
        controller.enqueue(chunk);
        await new Promise((r) => setTimeout(r, 2));
      }
      if (cut) controller.error(new Error("scripted cut"));
      else controller.close();
    },
  });
}

export function jsonAnswer(value: unknown, cut: boolean): Response {
  const text = encoder.encode(JSON.stringify(value));
  if (!cut) {
    return new Response(text, {
      headers: { "content-type": "application/json" },
    });
  }
  return new Response(body([text.slice(0, 20), text.slice(20)], true, 1), {
    headers: { "content-type": "application/json" },
  });
}

export function sseAnswer(chunks: Uint8Array[], cut: boolean): Response {
  return new Response(body(chunks, cut), {
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
    },
  });
}

/** The plan for one request: a tool call, the final text or the side text. */
export interface Plan {
  answer: "tool_call" | "final" | "side";
  call?: ToolCall;
  text: string;
}

export function plan(
  lastIsToolResult: boolean,
  tools: DeclaredTool[],
  probe: boolean,
  workdir: string,
): Plan {
  if (lastIsToolResult) return { answer: "final", text: FINAL_TEXT };
  const call = probe ? undefined : planToolCall(tools, workdir);
  if (call) return { answer: "tool_call", call, text: "" };
  return { answer: "side", text: SIDE_TEXT };
}

// ---------------------------------------------------------------- Anthropic Messages

function anthropicTools(body: Json): DeclaredTool[] {
  const tools = Array.isArray(body.tools) ? body.tools as Json[] : [];
  return tools
    .filter((t) => t.type === undefined || t.type === "custom")
    .map((t) => ({
      name: String(t.name),
      kind: "function" as const,
      schema: (t.input_schema ?? {}) as Json,
    }));
}

function anthropicLastIsToolResult(body: Json): boolean {
  const messages = Array.isArray(body.messages) ? body.messages as Json[] : [];
  const last = messages.at(-1);
  return last?.role === "user" && Array.isArray(last.content) &&
    (last.content as Json[]).some((b) => b.type === "tool_result");
}

function anthropicEvent(type: string, data: Json): Uint8Array {
  return encoder.encode(
    `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`,
  );
}

function anthropicAnswer(req: Json, p: Plan, cut: boolean): Response {
  const id = nextId("msg");
  const model = String(req.model);
  const block: Json = p.call
    ? {
      type: "tool_use",
      id: nextId("toolu"),
      name: p.call.name,
      input: JSON.parse(p.call.input),
    }
    : { type: "text", text: p.text };
  const stopReason = p.call ? "tool_use" : "end_turn";
  const usage = {
    input_tokens: USAGE.input,
    output_tokens: USAGE.output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
  if (req.stream !== true) {
    return jsonAnswer({
      id,
      type: "message",
      role: "assistant",
      model,
      content: [block],
      stop_reason: stopReason,
      stop_sequence: null,
      usage,
    }, cut);
  }
  const start = p.call ? { ...block, input: {} } : { type: "text", text: "" };
  const deltas = p.call
    ? pieces(p.call.input).map((partial_json) => ({
      type: "input_json_delta",
      partial_json,
    }))
    : pieces(p.text).map((text) => ({ type: "text_delta", text }));
  const chunks = [
    anthropicEvent("message_start", {
      message: {
        id,
        type: "message",
        role: "assistant",
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    }),
    anthropicEvent("content_block_start", { index: 0, content_block: start }),
    anthropicEvent("ping", {}),
    ...deltas.map((delta) => anthropicEvent("content_block_delta", { index: 0, delta })),
    anthropicEvent("content_block_stop", { index: 0 }),
    anthropicEvent("message_delta", {
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: USAGE.output },
    }),
    anthropicEvent("message_stop", {}),
  ];
  return sseAnswer(chunks, cut);
}

// ---------------------------------------------------------------- OpenAI chat completions

function chatTools(body: Json): DeclaredTool[] {
  const tools = Array.isArray(body.tools) ? body.tools as Json[] : [];
  return tools.filter((t) => t.type === "function").map((t) => {
    const f = (t.function ?? {}) as Json;
    return {
      name: String(f.name),
      kind: "function" as const,
      schema: (f.parameters ?? {}) as Json,
    };
  });
}

function chatLastIsToolResult(body: Json): boolean {
  const messages = Array.isArray(body.messages) ? body.messages as Json[] : [];
  return messages.at(-1)?.role === "tool";
}

function chatAnswer(req: Json, p: Plan, cut: boolean): Response {
  const id = nextId("chatcmpl");
  const created = Math.floor(Date.now() / 1000);
  const model = String(req.model);
  const finish = p.call ? "tool_calls" : "stop";
  const callId = nextId("call");
  const usage = {
    prompt_tokens: USAGE.input,
    completion_tokens: USAGE.output,
    total_tokens: USAGE.input + USAGE.output,
  };
  if (req.stream !== true) {
    const message: Json = p.call
      ? {
        role: "assistant",
        content: null,
        refusal: null,
        tool_calls: [{
          id: callId,
          type: "function",
          function: { name: p.call.name, arguments: p.call.input },
        }],
      }
      : { role: "assistant", content: p.text, refusal: null, annotations: [] };
    return jsonAnswer({
      id,
      object: "chat.completion",
      created,
      model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
      usage,
    }, cut);
  }
  const includeUsage = ((req.stream_options ?? {}) as Json).include_usage === true;
  const chunk = (choices: Json[], extra: Json = {}) =>
    encoder.encode(
      `data: ${
        JSON.stringify({
          id,
          object: "chat.completion.chunk",
          created,
          model,
          system_fingerprint: "fp_fake",
          choices,
          ...(includeUsage ? { usage: null } : {}),
          ...extra,
        })
      }\n\n`,
    );
  const choice = (delta: Json, finish_reason: string | null = null) => ({
    index: 0,
    delta,
    logprobs: null,
    finish_reason,
  });
  const chunks: Uint8Array[] = [
    chunk([choice({ role: "assistant", content: p.call ? null : "" })]),
  ];
  if (p.call) {
    const args = pieces(p.call.input);
    chunks.push(chunk([choice({
      tool_calls: [{
        index: 0,
        id: callId,
        type: "function",
        function: { name: p.call.name, arguments: "" },
      }],
    })]));
    for (const a of args) {
      chunks.push(
        chunk([
          choice({ tool_calls: [{ index: 0, function: { arguments: a } }] }),
        ]),
      );
    }
  } else {
    for (const text of pieces(p.text)) {
      chunks.push(chunk([choice({ content: text })]));
    }
  }
  chunks.push(chunk([choice({}, finish)]));
  if (includeUsage) chunks.push(chunk([], { usage }));
  chunks.push(encoder.encode("data: [DONE]\n\n"));
  return sseAnswer(chunks, cut);
}

// ---------------------------------------------------------------- OpenAI Responses

function responsesTools(body: Json): DeclaredTool[] {
  const tools = Array.isArray(body.tools) ? body.tools as Json[] : [];
  const out: DeclaredTool[] = [];
  for (const t of tools) {
    if (t.type === "function") {
      out.push({
        name: String(t.name),
        kind: "function",
        schema: (t.parameters ?? {}) as Json,
      });
    } else if (t.type === "custom") {
      out.push({ name: String(t.name), kind: "custom", schema: {} });
    }
  }
  return out;
}

function responsesLastIsToolResult(body: Json): boolean {
  const input = Array.isArray(body.input) ? body.input as Json[] : [];
  const last = input.at(-1);
  return typeof last?.type === "string" && last.type.endsWith("_call_output");
}

function responseObject(
  req: Json,
  id: string,
  status: string,
  output: Json[],
  extra: Json = {},
): Json {
  return {
    id,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: req.instructions ?? null,
    max_output_tokens: req.max_output_tokens ?? null,
    model: req.model,
    output,
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    previous_response_id: req.previous_response_id ?? null,
    reasoning: { effort: null, summary: null },
    service_tier: "default",
    store: req.store ?? true,
    temperature: req.temperature ?? 1,
    text: req.text ?? { format: { type: "text" } },
    tool_choice: req.tool_choice ?? "auto",
    tools: req.tools ?? [],
    top_p: req.top_p ?? 1,
    truncation: req.truncation ?? "disabled",
    metadata: req.metadata ?? {},
    ...extra,
  };
}

function responsesAnswer(req: Json, p: Plan, cut: boolean): Response {
  const id = nextId("resp");
  const usage = {
    input_tokens: USAGE.input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: USAGE.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: USAGE.input + USAGE.output,
  };
  let item: Json;
  let added: Json;
  let middle: Json[];
  if (p.call?.kind === "function") {
    const itemId = nextId("fc");
    const fields = { call_id: nextId("call"), name: p.call.name };
    item = {
      id: itemId,
      type: "function_call",
      status: "completed",
      ...fields,
      arguments: p.call.input,
    };
    added = {
      id: itemId,
      type: "function_call",
      status: "in_progress",
      ...fields,
      arguments: "",
    };
    middle = [
      ...pieces(p.call.input).map((delta) => ({
        type: "response.function_call_arguments.delta",
        item_id: itemId,
        delta,
      })),
      {
        type: "response.function_call_arguments.done",
        item_id: itemId,
        name: p.call.name,
        arguments: p.call.input,
      },
    ];
  } else if (p.call?.kind === "custom") {
    const itemId = nextId("ctc");
    const fields = { call_id: nextId("call"), name: p.call.name };
    item = {
      id: itemId,
      type: "custom_tool_call",
      status: "completed",
      ...fields,
      input: p.call.input,
    };
    added = {
      id: itemId,
      type: "custom_tool_call",
      status: "in_progress",
      ...fields,
      input: "",
    };
    middle = [
      ...pieces(p.call.input).map((delta) => ({
        type: "response.custom_tool_call_input.delta",
        item_id: itemId,
        delta,
      })),
      {
        type: "response.custom_tool_call_input.done",
        item_id: itemId,
        input: p.call.input,
      },
    ];
  } else {
    const itemId = nextId("msg");
    const part = {
      type: "output_text",
      text: p.text,
      annotations: [],
      logprobs: [],
    };
    const at = { item_id: itemId, content_index: 0 };
    item = {
      id: itemId,
      type: "message",
      status: "completed",
      role: "assistant",
      content: [part],
    };
    added = {
      id: itemId,
      type: "message",
      status: "in_progress",
      role: "assistant",
      content: [],
    };
    middle = [
      {
        type: "response.content_part.added",
        ...at,
        part: { ...part, text: "" },
      },
      ...pieces(p.text).map((delta) => ({
        type: "response.output_text.delta",
        ...at,
        delta,
        logprobs: [],
      })),
      { type: "response.output_text.done", ...at, text: p.text, logprobs: [] },
      { type: "response.content_part.done", ...at, part },
    ];
  }
  if (req.stream !== true) {
    return jsonAnswer(
      responseObject(req, id, "completed", [item], { usage }),
      cut,
    );
  }
  const events: Json[] = [
    {
      type: "response.created",
      response: responseObject(req, id, "in_progress", []),
    },
    {
      type: "response.in_progress",
      response: responseObject(req, id, "in_progress", []),
    },
    { type: "response.output_item.added", output_index: 0, item: added },
    ...middle.map((e) => ({ ...e, output_index: 0 })),
    { type: "response.output_item.done", output_index: 0, item },
    {
      type: "response.completed",
      response: responseObject(req, id, "completed", [item], { usage }),
    },
  ];
  const chunks = events.map((e, sequence_number) =>
    encoder.encode(
      `event: ${e.type}\ndata: ${JSON.stringify({ ...e, sequence_number })}\n\n`,
    )
  );
  return sseAnswer(chunks, cut);
}

// ---------------------------------------------------------------- the server

const SECRET_HEADERS = new Set(["authorization", "x-api-key", "api-key", "x-goog-api-key"]);

/** Starts the scripted upstream on a free loopback port. */
export function startScriptedUpstream(
  options: { workdir?: string; mode?: "normal" | "cut" } = {},
): ScriptedUpstream {
  const up: ScriptedUpstream = {
    url: "",
    workdir: options.workdir ?? "",
    mode: options.mode ?? "normal",
    requests: [],
    stop: () => server.shutdown(),
  };
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (request) => {
      const url = new URL(request.url);
      const path = url.pathname;
      const text = await request.text();
      let parsed: Json = {};
      try {
        parsed = text ? JSON.parse(text) : {};
      } catch {
        parsed = { _unparsed: text.slice(0, 200) };
      }
      const headers: Record<string, string> = {};
      request.headers.forEach((v, k) => {
        if (!SECRET_HEADERS.has(k)) headers[k] = v;
      });
      const record: RecordedRequest = {
        api: "other",
        method: request.method,
        path,
        headers,
        body: parsed,
        answer: "side",
      };
      up.requests.push(record);
      const cut = up.mode === "cut";
      const finish = (p: Plan): boolean => {
        record.answer = cut ? "cut" : p.answer;
        if (p.call) record.tool = p.call.name;
        return cut && p.answer !== "side";
      };
      const gemini = geminiRequest(
        request.method,
        path,
        url.searchParams,
        parsed,
        text.length,
        up.workdir,
        cut,
      );
      if (gemini) {
        record.api = gemini.api;
        record.answer = gemini.answer;
        if (gemini.tool) record.tool = gemini.tool;
        return gemini.response;
      }
      if (path === "/v1/messages/count_tokens") {
        record.api = "count_tokens";
        record.answer = "count";
        return Response.json({
          input_tokens: Math.max(1, Math.ceil(text.length / 4)),
        });
      }
      if (path === "/v1/messages") {
        record.api = "messages";
        // As Claude Sonnet 4.5 and later (the aliases' claude-sonnet-4-5) refuse both sampling controls.
        const refusal = claudeSamplingRefusal(parsed);
        if (refusal !== null) {
          record.answer = "refused";
          return Response.json(
            { type: "error", error: { type: "invalid_request_error", message: refusal } },
            { status: 400 },
          );
        }
        const probe = parsed.max_tokens === 1;
        const p = plan(
          anthropicLastIsToolResult(parsed),
          anthropicTools(parsed),
          probe,
          up.workdir,
        );
        return anthropicAnswer(parsed, p, finish(p));
      }
      if (path === "/v1/chat/completions") {
        record.api = "chat";
        const max = parsed.max_tokens ?? parsed.max_completion_tokens;
        const p = plan(
          chatLastIsToolResult(parsed),
          chatTools(parsed),
          max === 1,
          up.workdir,
        );
        return chatAnswer(parsed, p, finish(p));
      }
      if (path === "/v1/responses") {
        record.api = "responses";
        const p = plan(
          responsesLastIsToolResult(parsed),
          responsesTools(parsed),
          parsed.max_output_tokens === 1,
          up.workdir,
        );
        return responsesAnswer(parsed, p, finish(p));
      }
      record.answer = "not_found";
      return new Response(
        JSON.stringify({
          error: {
            message: `Unknown path ${path}`,
            type: "invalid_request_error",
            param: null,
            code: null,
          },
        }),
        { status: 404, headers: { "content-type": "application/json" } },
      );
    },
  );
  up.url = `http://127.0.0.1:${server.addr.port}`;
  return up;
}

/** A summary of what an agent sent: per API, the top-level fields, tool types and names, and some headers. */
export function summarize(
  requests: {
    method: string;
    path: string;
    headers: Record<string, string>;
    body: Json | null;
    answer: string;
  }[],
): Json {
  const out: Record<
    string,
    {
      count: number;
      fields: Set<string>;
      toolTypes: Set<string>;
      tools: Set<string>;
      betas: Set<string>;
      userAgents: Set<string>;
      answers: string[];
    }
  > = {};
  for (const r of requests) {
    const s = out[`${r.method} ${r.path}`] ??= {
      count: 0,
      fields: new Set(),
      toolTypes: new Set(),
      tools: new Set(),
      betas: new Set(),
      userAgents: new Set(),
      answers: [],
    };
    s.count++;
    s.answers.push(r.answer);
    const body = r.body ?? {};
    for (const k of Object.keys(body)) s.fields.add(k);
    for (const t of Array.isArray(body.tools) ? body.tools as Json[] : []) {
      if (Array.isArray(t.functionDeclarations)) {
        // Gemini: { functionDeclarations: [{ name, ... }] }
        s.toolTypes.add("functionDeclarations");
        for (const f of t.functionDeclarations as Json[]) s.tools.add(String(f.name));
        continue;
      }
      s.toolTypes.add(String(t.type ?? "(none)"));
      const name = t.name ?? (t.function as Json | undefined)?.name;
      if (name !== undefined) s.tools.add(String(name));
    }
    for (const b of (r.headers["anthropic-beta"] ?? "").split(",")) {
      if (b.trim()) s.betas.add(b.trim());
    }
    if (r.headers["user-agent"]) s.userAgents.add(r.headers["user-agent"]);
  }
  return Object.fromEntries(
    Object.entries(out).map(([k, s]) => [k, {
      count: s.count,
      answers: s.answers,
      fields: [...s.fields].sort(),
      toolTypes: [...s.toolTypes].sort(),
      tools: [...s.tools].sort(),
      betas: [...s.betas].sort(),
      userAgents: [...s.userAgents],
    }]),
  );
}

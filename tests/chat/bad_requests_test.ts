/**
 * A table of bad requests, run in-process against the fetch handler and again over a real socket: each gets
 * its documented status and OpenAI's exact error shape (Anthropic's on `/v1/messages` and its count_tokens),
 * never a stack trace or the caller's token, and the gateway keeps serving afterwards.
 */
import assert from "node:assert/strict";
import { parseConfigText } from "../../lib/config/load.ts";
import type { GatewayState } from "../../lib/http/context.ts";
import { createMemoryLogger } from "../../lib/log.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { createGateway } from "../../lib/server.ts";
import {
  startGateway,
  TEST_TOKEN,
  TEST_TOKENS_YAML,
  type TestGateway,
  waitForLogCount,
} from "../helpers/gateway.ts";
import {
  assertErrorResponse as assertErrorShape,
  type BadCase,
  type RawBody,
  requestInit as sharedRequestInit,
  STACK_LINE,
} from "../helpers/bad_cases.ts";

/** The body limit every case runs under, so oversized bodies stay small. */
const LIMIT = 1000;

const CONFIG = `
server: { host: 127.0.0.1, port: 0, max_body_size: 1kb }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  embed-local: { type: embedding, targets: [ { provider: local, model: hash } ] }
${TEST_TOKENS_YAML}`;

const encoder = new TextEncoder();
const AUTH = `Bearer ${TEST_TOKEN}`;
const JSON_CT = "application/json";
const WRONG_TOKEN = "gw-wrong-token-ffffffffffffffffffff";

const USER = [{ role: "user", content: "hi" }];
const chat = (extra: Record<string, unknown>) =>
  JSON.stringify({ model: "chat-echo", messages: USER, ...extra });
const embed = (extra: Record<string, unknown>) => JSON.stringify({ model: "embed-local", ...extra });
const bigChat = chat({ user: "x".repeat(LIMIT + 200) });

/** `{"model":"chat-echo","messages":[{"role":"user","content":"<ff fe>"}]}` as bytes. */
const invalidUtf8 = (() => {
  const [head, tail] = chat({}).split('"hi"');
  const bytes = new Uint8Array([...encoder.encode(`${head}"`), 0xff, 0xfe, ...encoder.encode(`"${tail}`)]);
  return bytes;
})();

const CHAT = "/v1/chat/completions";
const EMBED = "/v1/embeddings";
const RESPONSES = "/v1/responses";
const BAD = "invalid_request_error";

const CASES: BadCase[] = [
  // --- the body itself -----------------------------------------------------------------------------------
  {
    name: "malformed JSON",
    method: "POST",
    path: CHAT,
    body: "{model: chat-echo}",
    status: 400,
    type: BAD,
    code: null,
    param: null,
  },
  {
    name: "truncated JSON",
    method: "POST",
    path: CHAT,
    body: chat({}).slice(0, -2),
    status: 400,
    type: BAD,
    code: null,
    param: null,
  },
  {
    name: "JSON array body",
    method: "POST",
    path: CHAT,
    body: `[${chat({})}]`,
    status: 400,
    type: BAD,
    code: null,
    param: null,
  },
  {
    name: "JSON string body",
    method: "POST",
    path: CHAT,
    body: '"hello"',
    status: 400,
    type: BAD,
    code: null,
    param: null,
  },
  {
    name: "JSON null body",
    method: "POST",
    path: CHAT,
    body: "null",
    status: 400,
    type: BAD,
    code: null,
    param: null,
  },
  {
    name: "empty body",
    method: "POST",
    path: CHAT,
    body: "",
    status: 400,
    type: BAD,
    code: null,
    param: null,
  },
  {
    name: "invalid UTF-8 bytes in a string",
    method: "POST",
    path: CHAT,
    body: invalidUtf8,
    status: 400,
    type: BAD,
    code: null,
    param: null,
  },
  {
    name: "text/plain content type",
    method: "POST",
    path: CHAT,
    headers: { "content-type": "text/plain" },
    body: chat({}),
    status: 415,
    type: BAD,
    code: "unsupported_media_type",
    param: null,
  },
  {
    name: "multipart/form-data content type",
    method: "POST",
    path: CHAT,
    headers: { "content-type": "multipart/form-data; boundary=xyz" },
    body: '--xyz\r\nContent-Disposition: form-data; name="model"\r\n\r\nchat-echo\r\n--xyz--\r\n',
    status: 415,
    type: BAD,
    code: "unsupported_media_type",
    param: null,
  },
  {
    name: "body over max_body_size with Content-Length",
    method: "POST",
    path: CHAT,
    body: bigChat,
    status: 413,
    type: BAD,
    code: "request_too_large",
    param: null,
  },
  {
    name: "body over max_body_size, chunked",
    method: "POST",
    path: CHAT,
    body: { chunks: [encoder.encode(bigChat.slice(0, 600)), encoder.encode(bigChat.slice(600))] },
    status: 413,
    type: BAD,
    code: "request_too_large",
    param: null,
  },
  {
    name: "embeddings body over max_body_size",
    method: "POST",
    path: EMBED,
    body: embed({ input: "y".repeat(LIMIT * 2) }),
    status: 413,
    type: BAD,
    code: "request_too_large",
    param: null,
  },
  {
    name: "JSON nested past server.max_json_depth",
    method: "POST",
    path: CHAT,
    body: `{"model":"chat-echo","messages":${"[".repeat(200)}${"]".repeat(200)}}`,
    status: 400,
    type: BAD,
    code: "json_too_deep",
    param: null,
  },
  {
    name: "embeddings JSON nested past server.max_json_depth",
    method: "POST",
    path: EMBED,
    body: `{"model":"embed-local","input":${'{"a":'.repeat(70)}1${"}".repeat(70)}}`,
    status: 400,
    type: BAD,
    code: "json_too_deep",
    param: null,
  },
  // --- chat parameters -------------------------------------------------------------------------------------
  {
    name: "missing model",
    method: "POST",
    path: CHAT,
    body: JSON.stringify({ messages: USER }),
    status: 400,
    type: BAD,
    code: "missing_required_parameter",
    param: "model",
  },
  {
    name: "model as number",
    method: "POST",
    path: CHAT,
    body: JSON.stringify({ model: 4, messages: USER }),
    status: 400,
    type: BAD,
    code: "invalid_type",
    param: "model",
  },
  {
    name: "missing messages",
    method: "POST",
    path: CHAT,
    body: JSON.stringify({ model: "chat-echo" }),
    status: 400,
    type: BAD,
    code: "missing_required_parameter",
    param: "messages",
  },
  {
    name: "messages not an array",
    method: "POST",
    path: CHAT,
    body: chat({ messages: "hi" }),
    status: 400,
    type: BAD,
    code: "invalid_type",
    param: "messages",
  },
  {
    name: "empty messages",
    method: "POST",
    path: CHAT,
    body: chat({ messages: [] }),
    status: 400,
    type: BAD,
    code: "empty_array",
    param: "messages",
  },
  {
    name: "message not an object",
    method: "POST",
    path: CHAT,
    body: chat({ messages: ["hi"] }),
    status: 400,
    type: BAD,
    code: "invalid_type",
    param: "messages[0]",
  },
  {
    name: "message without role",
    method: "POST",
    path: CHAT,
    body: chat({ messages: [{ content: "hi" }] }),
    status: 400,
    type: BAD,
    code: "missing_required_parameter",
    param: "messages[0].role",
  },
  {
    name: "unknown role",
    method: "POST",
    path: CHAT,
    body: chat({ messages: [{ role: "wizard", content: "hi" }] }),
    status: 400,
    type: BAD,
    code: "invalid_value",
    param: "messages[0].role",
  },
  {
    name: "user content as number",
    method: "POST",
    path: CHAT,
    body: chat({ messages: [{ role: "user", content: 42 }] }),
    status: 400,
    type: BAD,
    code: "invalid_type",
    param: "messages[0].content",
  },
  {
    name: "user content as empty array",
    method: "POST",
    path: CHAT,
    body: chat({ messages: [{ role: "user", content: [] }] }),
    status: 400,
    type: BAD,
    code: "empty_array",
    param: "messages[0].content",
  },
  {
    name: "tool message without tool_call_id",
    method: "POST",
    path: CHAT,
    body: chat({
      messages: [
        ...USER,
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_1", type: "function", function: { name: "f", arguments: "{}" } }],
        },
        { role: "tool", content: "sunny" },
      ],
    }),
    status: 400,
    type: BAD,
    code: "missing_required_parameter",
    param: "messages[2].tool_call_id",
  },
  {
    name: "assistant tool_calls with object arguments",
    method: "POST",
    path: CHAT,
    body: chat({
      messages: [{
        role: "assistant",
        tool_calls: [{
          id: "call_1",
          type: "function",
          function: { name: "f", arguments: { city: "Paris" } },
        }],
      }],
    }),
    status: 400,
    type: BAD,
    code: "invalid_type",
    param: "messages[0].tool_calls[0].function.arguments",
  },
  {
    name: "assistant tool_calls without function",
    method: "POST",
    path: CHAT,
    body: chat({ messages: [{ role: "assistant", tool_calls: [{ id: "call_1", type: "function" }] }] }),
    status: 400,
    type: BAD,
    code: "missing_required_parameter",
    param: "messages[0].tool_calls[0].function",
  },
  {
    name: "stream as string",
    method: "POST",
    path: CHAT,
    body: chat({ stream: "true" }),
    status: 400,
    type: BAD,
    code: "invalid_type",
    param: "stream",
  },
  {
    name: "stream_options without stream",
    method: "POST",
    path: CHAT,
    body: chat({ stream_options: { include_usage: true } }),
    status: 400,
    type: BAD,
    code: "invalid_value",
    param: "stream_options",
  },
  {
    name: "temperature 3",
    method: "POST",
    path: CHAT,
    body: chat({ temperature: 3 }),
    status: 400,
    type: BAD,
    code: "decimal_above_max_value",
    param: "temperature",
  },
  {
    name: "n = 0",
    method: "POST",
    path: CHAT,
    body: chat({ n: 0 }),
    status: 400,
    type: BAD,
    code: "integer_below_min_value",
    param: "n",
  },
  {
    name: "max_tokens = -1",
    method: "POST",
    path: CHAT,
    body: chat({ max_tokens: -1 }),
    status: 400,
    type: BAD,
    code: "integer_below_min_value",
    param: "max_tokens",
  },
  {
    name: "max_tokens not an integer",
    method: "POST",
    path: CHAT,
    body: chat({ max_tokens: 1.5 }),
    status: 400,
    type: BAD,
    code: "invalid_type",
    param: "max_tokens",
  },
  {
    name: "stop with 5 strings",
    method: "POST",
    path: CHAT,
    body: chat({ stop: ["a", "b", "c", "d", "e"] }),
    status: 400,
    type: BAD,
    code: "array_above_max_length",
    param: "stop",
  },
  {
    name: "tool function name with spaces",
    method: "POST",
    path: CHAT,
    body: chat({ tools: [{ type: "function", function: { name: "get the weather", parameters: {} } }] }),
    status: 400,
    type: BAD,
    code: "invalid_value",
    param: "tools[0].function.name",
  },
  {
    name: "tool_choice required without tools",
    method: "POST",
    path: CHAT,
    body: chat({ tool_choice: "required" }),
    status: 400,
    type: BAD,
    code: null,
    param: "tool_choice",
  },
  {
    name: "tool_choice naming a function with an empty tools list",
    method: "POST",
    path: CHAT,
    body: chat({ tools: [], tool_choice: { type: "function", function: { name: "f" } } }),
    status: 400,
    type: BAD,
    code: null,
    param: "tool_choice",
  },
  {
    name: "response_format json_schema without json_schema",
    method: "POST",
    path: CHAT,
    body: chat({ response_format: { type: "json_schema" } }),
    status: 400,
    type: BAD,
    code: "missing_required_parameter",
    param: "response_format.json_schema",
  },
  {
    name: "unknown alias",
    method: "POST",
    path: CHAT,
    body: chat({ model: "no-such-model" }),
    status: 404,
    type: BAD,
    code: "model_not_found",
    param: null,
  },
  {
    name: "embedding alias used for chat",
    method: "POST",
    path: CHAT,
    body: chat({ model: "embed-local" }),
    status: 400,
    type: BAD,
    code: "model_not_supported",
    param: "model",
  },
  // --- embeddings --------------------------------------------------------------------------------------------
  {
    name: "embeddings: missing input",
    method: "POST",
    path: EMBED,
    body: embed({}),
    status: 400,
    type: BAD,
    code: "missing_required_parameter",
    param: "input",
  },
  {
    name: "embeddings: empty string input",
    method: "POST",
    path: EMBED,
    body: embed({ input: "" }),
    status: 400,
    type: BAD,
    code: "invalid_value",
    param: "input",
  },
  {
    name: "embeddings: empty array input",
    method: "POST",
    path: EMBED,
    body: embed({ input: [] }),
    status: 400,
    type: BAD,
    code: "empty_array",
    param: "input",
  },
  {
    name: "embeddings: mixed-type input array",
    method: "POST",
    path: EMBED,
    body: embed({ input: ["a", 1] }),
    status: 400,
    type: BAD,
    code: "invalid_type",
    param: "input[1]",
  },
  {
    name: "embeddings: input as object",
    method: "POST",
    path: EMBED,
    body: embed({ input: { text: "a" } }),
    status: 400,
    type: BAD,
    code: "invalid_type",
    param: "input",
  },
  {
    name: "embeddings: encoding_format hex",
    method: "POST",
    path: EMBED,
    body: embed({ input: "a", encoding_format: "hex" }),
    status: 400,
    type: BAD,
    code: "invalid_value",
    param: "encoding_format",
  },
  {
    name: "embeddings: dimensions 0",
    method: "POST",
    path: EMBED,
    body: embed({ input: "a", dimensions: 0 }),
    status: 400,
    type: BAD,
    code: "integer_below_min_value",
    param: "dimensions",
  },
  {
    name: "embeddings: chat alias",
    method: "POST",
    path: EMBED,
    body: embed({ model: "chat-echo", input: "a" }),
    status: 400,
    type: BAD,
    code: "model_not_supported",
    param: "model",
  },
  // --- authentication ----------------------------------------------------------------------------------------
  {
    name: "no Authorization header",
    method: "POST",
    path: CHAT,
    headers: { authorization: null },
    body: chat({}),
    status: 401,
    type: BAD,
    code: null,
    param: null,
  },
  {
    name: "wrong token",
    method: "POST",
    path: CHAT,
    headers: { authorization: `Bearer ${WRONG_TOKEN}` },
    body: chat({}),
    status: 401,
    type: BAD,
    code: "invalid_api_key",
    param: null,
  },
  {
    name: "Basic scheme",
    method: "POST",
    path: CHAT,
    headers: { authorization: `Basic ${btoa(`user:${TEST_TOKEN}`)}` },
    body: chat({}),
    status: 401,
    type: BAD,
    code: "invalid_api_key",
    param: null,
  },
  {
    name: "wrong token on /v1/models",
    method: "GET",
    path: "/v1/models",
    headers: { authorization: `Bearer ${WRONG_TOKEN}` },
    status: 401,
    type: BAD,
    code: "invalid_api_key",
    param: null,
  },
  {
    name: "wrong token beats a bad body",
    method: "POST",
    path: CHAT,
    headers: { authorization: `Bearer ${WRONG_TOKEN}` },
    body: "{not json",
    status: 401,
    type: BAD,
    code: "invalid_api_key",
    param: null,
  },
  // --- /v1/responses -------------------------------------------------------------------------------------------
  {
    name: "responses: an interpreted parameter of the wrong type",
    method: "POST",
    path: RESPONSES,
    body: JSON.stringify({ model: "chat-echo", input: "hi", store: "yes" }),
    status: 400,
    type: BAD,
    code: "invalid_type",
    param: "store",
  },
  {
    name: "responses: missing input",
    method: "POST",
    path: RESPONSES,
    body: JSON.stringify({ model: "chat-echo" }),
    status: 400,
    type: BAD,
    code: "missing_required_parameter",
    param: "input",
  },
  {
    name: "responses: input of the wrong type",
    method: "POST",
    path: RESPONSES,
    body: JSON.stringify({ model: "chat-echo", input: 5 }),
    status: 400,
    type: BAD,
    code: "invalid_type",
    param: "input",
  },
  {
    name: "responses: bad role in an input item",
    method: "POST",
    path: RESPONSES,
    body: JSON.stringify({ model: "chat-echo", input: [{ role: "robot", content: "x" }] }),
    status: 400,
    type: BAD,
    code: "invalid_value",
    param: "input[0].role",
  },
  {
    name: "responses: bad content part type",
    method: "POST",
    path: RESPONSES,
    body: JSON.stringify({
      model: "chat-echo",
      input: [{ role: "user", content: [{ type: "text", text: "x" }] }],
    }),
    status: 400,
    type: BAD,
    code: "invalid_value",
    param: "input[0].content[0].type",
  },
  {
    name: "responses: a built-in tool's item on an alias without a native target",
    method: "POST",
    path: RESPONSES,
    body: JSON.stringify({
      model: "chat-echo",
      input: [{ role: "user", content: "hi" }, { type: "web_search_call", id: "ws_1", status: "completed" }],
    }),
    status: 400,
    type: BAD,
    code: "unsupported_value",
    param: "input[1].type",
  },
  {
    name: "responses: background mode",
    method: "POST",
    path: RESPONSES,
    body: JSON.stringify({ model: "chat-echo", input: "hi", background: true }),
    status: 400,
    type: BAD,
    code: "unsupported_parameter",
    param: "background",
  },
  {
    name: "responses: previous_response_id",
    method: "POST",
    path: RESPONSES,
    body: JSON.stringify({ model: "chat-echo", input: "hi", previous_response_id: "resp_x" }),
    status: 404,
    type: BAD,
    code: "previous_response_not_found",
    param: "previous_response_id",
  },
  {
    name: "responses: temperature above 2",
    method: "POST",
    path: RESPONSES,
    body: JSON.stringify({ model: "chat-echo", input: "hi", temperature: 3 }),
    status: 400,
    type: BAD,
    code: "decimal_above_max_value",
    param: "temperature",
  },
  {
    name: "responses: bad text.format type",
    method: "POST",
    path: RESPONSES,
    body: JSON.stringify({ model: "chat-echo", input: "hi", text: { format: { type: "xml" } } }),
    status: 400,
    type: BAD,
    code: "invalid_value",
    param: "text.format.type",
  },
  {
    name: "responses: function_call without call_id",
    method: "POST",
    path: RESPONSES,
    body: JSON.stringify({
      model: "chat-echo",
      input: [{ type: "function_call", name: "f", arguments: "{}" }],
    }),
    status: 400,
    type: BAD,
    code: "missing_required_parameter",
    param: "input[0].call_id",
  },
  {
    name: "responses: embedding alias",
    method: "POST",
    path: RESPONSES,
    body: JSON.stringify({ model: "embed-local", input: "hi" }),
    status: 400,
    type: BAD,
    code: "model_not_supported",
    param: "model",
  },
  // --- routing -------------------------------------------------------------------------------------------------
  {
    name: "GET /v1/chat/completions",
    method: "GET",
    path: CHAT,
    status: 405,
    type: BAD,
    code: "method_not_allowed",
    param: null,
    allow: "POST",
  },
  {
    name: "DELETE /v1/models",
    method: "DELETE",
    path: "/v1/models",
    status: 405,
    type: BAD,
    code: "method_not_allowed",
    param: null,
    allow: "GET, HEAD",
  },
  {
    name: "unknown path",
    method: "POST",
    path: "/v1/completions",
    body: chat({}),
    status: 404,
    type: BAD,
    code: "unknown_url",
    param: null,
  },
  {
    name: "path without /v1 (a base URL set without it)",
    method: "POST",
    path: "/chat/completions",
    body: chat({}),
    status: 404,
    type: BAD,
    code: "unknown_url",
    param: null,
  },
  {
    name: "unknown model on /v1/models/{id}",
    method: "GET",
    path: "/v1/models/gpt-99",
    status: 404,
    type: BAD,
    code: "model_not_found",
    param: null,
  },
];

/** Builds the request for `c` against `base`; `wire` means it goes through `fetch`, which sets lengths. */

/** The request of `c` with the test token. */
function requestInit(c: BadCase, wire: boolean): RequestInit & { duplex?: "half" } {
  return sharedRequestInit(c, AUTH, wire);
}

/** What every error answer must satisfy; neither the test token nor the one presented leaks. */
async function assertErrorResponse(c: BadCase, response: Response): Promise<void> {
  await assertErrorShape(c, response, [TEST_TOKEN, WRONG_TOKEN]);
}

const VALID_CHAT = JSON.stringify({
  model: "chat-echo",
  messages: [{ role: "user", content: "still alive?" }],
});

async function assertStillServing(send: (path: string, init: RequestInit) => Promise<Response>) {
  const response = await send(CHAT, {
    method: "POST",
    headers: { authorization: AUTH, "content-type": JSON_CT },
    body: encoder.encode(VALID_CHAT),
  });
  const body = await response.json();
  assert.equal(response.status, 200, JSON.stringify(body));
  assert.equal(body.choices[0].message.content, "still alive?");
}

function inProcess() {
  const result = parseConfigText(CONFIG, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(`test config invalid: ${JSON.stringify(result.issues)}`);
  assert.equal(result.config.server.max_body_size, LIMIT);
  const state: GatewayState = { config: result.config, providers: createProviders(result.config.providers) };
  const logger = createMemoryLogger();
  const handler = createGateway({ state: () => state, logger });
  const send = (path: string, init: RequestInit) => handler(new Request(`http://gateway.test${path}`, init));
  return { send, logger };
}

Deno.test("bad requests: the table has enough distinct cases", () => {
  assert.ok(CASES.length >= 30, `only ${CASES.length} cases`);
  assert.equal(new Set(CASES.map((c) => c.name)).size, CASES.length, "case names are unique");
});

Deno.test("bad requests: in-process, every case gets its status and OpenAI's error shape", async (t) => {
  const { send, logger } = inProcess();
  for (const c of CASES) {
    await t.step(c.name, async () => {
      await assertErrorResponse(c, await send(c.path, requestInit(c, false)));
    });
  }
  await assertStillServing(send);
  const access = logger.lines.filter((l) => l.msg === "request");
  assert.equal(access.length, CASES.length + 1, "one access-log line per request");
  assert.deepEqual(access.map((l) => l.status), [...CASES.map((c) => c.status), 200]);
  assert.deepEqual(
    logger.lines.filter((l) => l.msg === "unhandled_error"),
    [],
    "no bad request is a gateway bug",
  );
  for (const line of logger.lines) {
    assert.ok(!JSON.stringify(line).includes(TEST_TOKEN), "the token is never logged");
  }
});

Deno.test("bad requests: over a real socket, every case gets its status and OpenAI's error shape", async (t) => {
  const gw = await startGateway(CONFIG);
  const send = (path: string, init: RequestInit) => fetch(`${gw.url}${path}`, init);
  try {
    for (const c of CASES) {
      await t.step(c.name, async () => {
        await assertErrorResponse(c, await send(c.path, requestInit(c, true)));
      });
    }
    await assertStillServing(send);
    assert.equal(
      await accessLines(gw, CASES.length + 1),
      CASES.length + 1,
      "one access-log line per request",
    );
    assert.deepEqual(gw.logs.filter((l) => l.msg === "unhandled_error"), []);
  } finally {
    await gw.stop();
  }
});

Deno.test("bad requests: a missing content type with a valid JSON body is accepted", async () => {
  const { send } = inProcess();
  const response = await send(CHAT, {
    method: "POST",
    headers: { authorization: AUTH },
    body: encoder.encode(VALID_CHAT),
  });
  assert.equal(response.headers.get("content-type"), JSON_CT);
  assert.equal(response.status, 200, await response.clone().text());
  assert.equal((await response.json()).choices[0].message.content, "still alive?");

  // Over the socket too, and with JSON content types that carry parameters or a +json suffix.
  const gw = await startGateway(CONFIG);
  try {
    for (
      const contentType of [
        null,
        "application/json; charset=utf-8",
        "application/vnd.api+json",
        "application/x-www-form-urlencoded",
      ]
    ) {
      const headers = new Headers({ authorization: AUTH });
      if (contentType) headers.set("content-type", contentType);
      const r = await fetch(`${gw.url}${CHAT}`, {
        method: "POST",
        headers,
        body: encoder.encode(VALID_CHAT),
      });
      assert.equal(r.status, 200, `${contentType}: ${await r.clone().text()}`);
      await r.body?.cancel();
    }
    // A body of exactly the limit is still accepted.
    const padded = JSON.stringify({
      model: "chat-echo",
      messages: [{ role: "user", content: "ok" }],
      user: "",
    });
    const exact = padded.replace('"user":""', `"user":"${"u".repeat(LIMIT - padded.length)}"`);
    assert.equal(encoder.encode(exact).byteLength, LIMIT);
    const r = await fetch(`${gw.url}${CHAT}`, {
      method: "POST",
      headers: { authorization: AUTH, "content-type": JSON_CT },
      body: encoder.encode(exact),
    });
    assert.equal(r.status, 200, await r.clone().text());
    await r.body?.cancel();
  } finally {
    await gw.stop();
  }
});

Deno.test("bad requests: a body stream that fails mid-way is a 400, not a gateway error", async () => {
  const { send, logger } = inProcess();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode('{"model":"chat-echo",'));
      controller.error(new Error("connection reset by peer at /srv/socket.ts:12"));
    },
  });
  const response = await send(CHAT, {
    method: "POST",
    headers: { authorization: AUTH, "content-type": JSON_CT },
    body,
    duplex: "half",
  } as RequestInit);
  await assertErrorResponse({
    name: "body stream error",
    method: "POST",
    path: CHAT,
    status: 400,
    type: BAD,
    code: null,
    param: null,
  }, response);
  assert.deepEqual(logger.lines.filter((l) => l.msg === "unhandled_error"), []);
});

Deno.test("bad requests: 200 mixed bad requests at once over the socket all get their statuses", async () => {
  const rejections: unknown[] = [];
  const onRejection = (e: PromiseRejectionEvent) => {
    rejections.push(e.reason);
  };
  globalThis.addEventListener("unhandledrejection", onRejection);
  const gw = await startGateway(CONFIG);
  try {
    const picks = Array.from({ length: 200 }, (_, i) => CASES[(i * 7) % CASES.length]);
    const results = await Promise.all(picks.map(async (c) => {
      const response = await fetch(`${gw.url}${c.path}`, requestInit(c, true));
      const body = await response.json();
      return { c, status: response.status, body };
    }));
    for (const { c, status, body } of results) {
      assert.equal(status, c.status, `case "${c.name}"`);
      assert.equal(body.error.code, c.code, `case "${c.name}"`);
    }
    await assertStillServing((path, init) => fetch(`${gw.url}${path}`, init));
    assert.equal(await accessLines(gw, picks.length + 1), picks.length + 1);
    assert.deepEqual(gw.logs.filter((l) => l.msg === "unhandled_error"), []);
  } finally {
    await gw.stop();
    globalThis.removeEventListener("unhandledrejection", onRejection);
  }
  assert.deepEqual(rejections, []);
});

// --- /v1/messages and /v1/messages/count_tokens: Anthropic's error shape -----------------------------------------

const MESSAGES = "/v1/messages";
const COUNT = "/v1/messages/count_tokens";
const msg = (extra: Record<string, unknown>) =>
  JSON.stringify({ model: "chat-echo", max_tokens: 50, messages: USER, ...extra });
const count = (extra: Record<string, unknown>) =>
  JSON.stringify({ model: "chat-echo", messages: USER, ...extra });

/** A client mistake on a Messages route, and the Anthropic error type it must get. */
interface AnthropicCase {
  name: string;
  path: string;
  body?: RawBody;
  method?: string;
  headers?: Record<string, string | null>;
  status: number;
  type: string;
}

const ANTHROPIC_CASES: AnthropicCase[] = [
  ...[MESSAGES, COUNT].flatMap((path): AnthropicCase[] => {
    const make = path === MESSAGES ? msg : count;
    const cases: AnthropicCase[] = [
      { name: "malformed JSON", path, body: "{model: chat-echo", status: 400, type: BAD },
      { name: "a JSON array", path, body: "[]", status: 400, type: BAD },
      { name: "invalid UTF-8", path, body: invalidUtf8, status: 400, type: BAD },
      {
        name: "missing messages",
        path,
        body: JSON.stringify({ model: "chat-echo", max_tokens: 5 }),
        status: 400,
        type: BAD,
      },
      { name: "empty messages", path, body: make({ messages: [] }), status: 400, type: BAD },
      {
        name: "a role Messages does not have",
        path,
        body: make({ messages: [{ role: "tool", content: "x" }] }),
        status: 400,
        type: BAD,
      },
      {
        name: "an interpreted parameter of the wrong type",
        path,
        body: make({ stream: "yes" }),
        status: 400,
        type: BAD,
      },
      {
        name: "a text block without text",
        path,
        body: make({ messages: [{ role: "user", content: [{ type: "text" }] }] }),
        status: 400,
        type: BAD,
      },
      {
        name: "tool_use in a user turn",
        path,
        body: make({
          messages: [{ role: "user", content: [{ type: "tool_use", id: "t", name: "f", input: {} }] }],
        }),
        status: 400,
        type: BAD,
      },
      {
        name: "a tool without input_schema",
        path,
        body: make({ tools: [{ name: "f" }] }),
        status: 400,
        type: BAD,
      },
      {
        name: "tool_choice naming no declared tool",
        path,
        body: make({
          tools: [{ name: "f", input_schema: { type: "object" } }],
          tool_choice: { type: "tool", name: "g" },
        }),
        status: 400,
        type: BAD,
      },
      {
        name: "tool_choice of an unknown type",
        path,
        body: make({ tool_choice: { type: "sometimes" } }),
        status: 400,
        type: BAD,
      },
      {
        name: "thinking budget under 1024",
        path,
        body: make({ max_tokens: 4000, thinking: { type: "enabled", budget_tokens: 10 } }),
        status: 400,
        type: BAD,
      },
      {
        name: "a document on a translated target",
        path,
        body: make({
          messages: [{
            role: "user",
            content: [{ type: "document", source: { type: "url", url: "https://example.com/a.pdf" } }],
          }],
        }),
        status: 400,
        type: BAD,
      },
      { name: "an embedding alias", path, body: make({ model: "embed-local" }), status: 400, type: BAD },
      {
        name: "an unknown alias",
        path,
        body: make({ model: "claude-99" }),
        status: 404,
        type: "not_found_error",
      },
      {
        name: "no key",
        path,
        body: make({}),
        headers: { authorization: null },
        status: 401,
        type: "authentication_error",
      },
      {
        name: "a wrong x-api-key",
        path,
        body: make({}),
        headers: { authorization: null, "x-api-key": WRONG_TOKEN },
        status: 401,
        type: "authentication_error",
      },
      {
        name: "a form content type",
        path,
        body: make({}),
        headers: { "content-type": "multipart/form-data; boundary=x" },
        status: 415,
        type: BAD,
      },
      {
        name: "a body over the limit",
        path,
        body: make({ system: "x".repeat(LIMIT + 200) }),
        status: 413,
        type: "request_too_large",
      },
      { name: "GET", path, method: "GET", status: 405, type: BAD },
    ];
    return cases.map((c) => ({ ...c, name: `${path}: ${c.name}` }));
  }),
  { name: "messages: missing max_tokens", path: MESSAGES, body: count({}), status: 400, type: BAD },
  { name: "messages: max_tokens 0", path: MESSAGES, body: msg({ max_tokens: 0 }), status: 400, type: BAD },
  {
    name: "messages: temperature above 1",
    path: MESSAGES,
    body: msg({ temperature: 1.5 }),
    status: 400,
    type: BAD,
  },
  {
    name: "messages: stream not a boolean",
    path: MESSAGES,
    body: msg({ stream: "yes" }),
    status: 400,
    type: BAD,
  },
  {
    name: "messages: stop_sequences not a list",
    path: MESSAGES,
    body: msg({ stop_sequences: "END" }),
    status: 400,
    type: BAD,
  },
  {
    name: "messages: top_k on a builtin target",
    path: MESSAGES,
    body: msg({ top_k: 5 }),
    status: 400,
    type: BAD,
  },
  {
    name: "messages: an image of an unknown media type",
    path: MESSAGES,
    body: msg({
      messages: [{
        role: "user",
        content: [{ type: "image", source: { type: "base64", media_type: "image/tiff", data: "AAAA" } }],
      }],
    }),
    status: 400,
    type: BAD,
  },
  { name: "count_tokens: max_tokens", path: COUNT, body: count({ max_tokens: 5 }), status: 400, type: BAD },
  { name: "count_tokens: stream", path: COUNT, body: count({ stream: true }), status: 400, type: BAD },
];

/** Everything an Anthropic client must get for a mistake: the status, the shape, the request id, no leaks. */
async function assertAnthropicErrorResponse(c: AnthropicCase, response: Response): Promise<void> {
  const label = `case "${c.name}"`;
  const text = await response.text();
  assert.equal(response.status, c.status, `${label}: status (body: ${text})`);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json\b/, `${label}: content-type`);
  const requestId = response.headers.get("request-id");
  assert.ok(requestId, `${label}: request-id`);
  assert.equal(response.headers.get("x-request-id"), requestId, `${label}: one request id`);
  const body = JSON.parse(text);
  assert.deepEqual(Object.keys(body).sort(), ["error", "request_id", "type"], `${label}: top-level keys`);
  assert.equal(body.type, "error", label);
  assert.equal(body.request_id, requestId, label);
  assert.deepEqual(Object.keys(body.error).sort(), ["message", "type"], `${label}: error keys`);
  assert.equal(body.error.type, c.type, label);
  assert.ok(
    typeof body.error.message === "string" && body.error.message.length > 0,
    `${label}: empty message`,
  );
  assert.doesNotMatch(body.error.message, STACK_LINE, `${label}: stack trace in message`);
  assert.ok(!text.includes(TEST_TOKEN) && !text.includes(WRONG_TOKEN), `${label}: a token leaked`);
}

function anthropicInit(c: AnthropicCase, wire: boolean): RequestInit & { duplex?: "half" } {
  return requestInit({
    name: c.name,
    method: c.method ?? "POST",
    path: c.path,
    headers: { "anthropic-version": "2023-06-01", ...c.headers },
    body: c.body,
    status: c.status,
    type: c.type,
    code: null,
    param: null,
  }, wire);
}

Deno.test("bad requests: Messages routes answer every client mistake in Anthropic's error shape, in-process", async (t) => {
  assert.equal(new Set(ANTHROPIC_CASES.map((c) => c.name)).size, ANTHROPIC_CASES.length, "unique names");
  const result = parseConfigText(CONFIG, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(`test config invalid: ${JSON.stringify(result.issues)}`);
  const state: GatewayState = { config: result.config, providers: createProviders(result.config.providers) };
  const logger = createMemoryLogger();
  const usage: string[] = [];
  const handler = createGateway({
    state: () => state,
    logger,
    services: { usage: { write: (record) => usage.push(record.request_id) } },
  });
  for (const c of ANTHROPIC_CASES) {
    await t.step(c.name, async () => {
      await assertAnthropicErrorResponse(
        c,
        await handler(new Request(`http://gateway.test${c.path}`, anthropicInit(c, false))),
      );
    });
  }
  const access = logger.lines.filter((l) => l.msg === "request");
  assert.deepEqual(
    access.map((l) => l.status),
    ANTHROPIC_CASES.map((c) => c.status),
    "one access-log line each",
  );
  assert.equal(usage.length, ANTHROPIC_CASES.length, "one usage record each");
  assert.equal(new Set(usage).size, usage.length);
  assert.deepEqual(
    logger.lines.filter((l) => l.msg === "unhandled_error"),
    [],
    "no mistake is a gateway bug",
  );
});

Deno.test("bad requests: Messages routes answer every client mistake in Anthropic's error shape, over a socket", async (t) => {
  const gw = await startGateway(CONFIG);
  try {
    for (const c of ANTHROPIC_CASES) {
      await t.step(c.name, async () => {
        await assertAnthropicErrorResponse(c, await fetch(`${gw.url}${c.path}`, anthropicInit(c, true)));
      });
    }
    // Still serving, in Anthropic's shape.
    const ok = await fetch(
      `${gw.url}${MESSAGES}`,
      anthropicInit({ name: "ok", path: MESSAGES, body: msg({}), status: 200, type: "" }, true),
    );
    assert.equal(ok.status, 200);
    assert.equal((await ok.json()).type, "message");
    const want = ANTHROPIC_CASES.length + 1;
    assert.equal(await accessLines(gw, want), want, "one access-log line per request");
    assert.deepEqual(gw.logs.filter((l) => l.msg === "unhandled_error"), []);
  } finally {
    await gw.stop();
  }
});

/**
 * How many access-log lines `gw` wrote, once at least `want` arrived and a moment passed for any extra (a gateway
 * binary writes its log in bursts, after the answers they describe).
 */
async function accessLines(gw: TestGateway, want: number): Promise<number> {
  const isAccess = (l: Record<string, unknown>) => l.msg === "request";
  await waitForLogCount(gw, isAccess, want);
  await new Promise((r) => setTimeout(r, 100));
  return gw.logs.filter(isAccess).length;
}

Deno.test("bad requests: an alias of the wrong kind is named against the path called, pointing to the client API's own endpoint", async () => {
  const { send } = inProcess();
  const cases: [string, Record<string, unknown>, string][] = [
    [
      CHAT,
      { model: "embed-local", messages: USER },
      "/v1/chat/completions; use /v1/embeddings",
    ],
    [
      EMBED,
      { model: "chat-echo", input: "a" },
      "/v1/embeddings; use /v1/chat/completions",
    ],
    [
      RESPONSES,
      { model: "embed-local", input: "hi" },
      "/v1/responses; use /v1/embeddings",
    ],
    [
      "/v1/messages",
      { model: "embed-local", max_tokens: 5, messages: USER },
      "/v1/messages; use /v1/embeddings",
    ],
    [
      "/v1beta/models/embed-local:generateContent",
      { contents: [{ parts: [{ text: "hi" }] }] },
      "/v1beta/models/embed-local:generateContent; use models/embed-local:embedContent",
    ],
    [
      "/v1beta/models/chat-echo:embedContent",
      { content: { parts: [{ text: "hi" }] } },
      "/v1beta/models/chat-echo:embedContent; use models/chat-echo:generateContent",
    ],
  ];
  for (const [path, body, where] of cases) {
    const answer = await send(path, {
      method: "POST",
      headers: { authorization: AUTH, "content-type": JSON_CT, "anthropic-version": "2023-06-01" },
      body: JSON.stringify(body),
    });
    const error = await answer.json();
    assert.equal(answer.status, 400, `${path}: ${JSON.stringify(error)}`);
    const message = String(error.error.message);
    assert.ok(message.endsWith(`cannot be used with ${where}.`), `${path}: ${message}`);
    assert.match(message, /is (a chat|an embedding) model/, path);
  }
});

/**
 * Client mistakes on Google's Gemini API routes (`/v1beta/models…`), as a table run in-process against the fetch
 * handler and again over a real socket: each gets its status and Google's exact error shape
 * (`{"error":{"code","message","status"}}`), never a 5xx, never an upstream call, and exactly one usage record
 * (endpoint `gemini`). Then a seeded, bounded fast-check property over a socket: random JSON bodies and random
 * mutations of a valid `generateContent` body never get a 5xx, and get either a 200 or Google's error shape.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseConfigText } from "../../lib/config/load.ts";
import type { GatewayState } from "../../lib/http/context.ts";
import { createMemoryLogger } from "../../lib/log.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { createGateway } from "../../lib/server.ts";
import { type RawBody, requestInit, STACK_LINE } from "../helpers/bad_cases.ts";
import { FAKE_GEMINI_KEY, type FakeGemini, startFakeGemini } from "../helpers/fake_gemini.ts";
import { FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { startFakes } from "../helpers/fakes.ts";
import { damageArb, damaged } from "../helpers/fuzz_requests.ts";
import { GEMINI_VALID, geminiMutationArb } from "../helpers/fuzz_gemini.ts";
import { NARROW_TOKEN, startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

/** The body limit the table runs under, so an oversized body stays small. */
const LIMIT = 1000;
const WRONG_TOKEN = "gw-wrong-token-ffffffffffffffffffff";
const encoder = new TextEncoder();

const configFor = (openai: FakeUpstream, gemini: FakeGemini) => `
server: { host: 127.0.0.1, port: 0, max_body_size: 1kb }
providers:
  up: { type: openai, base_url: "${openai.baseURL}", api_key: "${FAKE_KEY}" }
  gem: { type: gemini, base_url: "${gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
models:
  chat-gpt: { type: chat, targets: [ { provider: up, model: gpt-ok } ] }
  gemini-ok: { type: chat, targets: [ { provider: gem, model: gem-ok } ] }
  emb-gpt: { type: embedding, targets: [ { provider: up, model: emb-ok } ] }
${TEST_TOKENS_YAML}`;

const USER = [{ role: "user", parts: [{ text: "hi" }] }];
const body = (extra: Record<string, unknown>) => JSON.stringify({ contents: USER, ...extra });
const big = body({ labels: { pad: "x".repeat(LIMIT + 200) } });
/** Google's status name for the HTTP status of each client mistake. */
const GOOGLE: Readonly<Record<number, string>> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  405: "UNIMPLEMENTED",
  413: "INVALID_ARGUMENT",
  415: "INVALID_ARGUMENT",
};

/** A client mistake on a Gemini route and the answer it must get. */
interface GeminiCase {
  name: string;
  method: string;
  /** Under `/v1beta/models`. */
  path: string;
  /** Headers on top of the defaults (`x-goog-api-key`, a JSON content type with a body); `null` removes one. */
  headers?: Record<string, string | null>;
  body?: RawBody;
  status: number;
  google: string;
}

type Mistake = { name: string; body: RawBody; status?: number; headers?: Record<string, string | null> };

/** Mistakes in the body: the same answer from every method that reads one. */
const BODY_MISTAKES: Mistake[] = [
  { name: "a body that is not JSON", body: "{contents: hi}" },
  { name: "truncated JSON", body: body({}).slice(0, -3) },
  { name: "an empty body", body: "" },
  { name: "invalid UTF-8", body: new Uint8Array([...encoder.encode('{"contents":"'), 0xff, 0x22, 0x7d]) },
  { name: "a JSON array body", body: `[${body({})}]` },
  { name: "a JSON string body", body: '"hi"' },
  { name: "a JSON null body", body: "null" },
  { name: "JSON nested past max_json_depth", body: `{"contents":${"[".repeat(100)}${"]".repeat(100)}}` },
  { name: "a body over max_body_size", body: big, status: 413 },
  {
    name: "a chunked body over max_body_size",
    body: { chunks: [encoder.encode(big.slice(0, 600)), encoder.encode(big.slice(600))] },
    status: 413,
  },
  {
    name: "a form content type",
    body: body({}),
    headers: { "content-type": "multipart/form-data; boundary=x" },
    status: 415,
  },
  { name: "no contents", body: "{}" },
  // A single content, part or tool where a list goes is one of them, as Google reads it; anything else is not.
  { name: "contents not a list", body: body({ contents: "hi" }) },
  { name: "a content not an object", body: body({ contents: ["hi"] }) },
  {
    name: "a role other than user/model",
    body: body({ contents: [{ role: "system", parts: [{ text: "x" }] }] }),
  },
  { name: "parts not a list", body: body({ contents: [{ role: "user", parts: "hi" }] }) },
  { name: "a part not an object", body: body({ contents: [{ role: "user", parts: ["hi"] }] }) },
  { name: "a text not a string", body: body({ contents: [{ role: "user", parts: [{ text: 5 }] }] }) },
  { name: "a model part not an object", body: body({ contents: [...USER, { role: "model", parts: [7] }] }) },
  {
    name: "a functionCall without a name",
    body: body({ contents: [...USER, { role: "model", parts: [{ functionCall: { args: {} } }] }] }),
  },
  { name: "systemInstruction not an object", body: body({ systemInstruction: "be brief" }) },
  { name: "generationConfig not an object", body: body({ generationConfig: [1] }) },
  { name: "temperature not a number", body: body({ generationConfig: { temperature: "hot" } }) },
  { name: "candidateCount 2", body: body({ generationConfig: { candidateCount: 2 } }) },
  {
    name: "a thinkingLevel not of Google's enum",
    body: body({ generationConfig: { thinkingConfig: { thinkingLevel: "banana" } } }),
  },
  { name: "stopSequences not a list", body: body({ generationConfig: { stopSequences: 5 } }) },
  { name: "a stop sequence not a string", body: body({ generationConfig: { stopSequences: [1] } }) },
  { name: "tools not a list", body: body({ tools: "googleSearch" }) },
  { name: "a functionDeclaration without a name", body: body({ tools: [{ functionDeclarations: [{}] }] }) },
];

/** Mistakes of the caller: the key, the model. */
const CALLER_MISTAKES:
  (Omit<Mistake, "body" | "status"> & { status: number; alias?: string; query?: string })[] = [
    { name: "no token", headers: { "x-goog-api-key": null }, status: 401 },
    { name: "a wrong x-goog-api-key", headers: { "x-goog-api-key": WRONG_TOKEN }, status: 401 },
    { name: "a wrong ?key=", query: `key=${WRONG_TOKEN}`, headers: { "x-goog-api-key": null }, status: 401 },
    {
      name: "a wrong Bearer token",
      headers: { "x-goog-api-key": null, authorization: `Bearer ${WRONG_TOKEN}` },
      status: 401,
    },
    {
      name: "a model the key may not use",
      alias: "gemini-ok",
      headers: { "x-goog-api-key": NARROW_TOKEN },
      status: 404,
    },
    { name: "a model that does not exist", alias: "gemini-99", status: 404 },
  ];

const METHODS = [
  ":generateContent",
  ":streamGenerateContent?alt=sse",
  ":streamGenerateContent",
  ":countTokens",
];

/** `path` with `query` added. */
const withQuery = (path: string, query?: string) =>
  query === undefined ? path : `${path}${path.includes("?") ? "&" : "?"}${query}`;

/** A request of `method` to `path` (a POST with a valid body) and the status it must get. */
const call = (
  method: string,
  name: string,
  path: string,
  status: number,
  extra: Partial<GeminiCase> = {},
) => ({
  name,
  method,
  path,
  body: method === "POST" || method === "PUT" ? body({}) : undefined,
  status,
  google: GOOGLE[status],
  ...extra,
});
const post = (name: string, path: string, status: number, extra: Partial<GeminiCase> = {}) =>
  call("POST", name, path, status, extra);
const NO_KEY = { "x-goog-api-key": null };

const CASES: GeminiCase[] = [
  ...METHODS.flatMap((m) => [
    ...BODY_MISTAKES.map((c) =>
      post(`${m}: ${c.name}`, `/chat-gpt${m}`, c.status ?? 400, { body: c.body, headers: c.headers })
    ),
    ...CALLER_MISTAKES.map((c) =>
      post(`${m}: ${c.name}`, withQuery(`/${c.alias ?? "chat-gpt"}${m}`, c.query), c.status, {
        headers: c.headers,
      })
    ),
  ]),
  post("cachedContent on an alias with no gemini target", "/chat-gpt:generateContent", 400, {
    body: body({ cachedContent: "cachedContents/abc" }),
  }),
  post("cachedContent on a stream, no gemini target", "/chat-gpt:streamGenerateContent?alt=sse", 400, {
    body: body({ cachedContent: "cachedContents/abc" }),
  }),
  post("an unknown method (:fooBar)", "/chat-gpt:fooBar", 404),
  post("a POST without a method", "/chat-gpt", 404),
  call("PUT", "PUT of a model method", "/chat-gpt:generateContent", 405),
  post("POST of the model list", "", 405),
  call("DELETE", "DELETE of a model", "/chat-gpt", 405),
  call("GET", "GET with a method suffix", "/chat-gpt:generateContent", 404),
  call("GET", "GET of a model that does not exist", "/gemini-99", 404),
  call("GET", "GET of a model the key may not use", "/gemini-ok", 404, {
    headers: { "x-goog-api-key": NARROW_TOKEN },
  }),
  call("GET", "GET of the list without a token", "", 401, { headers: NO_KEY }),
  // An upstream would get a negative outputDimensionality as sent: Google's 400 before any target sees it.
  post("outputDimensionality negative", "/emb-gpt:embedContent", 400, {
    body: JSON.stringify({ content: { parts: [{ text: "hi" }] }, outputDimensionality: -5 }),
  }),
  post("a batch request's outputDimensionality not an integer", "/emb-gpt:batchEmbedContents", 400, {
    body: JSON.stringify({
      requests: [
        { content: { parts: [{ text: "a" }] }, outputDimensionality: 2 },
        { content: { parts: [{ text: "b" }] }, outputDimensionality: 2.5 },
      ],
    }),
  }),
];

function init(c: GeminiCase, wire: boolean): RequestInit & { duplex?: "half" } {
  return requestInit(
    {
      ...c,
      headers: { authorization: null, "x-goog-api-key": TEST_TOKEN, ...c.headers },
      type: "",
      code: null,
      param: null,
    },
    "",
    wire,
  );
}

/** Google's exact error shape with the case's status and name, no stack trace, no token, a request id. */
async function assertGoogleError(c: GeminiCase, response: Response): Promise<void> {
  const label = `case "${c.name}"`;
  const text = await response.text();
  assert.ok(response.status < 500, `${label}: a 5xx for a client mistake (${response.status}: ${text})`);
  assert.equal(response.status, c.status, `${label}: status (body: ${text.slice(0, 300)})`);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json\b/, `${label}: content-type`);
  const body = JSON.parse(text);
  assert.deepEqual(Object.keys(body), ["error"], `${label}: top-level keys`);
  assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "status"], `${label}: error keys`);
  assert.equal(body.error.code, c.status, `${label}: error.code`);
  assert.equal(body.error.status, c.google, `${label}: error.status`);
  assert.ok(typeof body.error.message === "string" && body.error.message.length > 0, `${label}: message`);
  assert.doesNotMatch(body.error.message, STACK_LINE, `${label}: stack trace in message`);
  for (const token of [TEST_TOKEN, WRONG_TOKEN, NARROW_TOKEN]) {
    assert.ok(!text.includes(token), `${label}: leak`);
  }
  if (c.status === 405) assert.ok(response.headers.get("allow"), `${label}: Allow`);
  assert.ok(response.headers.get("x-request-id"), `${label}: x-request-id`);
}

/** Exactly one usage record per request, each under endpoint `gemini`. */
function assertOneRecordEach(ids: string[], records: { request_id: string; endpoint: string }[]): void {
  assert.equal(new Set(ids).size, ids.length, "one request id per request");
  for (const [i, id] of ids.entries()) {
    const mine = records.filter((r) => r.request_id === id);
    assert.equal(mine.length, 1, `case "${CASES[i].name}": one usage record (got ${mine.length})`);
    assert.equal(mine[0].endpoint, "gemini", `case "${CASES[i].name}": usage endpoint`);
  }
  assert.equal(records.length, ids.length, "no other usage record");
}

const startUpstreams = () => startFakes({ openai: startFakeOpenAI, gemini: startFakeGemini });

function assertNoUpstreamCall(fakes: ReturnType<typeof startUpstreams>): void {
  assert.deepEqual(fakes.openai.requests.map((r) => r.path), [], "no call reached the OpenAI upstream");
  assert.deepEqual(fakes.gemini.requests.map((r) => r.url), [], "no call reached the Gemini upstream");
}

Deno.test("gemini bad requests: every client mistake gets Google's error shape, in-process", async (t) => {
  assert.equal(new Set(CASES.map((c) => c.name)).size, CASES.length, "unique names");
  const fakes = startUpstreams();
  try {
    const result = parseConfigText(configFor(fakes.openai, fakes.gemini), { source: "<test>", env: {} });
    if (!result.ok) throw new Error(`test config invalid: ${JSON.stringify(result.issues)}`);
    assert.equal(result.config.server.max_body_size, LIMIT);
    const state: GatewayState = {
      config: result.config,
      providers: createProviders(result.config.providers),
    };
    const logger = createMemoryLogger();
    const records: { request_id: string; endpoint: string }[] = [];
    const handler = createGateway({
      state: () => state,
      logger,
      services: { usage: { write: (r) => records.push({ request_id: r.request_id, endpoint: r.endpoint }) } },
    });
    const ids: string[] = [];
    for (const c of CASES) {
      await t.step(c.name, async () => {
        const response = await handler(
          new Request(`http://gateway.test/v1beta/models${c.path}`, init(c, false)),
        );
        ids.push(response.headers.get("x-request-id") ?? "");
        await assertGoogleError(c, response);
      });
    }
    assertOneRecordEach(ids, records);
    assertNoUpstreamCall(fakes);
    assert.deepEqual(
      logger.lines.filter((l) => l.msg === "unhandled_error"),
      [],
      "no mistake is a gateway bug",
    );
  } finally {
    await fakes.stop();
  }
});

Deno.test("gemini bad requests: every client mistake gets Google's error shape, over a socket", async (t) => {
  const fakes = startUpstreams();
  const gw = await startGateway(configFor(fakes.openai, fakes.gemini));
  try {
    const ids: string[] = [];
    for (const c of CASES) {
      await t.step(c.name, async () => {
        const response = await fetch(`${gw.url}/v1beta/models${c.path}`, init(c, true));
        ids.push(response.headers.get("x-request-id") ?? "");
        await assertGoogleError(c, response);
      });
    }
    const records = await pollUsageRows<{ request_id: string; endpoint: string }>(
      gw,
      (rows) => rows.length >= ids.length,
      { sql: "SELECT request_id, endpoint FROM usage", settleMs: 150 },
    );
    assertOneRecordEach(ids, records);
    assertNoUpstreamCall(fakes);
    assert.deepEqual(gw.logs.filter((l) => l.msg === "unhandled_error"), []);
  } finally {
    await gw.stop();
    await fakes.stop();
  }
});

// --- fuzz: random bodies over a socket -----------------------------------------------------------------------

const FUZZ_SEED = 20_260_423;
const FUZZ_RUNS = 1000;

const FUZZ_CONFIG = `
server: { host: 127.0.0.1, port: 0, max_body_size: 64kb }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
${TEST_TOKENS_YAML}`;

const fuzzArb = fc.record({
  json: fc.oneof(
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
    { weight: 3, arbitrary: geminiMutationArb },
  ),
  damage: damageArb,
  method: fc.constantFrom(...METHODS),
  alias: fc.constantFrom("chat-echo", "chat-echo", "chat-echo", "nope"),
});

Deno.test("gemini fuzz: random and mutated bodies never get a 5xx, only a 200 or Google's error shape", async () => {
  const gw = await startGateway(FUZZ_CONFIG);
  const started = performance.now();
  let requests = 1;
  const statuses: Record<number, number> = {};
  try {
    const valid = await fetch(`${gw.url}/v1beta/models/chat-echo:generateContent`, {
      method: "POST",
      headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
      body: JSON.stringify(GEMINI_VALID),
    });
    assert.equal(valid.status, 200, `the valid body: ${await valid.text()}`);
    await fc.assert(
      fc.asyncProperty(fuzzArb, async ({ json, damage, method, alias }) => {
        requests++;
        const response = await fetch(`${gw.url}/v1beta/models/${alias}${method}`, {
          method: "POST",
          headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
          body: damaged(json, damage),
        });
        const text = await response.text();
        const label = `${method} ${text.slice(0, 300)}`;
        statuses[response.status] = (statuses[response.status] ?? 0) + 1;
        assert.ok(response.status < 500, `a 5xx: ${response.status} ${label}`);
        if (response.status === 200) return;
        const body = JSON.parse(text);
        assert.deepEqual(Object.keys(body), ["error"], label);
        assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "status"], label);
        assert.equal(body.error.code, response.status, label);
        assert.equal(body.error.status, GOOGLE[response.status] ?? "INVALID_ARGUMENT", label);
        assert.ok(typeof body.error.message === "string" && body.error.message.length > 0, label);
        assert.doesNotMatch(body.error.message, STACK_LINE, label);
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS },
    );
    const rows = await pollUsageRows<{ endpoint: string }>(gw, (r) => r.length >= requests, {
      settleMs: 100,
    });
    assert.equal(rows.length, requests, "one usage record per request");
    assert.ok(rows.every((r) => r.endpoint === "gemini"), "every record under endpoint gemini");
    assert.deepEqual(gw.logs.filter((l) => l.msg === "unhandled_error"), []);
  } finally {
    await gw.stop();
  }
  const ms = Math.round(performance.now() - started);
  console.log(`gemini fuzz: ${requests} requests in ${ms} ms, by status: ${JSON.stringify(statuses)}`);
});

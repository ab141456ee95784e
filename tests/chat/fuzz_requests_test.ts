/**
 * Property-based fuzzing of what clients send: request bodies (plausible shapes with wrong types, nulls, huge
 * numbers, unicode, deep nesting, missing and extra fields, broken bytes) and headers (authorization,
 * content type and length, request ids, junk). Bounded and seeded, so every run checks the same cases:
 * at least 10,000 per endpoint in-process against the gateway's handler, then a sample over a real socket
 * (with `Content-Length` lies only a socket can tell), and the server must still answer `/healthz` after.
 *
 * The property, for every response: never a 5xx (the builtin provider serves the models, so nothing is the
 * upstream's fault), every error in OpenAI's exact shape without stack-trace text (in Anthropic's on the
 * Messages routes), valid requests answered in full (streams end with `[DONE]`, Responses and Messages streams
 * with their final event), exactly one usage record per API request, and no unhandled error.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { parseConfigText } from "../../lib/config/load.ts";
import type { GatewayState } from "../../lib/http/context.ts";
import type { Logger, LogValue } from "../../lib/log.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { createGateway } from "../../lib/server.ts";
import { USAGE_GROUP_KEYS } from "../../lib/usage/record.ts";
import { createSqliteStore } from "../../lib/usage/sqlite_store.ts";
import { authorizationArb, type FuzzTokens, headersArb, headersOf } from "../helpers/fuzz_headers.ts";
import {
  chatRequestArb,
  embeddingRequestArb,
  type GeneratedRequest,
  messagesCountRequestArb,
  messagesRequestArb,
  responsesRequestArb,
} from "../helpers/fuzz_requests.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { rawExchange } from "../helpers/raw_http.ts";

/** Runs per in-process property: the issue asks for at least 10,000 cases per endpoint. */
const RUNS = 10_000;
const SEED = 20_261_123;
const ADMIN_TOKEN = "gw-admin-token-fuzz-0123456789abcdef";
/** A token with limits, a budget and a max_tokens ceiling, so admission and policy see the junk too. */
const LIMITED_TOKEN = "gw-limited-token-fuzz-0123456789ab";
const BODY_TIMEOUT_MS = 250;
const TOKENS: FuzzTokens = { client: TEST_TOKEN, limited: LIMITED_TOKEN, admin: ADMIN_TOKEN };

const CONFIG = `
server:
  host: 127.0.0.1
  port: 0
  max_body_size: 256kb
  connections: { body_timeout: ${BODY_TIMEOUT_MS}ms }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  team/chat:
    type: chat
    targets: [ { provider: local, model: echo, price: { input: 1, output: 2 } } ]
    limits: { rpm: 1000000000, tpm: 1000000000000 }
    content_rules:
      - { name: no-secrets, pattern: "secret-[0-9]+", action: redact }
      - { name: no-bombs, pattern: "\\bbomb\\b", action: deny, message: "Not here." }
  embed-local: { type: embedding, targets: [ { provider: local, model: hash } ] }
${TEST_TOKENS_YAML}  - name: fuzz-limited
    sha256: ${hashToken(LIMITED_TOKEN)}
    models: ["team/*", "embed-*"]
    limits: { rpm: 1000000000, tpm: 1000000000000, concurrent: 4 }
    budget: { tokens: 1000000000000, period: day }
    max_tokens: 50
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN_TOKEN)} }
`;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// --- the in-process gateway ---------------------------------------------------------------------------------

/** A logger that keeps only what the property looks at: request lines are counted, errors kept. */
function countingLogger() {
  const errors: Record<string, LogValue>[] = [];
  const counts = { requests: 0 };
  const logger: Logger = {
    info: (msg) => {
      if (msg === "request") counts.requests++;
    },
    warn: () => {},
    error: (msg, fields) => {
      errors.push({ msg, ...fields });
    },
  };
  return { logger, errors, counts };
}

function inProcessGateway() {
  const result = parseConfigText(CONFIG, { source: "<fuzz>", env: {} });
  if (!result.ok) throw new Error(`fuzz config invalid: ${JSON.stringify(result.issues)}`);
  const state: GatewayState = { config: result.config, providers: createProviders(result.config.providers) };
  const { logger, errors, counts } = countingLogger();
  const store = createSqliteStore(":memory:");
  const usage: string[] = [];
  const handler = createGateway({
    state: () => state,
    logger,
    services: {
      usage: { write: (record) => usage.push(record.request_id) },
      usageStore: {
        flush: () => Promise.resolve(),
        query: (q) => store.query(q),
        listRecords: (q) => store.listRecords(q),
      },
    },
  });
  return { handler, errors, counts, usage, close: () => store.close() };
}

// --- the property -------------------------------------------------------------------------------------------

/** A frame of a stack trace or a source location: never part of an answer. */
const STACK = /\n\s+at |file:\/\/|\/lib\/\w+\/\w+\.ts|\.ts:\d+:\d+/;

function describe(request: GeneratedRequest, headers: Headers): string {
  const body = request.body === undefined ? "" : decoder.decode(request.body.subarray(0, 600));
  return `${request.method} ${request.path} ${JSON.stringify([...headers])} ${body}`;
}

/**
 * Checks one response against the property and reads it to the end (a stream included), so that its usage
 * record and access-log line are written before the next request.
 */
async function checkResponse(request: GeneratedRequest, headers: Headers, response: Response): Promise<void> {
  const text = await response.text();
  const label = () => `${response.status} ${text.slice(0, 300)} for ${describe(request, headers)}`;
  assert.ok(response.status < 500, label());
  if (request.valid) assert.equal(response.status, 200, `a valid request was refused: ${label()}`);
  const anthropic = ANTHROPIC_PATHS.has(request.path);
  if (request.expect) {
    assert.equal(response.status, request.expect.status, label());
    const error = JSON.parse(text).error;
    if (anthropic) assert.equal(error.type, "invalid_request_error", label());
    else assert.equal(error.code, request.expect.code, label());
  }
  assert.ok(response.headers.get("x-request-id"), `no x-request-id: ${label()}`);
  if (response.status >= 400) {
    assert.match(response.headers.get("content-type") ?? "", /^application\/json\b/, label());
    let body: { error?: Record<string, unknown> };
    try {
      body = JSON.parse(text);
    } catch {
      assert.fail(`the error body is not JSON: ${label()}`);
    }
    if (anthropic) return assertAnthropicError(response, body, text, label);
    assert.deepEqual(Object.keys(body), ["error"], label());
    const error = body.error!;
    assert.deepEqual(Object.keys(error).sort(), ["code", "message", "param", "type"], label());
    assert.ok(typeof error.message === "string" && error.message.length > 0, label());
    assert.ok(typeof error.type === "string" && error.type.length > 0, label());
    assert.ok(error.param === null || typeof error.param === "string", label());
    assert.ok(error.code === null || typeof error.code === "string", label());
    assert.doesNotMatch(text, STACK, label());
    for (const token of [TEST_TOKEN, ADMIN_TOKEN, LIMITED_TOKEN]) assert.ok(!text.includes(token), label());
    return;
  }
  if (request.method === "HEAD") return;
  const type = response.headers.get("content-type") ?? "";
  if (type.startsWith("text/event-stream") && request.path === "/v1/responses") {
    assertResponsesStream(text, label);
  } else if (type.startsWith("text/event-stream") && anthropic) {
    assertMessagesStream(text, label);
  } else if (type.startsWith("text/event-stream")) {
    assert.ok(text.endsWith("data: [DONE]\n\n"), `the stream did not end with [DONE]: ${label()}`);
    assert.doesNotMatch(text, /^data: \{"error"/m, label());
  } else if (type.startsWith("application/json")) {
    JSON.parse(text);
  } else {
    assert.equal(request.path, "/metrics", `unexpected content type ${type}: ${label()}`);
  }
}

/**
 * A Responses event stream ends properly: `event:` + `data:` frames with rising sequence numbers, the last a
 * `response.completed` or `response.incomplete` (the builtin model never fails), no `error` event.
 */
function assertResponsesStream(text: string, label: () => string): void {
  assert.ok(text.endsWith("\n\n"), `the stream ended mid-frame: ${label()}`);
  const frames = text.slice(0, -2).split("\n\n");
  frames.forEach((frame, i) => {
    const match = /^event: ([a-z_.]+)\ndata: (.*)$/s.exec(frame);
    assert.ok(match, `not an event frame: ${frame.slice(0, 200)}: ${label()}`);
    const data = JSON.parse(match[2]);
    assert.equal(data.type, match[1], label());
    assert.equal(data.sequence_number, i, label());
  });
  const last = frames.at(-1)!;
  assert.match(last, /^event: response\.(completed|incomplete)\n/, `the stream did not end well: ${label()}`);
  assert.doesNotMatch(text, /^event: (error|response\.failed)$/m, label());
}

/** The routes that answer in Anthropic's shapes. */
const ANTHROPIC_PATHS = new Set(["/v1/messages", "/v1/messages/count_tokens"]);
/** The error types Anthropic documents. */
const ANTHROPIC_ERROR_TYPES = new Set([
  "invalid_request_error",
  "authentication_error",
  "permission_error",
  "not_found_error",
  "request_too_large",
  "rate_limit_error",
]);

/**
 * An error on the Messages routes is Anthropic's shape: `{"type":"error","error":{"type","message"}}` (with the
 * request id), a client error's type one Anthropic documents, and a `request-id` header.
 */
function assertAnthropicError(
  response: Response,
  body: Record<string, unknown>,
  text: string,
  label: () => string,
): void {
  assert.deepEqual(Object.keys(body).sort(), ["error", "request_id", "type"], label());
  assert.equal(body.type, "error", label());
  const error = body.error as Record<string, unknown>;
  assert.deepEqual(Object.keys(error).sort(), ["message", "type"], label());
  assert.ok(ANTHROPIC_ERROR_TYPES.has(error.type as string), label());
  assert.ok(typeof error.message === "string" && error.message.length > 0, label());
  assert.ok(response.headers.get("request-id"), `no request-id: ${label()}`);
  assert.doesNotMatch(text, STACK, label());
  for (const token of [TEST_TOKEN, ADMIN_TOKEN, LIMITED_TOKEN]) assert.ok(!text.includes(token), label());
}

/**
 * A Messages event stream ends properly: `event:` + `data:` frames of the same type, from `message_start` to
 * `message_stop`, no `error` event (the builtin model never fails).
 */
function assertMessagesStream(text: string, label: () => string): void {
  assert.ok(text.endsWith("\n\n"), `the stream ended mid-frame: ${label()}`);
  const types = text.slice(0, -2).split("\n\n").map((frame) => {
    const match = /^event: (\w+)\ndata: (.*)$/s.exec(frame);
    assert.ok(match, `not an event frame: ${frame.slice(0, 200)}: ${label()}`);
    assert.equal(JSON.parse(match[2]).type, match[1], label());
    return match[1];
  });
  assert.equal(types[0], "message_start", label());
  assert.equal(types.at(-1), "message_stop", `the stream did not end well: ${label()}`);
  assert.ok(!types.includes("error"), label());
}

type Handler = (request: Request) => Promise<Response>;

/**
 * Sends one generated request in-process and checks it; returns its status, or null when fetch itself would
 * refuse to send it (a header it does not allow).
 */
async function exercise(handler: Handler, generated: GeneratedRequest): Promise<number | null> {
  const headers = headersOf(generated.spec, generated.body);
  if (headers === null) return null;
  let request: Request;
  try {
    request = new Request(`http://gateway.test${generated.path}`, {
      method: generated.method,
      headers,
      body: generated.body,
    });
  } catch {
    return null;
  }
  const response = await handler(request);
  await checkResponse(generated, headers, response);
  return response.status;
}

/**
 * Runs `runs` generated requests in-process. Afterwards the books must balance, and the generator must have
 * reached each of the `reached` statuses (so the property is not vacuous).
 */
async function fuzzInProcess(
  arbitrary: fc.Arbitrary<GeneratedRequest>,
  reached: number[],
  runs = RUNS,
): Promise<{ valid: number; expected: number }> {
  const gw = inProcessGateway();
  const statuses = new Map<number, number>();
  let sent = 0;
  let api = 0;
  let valid = 0;
  let expected = 0;
  try {
    await fc.assert(
      fc.asyncProperty(arbitrary, async (request) => {
        const status = await exercise(gw.handler, request);
        if (status === null) return;
        sent++;
        if (request.valid) valid++;
        if (request.expect) expected++;
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (request.path.startsWith("/v1/") || request.path === "/v1") api++;
      }),
      { seed: SEED, numRuns: runs, endOnFailure: true },
    );
  } finally {
    gw.close();
  }
  assert.ok(sent >= runs * 0.99, `only ${sent} of ${runs} generated requests could be sent`);
  const seen = JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)));
  for (const status of reached) {
    assert.ok((statuses.get(status) ?? 0) >= 20, `status ${status} is rare: ${seen}`);
  }
  assert.deepEqual(gw.errors, [], "no request is a gateway bug (unhandled errors were logged)");
  assert.equal(gw.counts.requests, sent, "one access-log line per request");
  assert.equal(gw.usage.length, api, "one usage record per API request");
  return { valid, expected };
}

Deno.test("fuzz: POST /v1/chat/completions, 10,000 generated requests in-process", async () => {
  const { valid, expected } = await fuzzInProcess(chatRequestArb(TOKENS), [200, 400, 401, 404, 415]);
  assert.ok(valid > 1_000, `only ${valid} valid requests`);
  assert.ok(expected > 100, `only ${expected} requests nested too deep`);
});

Deno.test("fuzz: POST /v1/responses, 10,000 generated requests in-process", async () => {
  const { valid, expected } = await fuzzInProcess(responsesRequestArb(TOKENS), [200, 400, 401, 404, 415]);
  assert.ok(valid > 1_000, `only ${valid} valid requests`);
  assert.ok(expected > 100, `only ${expected} requests nested too deep`);
});

Deno.test("fuzz: POST /v1/messages, 10,000 generated requests in-process", async () => {
  const { valid, expected } = await fuzzInProcess(messagesRequestArb(TOKENS), [200, 400, 401, 404, 415]);
  assert.ok(valid > 1_000, `only ${valid} valid requests`);
  assert.ok(expected > 100, `only ${expected} requests nested too deep`);
});

Deno.test("fuzz: POST /v1/messages/count_tokens, 10,000 generated requests in-process", async () => {
  const { valid, expected } = await fuzzInProcess(messagesCountRequestArb(TOKENS), [200, 400, 401, 404, 415]);
  assert.ok(valid > 1_000, `only ${valid} valid requests`);
  assert.ok(expected > 100, `only ${expected} requests nested too deep`);
});

Deno.test("fuzz: POST /v1/embeddings, 10,000 generated requests in-process", async () => {
  const { valid, expected } = await fuzzInProcess(embeddingRequestArb(TOKENS), [200, 400, 401, 404, 415]);
  assert.ok(valid > 1_000, `only ${valid} valid requests`);
  assert.ok(expected > 100, `only ${expected} requests nested too deep`);
});

/** A GET (or HEAD) of `path` with generated headers; valid when a client token is presented. */
function getArb(
  path: fc.Arbitrary<string>,
  method: fc.Arbitrary<string> = fc.constantFrom("GET", "GET", "GET", "HEAD"),
): fc.Arbitrary<GeneratedRequest> {
  return fc.record({ path, method, spec: headersArb(TOKENS) }).map(({ path, method, spec }) => ({
    method,
    path,
    spec,
    valid: false,
  }));
}

const query = fc.option(
  fc.array(fc.tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 12 })), { maxLength: 3 })
    .map((pairs) => `?${new URLSearchParams(pairs)}`),
  { freq: 3, nil: "" },
);

Deno.test("fuzz: GET /v1/models, 10,000 generated requests in-process", async () => {
  const { valid } = await fuzzInProcess(
    getArb(query.map((q) => `/v1/models${q}`)).map((r) => ({
      ...r,
      valid: r.spec.authorization.caller === "client" || r.spec.authorization.caller === "limited",
    })),
    [200, 401],
  );
  assert.ok(valid > 5_000, `only ${valid} valid requests`);
});

/** A model id as it appears in a path: encoded or not, valid or not. */
const modelId = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom("chat-echo", "embed-local", "team%2Fchat", "team/chat", "gpt-4o") },
  fc.string({ unit: "grapheme", maxLength: 20 }).map(encodeURIComponent),
  fc.string({ maxLength: 20 }).map((s) => s.replace(/[?#\s%]/g, "")).filter((s) => s.length > 0),
  fc.constantFrom("%", "%E0%A4%A", "%00", "%2e%2e", "..", "a%20b", "x".repeat(3_000), "%F0%9F%98%80"),
);

Deno.test("fuzz: GET /v1/models/{id}, 10,000 generated requests in-process", async () => {
  await fuzzInProcess(getArb(modelId.map((id) => `/v1/models/${id}`)), [200, 401, 404]);
});

const KNOWN_PATHS = [
  "/v1/chat/completions",
  "/v1/embeddings",
  "/v1/models",
  "/v1/models/chat-echo",
  "/chat/completions",
  "/embeddings",
  "/models",
  "/v1/completions",
  "/v1",
  "/",
  "/healthz",
  "/readyz",
  "/metrics",
  "/admin/targets",
  "/admin/usage",
  "/admin/config",
  "/admin/reload",
  "/v1/v1/models",
];

const anyPath = fc.oneof(
  fc.constantFrom(...KNOWN_PATHS),
  fc.tuple(fc.constantFrom(...KNOWN_PATHS), fc.webSegment()).map(([p, s]) => `${p.replace(/\/$/, "")}/${s}`),
  fc.webSegment().map((s) => `/${s}`),
  fc.constantFrom("/%", "/v1/%ZZ", "//v1/models", "/v1/models/", "/v1//models", `/${"a".repeat(5_000)}`),
);

const anyMethod = fc.oneof(
  fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"),
  fc.stringMatching(/^[A-Z]{1,10}$/),
);

Deno.test("fuzz: unknown paths and methods, 10,000 generated requests in-process", async () => {
  await fuzzInProcess(
    fc.record({ chat: chatRequestArb(TOKENS), method: anyMethod, path: anyPath }).map((
      { chat, method, path },
    ) => ({
      ...chat,
      method,
      path,
      body: method === "GET" || method === "HEAD" ? undefined : chat.body,
      valid: false,
      expect: undefined,
    })),
    [200, 401, 404, 405],
  );
});

const usageQuery = fc.record({
  from: fc.oneof(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), fc.string({ maxLength: 12 })),
  to: fc.oneof(fc.constantFrom("2026-12-31", "9999-99-99", "now"), fc.string({ maxLength: 12 })),
  token: fc.string({ maxLength: 12 }),
  alias: fc.string({ maxLength: 12 }),
  outcome: fc.oneof(fc.constantFrom("allow", "deny", "modify"), fc.string({ maxLength: 8 })),
  upstream_model: fc.string({ maxLength: 12 }),
  rule: fc.oneof(
    fc.constantFrom("token.rpm", "alias.content:no-secrets", "a,b"),
    fc.string({ maxLength: 12 }),
  ),
  group_by: fc.oneof(
    fc.array(fc.constantFrom(...USAGE_GROUP_KEYS)).map((k) => k.join(",")),
    fc.string({ maxLength: 20 }),
  ),
  // Read by /admin/requests only.
  status: fc.oneof(fc.constantFrom("429", "4xx", "5XX", "600"), fc.string({ maxLength: 4 })),
  limit: fc.oneof(fc.integer({ min: -5, max: 1_005 }).map(String), fc.string({ maxLength: 6 })),
  before: fc.oneof(fc.base64String({ maxLength: 40 }), fc.string({ maxLength: 20 })),
}, { requiredKeys: [] }).map((q) => `?${new URLSearchParams(q as Record<string, string>)}`);

const adminAuth = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constant({ value: `Bearer ${ADMIN_TOKEN}` as string | null, caller: "admin" as const }),
  },
  authorizationArb(TOKENS),
);

Deno.test("fuzz: admin endpoints with random headers and queries, 10,000 generated requests in-process", async () => {
  const path = fc.oneof(
    fc.constantFrom("/admin/targets", "/admin/config", "/metrics", "/admin/reload", "/readyz", "/healthz"),
    usageQuery.map((q) => `/admin/usage${q}`),
    usageQuery.map((q) => `/admin/requests${q}`),
  );
  await fuzzInProcess(
    fc.record({ get: getArb(path, fc.constantFrom("GET", "GET", "GET", "POST", "HEAD")), auth: adminAuth })
      .map(({ get, auth }) => ({ ...get, spec: { ...get.spec, authorization: auth } })),
    [200, 400, 401, 404, 405],
  );
});

// --- over a real socket -------------------------------------------------------------------------------------

Deno.test("fuzz: a socket-level sample, Content-Length lies included, and the server is alive after", async () => {
  const gw = await startGateway(CONFIG);
  const port = Number(new URL(gw.url).port);
  try {
    // Generated requests through fetch: the runtime's own HTTP parsing and framing in the loop.
    const samples = fc.sample(chatRequestArb(TOKENS), { seed: SEED, numRuns: 300 })
      .concat(fc.sample(embeddingRequestArb(TOKENS), { seed: SEED + 1, numRuns: 100 }))
      .concat(fc.sample(messagesRequestArb(TOKENS), { seed: SEED + 2, numRuns: 100 }));
    let sent = 0;
    for (let i = 0; i < samples.length; i += 20) {
      await Promise.all(
        samples.slice(i, i + 20).map(async (generated) => {
          // fetch sets Content-Length itself.
          const request = { ...generated, spec: { ...generated.spec, contentLength: "none" } };
          const headers = headersOf(request.spec, request.body);
          if (headers === null) return;
          let response: Response;
          try {
            response = await fetch(`${gw.url}${request.path}`, {
              method: request.method,
              headers,
              body: request.body,
            });
          } catch (err) {
            if (err instanceof TypeError && /header|byte/i.test(err.message)) return; // refused by fetch itself
            throw err;
          }
          sent++;
          await checkResponse(request, headers, response);
        }),
      );
    }
    assert.ok(sent >= 490, `only ${sent} sent`);

    // Content-Length lies only a socket shows: longer than the body (the gateway waits, then 408), shorter
    // (the rest is read as the next request, which the runtime refuses), and nonsense.
    const body = encoder.encode('{"model":"chat-echo","messages":[{"role":"user","content":"hi"}]}');
    const head = (length: string) =>
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${TEST_TOKEN}\r\n` +
      `content-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;
    const lies = [
      "1000",
      String(body.byteLength + 1),
      String(body.byteLength - 5),
      "1",
      "0",
      "-1",
      "abc",
      "1, 2",
    ];
    const answers = await Promise.all(
      lies.map((l) => rawExchange(port, head(l), body, BODY_TIMEOUT_MS + 2_000)),
    );
    for (const [i, answer] of answers.entries()) {
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1] ?? 0);
      assert.ok(status === 0 || status < 500, `content-length ${lies[i]}: ${answer.slice(0, 300)}`);
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(answer)?.[1] ?? 0);
      if (status >= 400 && /\r\nx-request-id:/i.test(answer) && length > 0) {
        // The first response only: a socket may carry a second one (the rest of the body read as a request).
        const start = answer.indexOf("\r\n\r\n") + 4;
        const json = JSON.parse(decoder.decode(encoder.encode(answer.slice(start)).subarray(0, length)));
        assert.deepEqual(Object.keys(json.error).sort(), ["code", "message", "param", "type"]);
      }
    }
    assert.match(
      answers[0],
      /^HTTP\/1\.1 408 /,
      "a body shorter than its Content-Length times out with a 408",
    );
    assert.match(answers[1], /^HTTP\/1\.1 408 /);

    const health = await fetch(`${gw.url}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: "ok" });
    const chat = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body,
    });
    assert.equal(chat.status, 200);
    await chat.body?.cancel();
    assert.deepEqual(gw.logs.filter((l) => l.level === "error"), []);
  } finally {
    await gw.stop();
  }
});

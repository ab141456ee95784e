/**
 * Property-based fuzzing of the admin API, as `fuzz_requests_test.ts` does for `/v1`: token bodies for
 * `POST /admin/tokens`, `PATCH /admin/tokens/{id}` and `POST /admin/tokens/{id}/rotate` (plausible ones mutated:
 * wrong types, huge strings, deep nesting, unicode, nulls, unknown fields, numbers out of range, odd dates and
 * durations, damaged JSON), generated query strings for the admin reads, and odd ids in paths. Seeded and
 * bounded: in-process against the gateway's handler over the memory token store, then a sample over a real
 * socket (the SQLite token store, through its worker).
 *
 * The property, for every response: never a 5xx, every error in OpenAI's exact shape without stack-trace text
 * (a field's 400 names it in `param`), and no answer (nor log line) holds a secret or a SHA-256, except the
 * `token` of the answer that issues or rotates it. Afterwards nothing was logged as an error, and the gateway
 * still issues a token that works at once.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { parseConfigText } from "../../lib/config/load.ts";
import type { GatewayState } from "../../lib/http/context.ts";
import type { Logger, LogValue } from "../../lib/log.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { createGateway } from "../../lib/server.ts";
import { createTokenDirectory } from "../../lib/tokens/directory.ts";
import { createMemoryTokenStore } from "../../lib/tokens/store_memory.ts";
import { createSqliteStore } from "../../lib/usage/sqlite_store.ts";
import { type FuzzTokens, headersOf } from "../helpers/fuzz_headers.ts";
import {
  type AdminRequest,
  AUD,
  auditQuery,
  createRequestArb,
  CURSOR,
  explainQuery,
  FUZZ_MAX_BODY,
  getRequestArb,
  ID,
  idPathRequestArb,
  NAME_POOL,
  patchRequestArb,
  rotateRequestArb,
  tokensQuery,
  usageQuery,
} from "../helpers/fuzz_admin.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { rawExchange } from "../helpers/raw_http.ts";

const SEED = 20_261_124;
/** In-process runs per property; the whole file stays within about 30 s. */
const RUNS = 10_000;
const ADMIN_TOKEN = "gw-admin-token-fuzz-admin-0123456789";
const FILE_TOKEN = "gw-file-token-fuzz-admin-0123456789ab";
const TOKENS: FuzzTokens = { client: TEST_TOKEN, limited: FILE_TOKEN, admin: ADMIN_TOKEN };
/** Secrets of the config file: never in an answer. */
const FIXED_SECRETS = [ADMIN_TOKEN, FILE_TOKEN, TEST_TOKEN];

const CONFIG = `
server:
  host: 127.0.0.1
  port: 0
  max_body_size: ${FUZZ_MAX_BODY}b
  connections: { body_timeout: 500ms }
providers:
  local: { type: builtin }
models:
  chat-priced:
    type: chat
    targets: [ { provider: local, model: echo, price: { input: 1, output: 2 } } ]
    content_rules: [ { name: no-secrets, pattern: "secret-[0-9]+", action: redact } ]
  chat-free: { type: chat, targets: [ { provider: local, model: echo } ], limits: { rpm: 1000000 } }
  embed-local: { type: embedding, targets: [ { provider: local, model: hash } ] }
${TEST_TOKENS_YAML}  - name: fuzz-file
    environment: prod
    sha256: ${hashToken(FILE_TOKEN)}
    models: ["chat-*"]
    limits: { rpm: 100000, concurrent: 4 }
    budget: { tokens: 1000000000, period: day }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN_TOKEN)} }
`;

const decoder = new TextDecoder();

/** A frame of a stack trace or a source location: never part of an answer. */
const STACK = /\n\s+at |file:\/\/|\/lib\/\w+\/\w+\.ts|\.ts:\d+:\d+/;
/** A SHA-256 in hex: no answer and no log line holds one. */
const HEX64 = /[0-9a-f]{64}/i;
/** A secret as the gateway makes them. */
const SECRET = /gw-[A-Za-z0-9_-]{43}/g;

// --- the gateway under test ---------------------------------------------------------------------------------

/** What a run has seen: ids, audit entry ids and cursors to aim later requests at. */
interface Seen {
  ids: string[];
  auditIds: string[];
  cursors: string[];
}

/** A logger that counts access-log lines, keeps errors, and keeps every line that holds a secret or a hash. */
function checkingLogger() {
  const errors: Record<string, LogValue>[] = [];
  const leaks: string[] = [];
  const counts = { requests: 0 };
  const scan = (msg: string, fields?: Record<string, LogValue>) => {
    const line = JSON.stringify({ msg, ...fields });
    if (HEX64.test(line) || new RegExp(SECRET.source).test(line)) leaks.push(line.slice(0, 300));
  };
  const logger: Logger = {
    info: (msg, fields) => {
      scan(msg, fields);
      if (msg === "request") counts.requests++;
    },
    warn: (msg, fields) => scan(msg, fields),
    error: (msg, fields) => {
      scan(msg, fields);
      errors.push({ msg, ...fields });
    },
  };
  return { logger, errors, leaks, counts };
}

type Handler = (request: Request) => Promise<Response>;

/** The in-process gateway: the memory token store, and an in-memory usage database fed by its own requests. */
function inProcessGateway() {
  const result = parseConfigText(CONFIG, { source: "<admin-fuzz>", env: {} });
  if (!result.ok) throw new Error(`fuzz config invalid: ${JSON.stringify(result.issues)}`);
  assert.equal(result.config.server.max_body_size, FUZZ_MAX_BODY);
  const state: GatewayState = { config: result.config, providers: createProviders(result.config.providers) };
  const { logger, errors, leaks, counts } = checkingLogger();
  const directory = createTokenDirectory({ store: createMemoryTokenStore(), logger, pollMs: 60_000 });
  const usage = createSqliteStore(":memory:");
  const handler: Handler = createGateway({
    state: () => state,
    logger,
    services: {
      tokens: directory,
      usage: { write: (record) => void usage.insert([record]) },
      usageStore: {
        flush: () => Promise.resolve(),
        query: (q) => usage.query(q),
        listRecords: (q) => usage.listRecords(q),
      },
    },
  });
  const seen: Seen = { ids: [], auditIds: [], cursors: [] };
  return {
    handler,
    errors,
    leaks,
    counts,
    seen,
    close: async () => {
      await directory.close();
      await usage.close();
    },
  };
}

// --- sending and checking -----------------------------------------------------------------------------------

function pick<T>(list: readonly T[], n: number, fallback: T): T {
  return list.length === 0 ? fallback : list[n % list.length];
}

/** The path of `request` with its placeholders filled from what the run has seen. */
function resolvePath(request: AdminRequest, seen: Seen): { path: string; knownId: boolean } {
  const ref = request.id;
  let id = "tok_000000000000000000000000";
  let knownId = false;
  if (ref?.kind === "known" && seen.ids.length > 0) {
    id = `${pick(seen.ids, ref.pick, id)}${ref.suffix}`;
    knownId = ref.suffix === "";
  } else if (ref?.kind === "raw") id = ref.text;
  const n = ref?.kind === "known" ? ref.pick : request.path.length;
  const fill = (text: string, placeholder: string, value: string) =>
    text.replaceAll(placeholder, value).replaceAll(
      encodeURIComponent(placeholder),
      encodeURIComponent(value),
    );
  let path = fill(request.path, ID, id);
  path = fill(path, AUD, pick(seen.auditIds, n, "aud_000000000000000000000000"));
  path = fill(path, CURSOR, pick(seen.cursors, n, "WyIiLCIiXQ"));
  return { path, knownId };
}

function describe(request: AdminRequest, path: string, headers: Headers): string {
  const body = request.body === undefined ? "" : decoder.decode(request.body.subarray(0, 400));
  return `${request.method} ${path.slice(0, 300)} ${JSON.stringify([...headers])} ${body}`;
}

/** Whether `path` (no query) is the rotate route or the issue route, whose answers carry a secret. */
function issuing(method: string, path: string, status: number): boolean {
  const bare = path.split("?")[0];
  if (method === "POST" && bare === "/admin/tokens") return status === 201;
  return method === "POST" && /^\/admin\/tokens\/[^/]+\/rotate$/.test(bare) && status === 200;
}

const ERROR_KEYS = ["code", "message", "param", "type"];

/**
 * Checks one answer against the property, and notes what it shows (issued ids, audit ids, cursors) for the
 * requests that follow.
 */
async function checkResponse(
  request: AdminRequest,
  path: string,
  knownId: boolean,
  headers: Headers,
  response: Response,
  seen: Seen,
): Promise<void> {
  const text = await response.text();
  const label = () => `${response.status} ${text.slice(0, 300)} for ${describe(request, path, headers)}`;
  assert.ok(response.status < 500, label());
  // A body is read once the route is found (PATCH: once the token is), so an expectation holds for a known id.
  const expect = request.expect;
  if (expect !== undefined && (request.id === undefined || knownId)) {
    assert.equal(response.status, expect.status, label());
    assert.equal(JSON.parse(text).error.code, expect.code, label());
  }
  assert.ok(response.headers.get("x-request-id"), `no x-request-id: ${label()}`);
  assert.doesNotMatch(text, HEX64, `an answer holds a hash: ${label()}`);
  for (const secret of FIXED_SECRETS) assert.ok(!text.includes(secret), `a config secret leaked: ${label()}`);
  const secrets = text.match(SECRET) ?? [];
  if (request.method === "HEAD") return;
  if (response.status >= 400) {
    assert.deepEqual(secrets, [], `an error holds a secret: ${label()}`);
    assert.match(response.headers.get("content-type") ?? "", /^application\/json\b/, label());
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text);
    } catch {
      assert.fail(`the error body is not JSON: ${label()}`);
    }
    assert.deepEqual(Object.keys(body), ["error"], label());
    const error = body.error as Record<string, unknown>;
    assert.deepEqual(Object.keys(error).sort(), ERROR_KEYS, label());
    assert.ok(typeof error.message === "string" && error.message.length > 0, label());
    assert.ok(typeof error.type === "string" && error.type.length > 0, label());
    assert.ok(error.param === null || typeof error.param === "string", label());
    assert.ok(error.code === null || typeof error.code === "string", label());
    // A field's 400 names it (an unknown field named "" is named "").
    if (error.code === "invalid_value") assert.equal(typeof error.param, "string", `no param: ${label()}`);
    assert.doesNotMatch(text, STACK, label());
    return;
  }
  const body = JSON.parse(text) as Record<string, unknown>;
  if (issuing(request.method, path, response.status)) {
    assert.equal(secrets.length, 1, `one secret, in 'token': ${label()}`);
    assert.equal(body.token, secrets[0], label());
    assert.equal(response.headers.get("cache-control"), "no-store", label());
    if (response.status === 201) seen.ids.push(String(body.id));
  } else {
    assert.deepEqual(secrets, [], `a secret outside its one answer: ${label()}`);
    assert.equal(body.token === undefined || typeof body.token === "object", true, label());
  }
  if (body.object === "list" && Array.isArray(body.data)) {
    for (const item of body.data as Record<string, unknown>[]) {
      if (item.object === "gateway.audit_entry" && seen.auditIds.length < 500) {
        seen.auditIds.push(String(item.id));
      }
    }
    if (typeof body.next_cursor === "string" && seen.cursors.length < 100) {
      seen.cursors.push(body.next_cursor);
    }
  }
}

/** Sends one generated request in-process and checks it; null when fetch itself would refuse to send it. */
async function exercise(handler: Handler, generated: AdminRequest, seen: Seen): Promise<number | null> {
  const headers = headersOf(generated.spec, generated.body);
  if (headers === null) return null;
  const { path, knownId } = resolvePath(generated, seen);
  let request: Request;
  try {
    request = new Request(`http://gateway.test${path}`, {
      method: generated.method,
      headers,
      body: generated.body,
    });
  } catch {
    return null;
  }
  const response = await handler(request);
  await checkResponse(generated, path, knownId, headers, response, seen);
  return response.status;
}

/** Issues `count` tokens from the name pool, and sends chat requests with the config's token, to aim at. */
async function seed(gw: ReturnType<typeof inProcessGateway>, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const response = await gw.handler(
      new Request("http://gateway.test/admin/tokens", {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({
          name: `fuzz-${NAME_POOL - 1 - i}`,
          models: [i % 2 === 0 ? "chat-*" : "chat-priced"],
          limits: i % 3 === 0 ? { rpm: 10, concurrent: 1 } : undefined,
          budget: i % 4 === 1 ? { cost: 1, period: "month" } : undefined,
        }),
      }),
    );
    const body = await response.json();
    assert.equal(response.status, 201, JSON.stringify(body));
    gw.seen.ids.push(body.id);
  }
  for (let i = 0; i < 30; i++) {
    const response = await gw.handler(
      new Request("http://gateway.test/v1/chat/completions", {
        method: "POST",
        headers: {
          authorization: `Bearer ${i % 2 ? TEST_TOKEN : FILE_TOKEN}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({
          model: i % 3 ? "chat-free" : "chat-priced",
          messages: [{ role: "user", content: "hi" }],
        }),
      }),
    );
    await response.body?.cancel();
  }
  // Audit entry ids and request log cursors to aim `after` and `before` at.
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const audit = await gw.handler(new Request("http://gateway.test/admin/audit", { headers: admin }));
  gw.seen.auditIds.push(...(await audit.json()).data.map((e: { id: string }) => e.id));
  let cursor: string | null = null;
  do {
    const query: string = cursor === null ? "" : `&before=${cursor}`;
    const page = await gw.handler(
      new Request(`http://gateway.test/admin/requests?limit=4${query}`, { headers: admin }),
    );
    cursor = (await page.json()).next_cursor;
    if (cursor !== null) gw.seen.cursors.push(cursor);
  } while (cursor !== null);
  assert.ok(gw.seen.auditIds.length >= count && gw.seen.cursors.length >= 5);
}

type Send = (path: string, init: RequestInit) => Promise<Response>;

/** Still serving: a token issued now works at once, and the list answers. */
async function assertStillServing(send: Send): Promise<void> {
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };
  const issued = await send("/admin/tokens", {
    method: "POST",
    headers: admin,
    body: JSON.stringify({ name: "after-the-fuzz", models: ["chat-free"] }),
  });
  const token = await issued.json();
  assert.equal(issued.status, 201, JSON.stringify(token));
  const chat = await send("/v1/chat/completions", {
    method: "POST",
    headers: { authorization: `Bearer ${token.token}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat-free", messages: [{ role: "user", content: "still here?" }] }),
  });
  assert.equal(chat.status, 200, await chat.clone().text());
  assert.equal((await chat.json()).choices[0].message.content, "still here?");
  const list = await send("/admin/tokens?q=after-the-fuzz", { headers: admin });
  assert.equal(list.status, 200);
  assert.deepEqual((await list.json()).data.map((t: { name: string }) => t.name), ["after-the-fuzz"]);
}

/**
 * Runs `runs` generated requests in-process (after seeding tokens and usage). Afterwards nothing was logged as
 * an error, each request has its access-log line, each of `reached` was answered at least 20 times (so the
 * property is not vacuous), and the gateway still serves.
 */
async function fuzzInProcess(
  arbitrary: fc.Arbitrary<AdminRequest>,
  reached: number[],
  runs = RUNS,
): Promise<Map<number, number>> {
  const gw = inProcessGateway();
  const statuses = new Map<number, number>();
  let sent = 0;
  try {
    await seed(gw, 20);
    const before = gw.counts.requests;
    await fc.assert(
      fc.asyncProperty(arbitrary, async (request) => {
        const status = await exercise(gw.handler, request, gw.seen);
        if (status === null) return;
        sent++;
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }),
      { seed: SEED, numRuns: runs, endOnFailure: true },
    );
    assert.ok(sent >= runs * 0.98, `only ${sent} of ${runs} generated requests could be sent`);
    const seenStatuses = JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)));
    for (const status of reached) {
      assert.ok((statuses.get(status) ?? 0) >= 20, `status ${status} is rare: ${seenStatuses}`);
    }
    assert.deepEqual(gw.errors, [], "no request is a gateway bug (errors were logged)");
    assert.deepEqual(gw.leaks, [], "no log line holds a secret or a hash");
    assert.equal(gw.counts.requests - before, sent, "one access-log line per request");
    await assertStillServing((path, init) => gw.handler(new Request(`http://gateway.test${path}`, init)));
  } finally {
    await gw.close();
  }
  return statuses;
}

// --- in-process ---------------------------------------------------------------------------------------------

Deno.test("admin fuzz: POST /admin/tokens, generated bodies in-process", async () => {
  await fuzzInProcess(createRequestArb(TOKENS), [201, 400, 401, 409, 413, 415]);
});

Deno.test("admin fuzz: PATCH /admin/tokens/{id}, generated bodies in-process", async () => {
  await fuzzInProcess(patchRequestArb(TOKENS), [200, 400, 401, 404, 413, 415]);
});

Deno.test("admin fuzz: POST /admin/tokens/{id}/rotate, generated bodies in-process", async () => {
  await fuzzInProcess(rotateRequestArb(TOKENS), [200, 400, 401, 404, 413, 415]);
});

Deno.test("admin fuzz: GET /admin/tokens, /admin/audit and /admin/explain with generated queries", async () => {
  await fuzzInProcess(
    fc.oneof(
      getRequestArb("/admin/tokens", tokensQuery, TOKENS, ["GET", "GET", "GET", "HEAD", "PUT"]),
      getRequestArb("/admin/audit", auditQuery, TOKENS),
      getRequestArb("/admin/explain", explainQuery, TOKENS),
    ),
    [200, 400, 401, 404, 405],
  );
});

Deno.test("admin fuzz: GET /admin/requests and /admin/usage with generated queries", async () => {
  await fuzzInProcess(
    fc.oneof(
      getRequestArb("/admin/requests", usageQuery, TOKENS),
      getRequestArb("/admin/usage", usageQuery, TOKENS),
    ),
    [200, 400, 401, 405],
  );
});

Deno.test("admin fuzz: odd token ids in paths, every method", async () => {
  await fuzzInProcess(idPathRequestArb(TOKENS), [200, 400, 401, 404, 405, 409]);
});

// --- over a real socket -------------------------------------------------------------------------------------

Deno.test("admin fuzz: a socket-level sample over the SQLite token store, and the server is alive after", async () => {
  const gw = await startGateway(CONFIG);
  const port = Number(new URL(gw.url).port);
  const seen: Seen = { ids: [], auditIds: [], cursors: [] };
  try {
    const samples = [
      ...fc.sample(createRequestArb(TOKENS), { seed: SEED, numRuns: 150 }),
      ...fc.sample(patchRequestArb(TOKENS), { seed: SEED + 1, numRuns: 80 }),
      ...fc.sample(rotateRequestArb(TOKENS), { seed: SEED + 2, numRuns: 80 }),
      ...fc.sample(idPathRequestArb(TOKENS), { seed: SEED + 3, numRuns: 80 }),
      ...fc.sample(getRequestArb("/admin/audit", auditQuery, TOKENS), { seed: SEED + 4, numRuns: 40 }),
      ...fc.sample(getRequestArb("/admin/explain", explainQuery, TOKENS), { seed: SEED + 5, numRuns: 40 }),
      ...fc.sample(getRequestArb("/admin/tokens", tokensQuery, TOKENS), { seed: SEED + 6, numRuns: 40 }),
      ...fc.sample(getRequestArb("/admin/requests", usageQuery, TOKENS), { seed: SEED + 7, numRuns: 40 }),
    ];
    let sent = 0;
    for (const generated of samples) {
      // fetch sets Content-Length itself; requests go one at a time, so ids issued earlier can be aimed at.
      const request = { ...generated, spec: { ...generated.spec, contentLength: "none" } };
      const headers = headersOf(request.spec, request.body);
      if (headers === null) continue;
      const { path, knownId } = resolvePath(request, seen);
      let response: Response;
      try {
        response = await fetch(`${gw.url}${path}`, { method: request.method, headers, body: request.body });
      } catch (err) {
        if (err instanceof TypeError && /header|byte|method|URL/i.test(err.message)) continue; // refused by fetch
        throw err;
      }
      sent++;
      await checkResponse(request, path, knownId, headers, response, seen);
    }
    assert.ok(sent >= samples.length * 0.95, `only ${sent} of ${samples.length} sent`);
    assert.ok(seen.ids.length >= 10, `only ${seen.ids.length} tokens issued`);

    // What fetch would normalize away, as a client on a raw socket sends it.
    const admin = `authorization: Bearer ${ADMIN_TOKEN}\r\n`;
    const id = seen.ids[0];
    const raw = [
      `GET /admin/tokens/../tokens HTTP/1.1\r\nhost: x\r\n${admin}\r\n`,
      `GET /admin/tokens/%2e%2e HTTP/1.1\r\nhost: x\r\n${admin}\r\n`,
      `GET /admin/tokens/${id}%00 HTTP/1.1\r\nhost: x\r\n${admin}\r\n`,
      `POST /admin/tokens/${id}/../${id}/rotate HTTP/1.1\r\nhost: x\r\n${admin}content-length: 0\r\n\r\n`,
      `GET /admin/tokens/${"a".repeat(20_000)} HTTP/1.1\r\nhost: x\r\n${admin}\r\n`,
      `GET /admin/audit?token=${"%00".repeat(2_000)} HTTP/1.1\r\nhost: x\r\n${admin}\r\n`,
      `PATCH /admin/tokens/${id} HTTP/1.1\r\nhost: x\r\n${admin}content-type: application/json\r\n` +
      `content-length: 100\r\n\r\n{"disabled":`,
    ];
    for (const text of raw) {
      const answer = await rawExchange(port, text, new Uint8Array(), 2_000);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1] ?? 0);
      assert.ok(status === 0 || status < 500, `${text.slice(0, 80)}: ${answer.slice(0, 300)}`);
      assert.doesNotMatch(answer, HEX64);
      // The `..` is resolved before routing, so the rotation happens, and only its answer holds the secret.
      const rotated = text.startsWith("POST") && status === 200;
      assert.equal((answer.match(SECRET) ?? []).length, rotated ? 1 : 0, answer.slice(0, 300));
    }

    const health = await fetch(`${gw.url}/healthz`);
    assert.equal(health.status, 200);
    await health.body?.cancel();
    await assertStillServing((path, init) => fetch(`${gw.url}${path}`, init));
    const errors = gw.logs.filter((l) => l.level === "error");
    assert.deepEqual(errors, []);
    for (const line of gw.logs) {
      const text = JSON.stringify(line);
      assert.doesNotMatch(text, HEX64, `a log line holds a hash: ${text.slice(0, 300)}`);
      assert.doesNotMatch(text, SECRET, `a log line holds a secret: ${text.slice(0, 300)}`);
    }
  } finally {
    await gw.stop();
  }
});

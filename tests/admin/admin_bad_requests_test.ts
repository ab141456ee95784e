/**
 * A table of bad requests to the admin API (as `bad_requests_test.ts` has for `/v1`), run in-process over the
 * memory token store and again over a real socket (the SQLite token store): the token routes with invalid
 * JSON, a body that is not an object, one over `server.max_body_size`, JSON nested past `max_json_depth`, a
 * wrong content type, an empty body, bad fields; the admin reads with bad query parameters. Each gets its
 * status, code and `param` in OpenAI's exact error shape, no stack trace and no secret, and the gateway keeps
 * serving. A rotation's body is optional: without one (however it is framed) it rotates.
 *
 * Then the same NUL-bearing inputs against PostgreSQL, whose text cannot hold NUL: they must be the admin's
 * 400, not a 503 that resets the pool (which, repeated, took the process down).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { parseConfigText } from "../../lib/config/load.ts";
import type { GatewayState } from "../../lib/http/context.ts";
import { createMemoryLogger } from "../../lib/log.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { createGateway } from "../../lib/server.ts";
import { createTokenDirectory } from "../../lib/tokens/directory.ts";
import { createMemoryTokenStore } from "../../lib/tokens/store_memory.ts";
import { openPostgresStore } from "../../lib/usage/postgres_store.ts";
import { createSqliteStore } from "../../lib/usage/sqlite_store.ts";
import { dropSchema, randomSchema, TEST_DATABASE_URL } from "../helpers/postgres.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { assertErrorResponse as assertErrorShape, type BadCase, requestInit } from "../helpers/bad_cases.ts";

/** The body limit every case runs under, so oversized bodies stay small. */
const LIMIT = 1000;
const ADMIN_TOKEN = "gw-admin-token-bad-requests-0123456789";

const CONFIG = `
server: { host: 127.0.0.1, port: 0, max_body_size: 1kb }
providers:
  local: { type: builtin }
models:
  chat-priced:
    type: chat
    targets: [ { provider: local, model: echo, price: { input: 1, output: 2 } } ]
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  embed-local: { type: embedding, targets: [ { provider: local, model: hash } ] }
${TEST_TOKENS_YAML}
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN_TOKEN)} }
`;

const encoder = new TextEncoder();
const BAD = "invalid_request_error";
/** Where a case's path takes the id of a token issued for the run. */
const ID = "{id}";
const TOKENS = "/admin/tokens";
const TOKEN = `/admin/tokens/${ID}`;
const ROTATE = `/admin/tokens/${ID}/rotate`;

const json = (value: unknown) => JSON.stringify(value);
const issue = (extra: Record<string, unknown>) => json({ name: "bad-case", models: ["chat-echo"], ...extra });
const deep = (depth: number) => `{"description":${"[".repeat(depth)}${"]".repeat(depth)}}`;
const nulCursor = btoa(json(["\u0000", "x"])).replace(/=+$/, "");
/** A cursor of the request log's form (base64url of `[time, uid]`) holding `position`. */
const cursorOf = (position: [string, string]) =>
  btoa(json(position)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

/** The mistakes every body route answers alike. */
function bodyCases(label: string, method: string, path: string, object: string): BadCase[] {
  const at = (name: string) => `${label}: ${name}`;
  return [
    {
      name: at("malformed JSON"),
      method,
      path,
      body: "{name: x}",
      status: 400,
      type: BAD,
      code: null,
      param: null,
    },
    {
      name: at("truncated JSON"),
      method,
      path,
      body: object.slice(0, -2),
      status: 400,
      type: BAD,
      code: null,
      param: null,
    },
    {
      name: at("an array body"),
      method,
      path,
      body: `[${object}]`,
      status: 400,
      type: BAD,
      code: null,
      param: null,
    },
    { name: at("a string body"), method, path, body: '"x"', status: 400, type: BAD, code: null, param: null },
    { name: at("a null body"), method, path, body: "null", status: 400, type: BAD, code: null, param: null },
    {
      name: at("invalid UTF-8"),
      method,
      path,
      body: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
      status: 400,
      type: BAD,
      code: null,
      param: null,
    },
    {
      name: at("a body over max_body_size"),
      method,
      path,
      body: json({ description: "x".repeat(LIMIT + 10) }),
      status: 413,
      type: BAD,
      code: "request_too_large",
      param: null,
    },
    {
      name: at("a chunked body over max_body_size"),
      method,
      path,
      body: {
        chunks: [encoder.encode('{"description":"'), encoder.encode("x".repeat(LIMIT)), encoder.encode('"}')],
      },
      status: 413,
      type: BAD,
      code: "request_too_large",
      param: null,
    },
    {
      name: at("JSON deeper than max_json_depth"),
      method,
      path,
      body: deep(64),
      status: 400,
      type: BAD,
      code: "json_too_deep",
      param: null,
    },
    {
      name: at("a text/plain body"),
      method,
      path,
      headers: { "content-type": "text/plain" },
      body: object,
      status: 415,
      type: BAD,
      code: "unsupported_media_type",
      param: null,
    },
    {
      name: at("a multipart body"),
      method,
      path,
      headers: { "content-type": "multipart/form-data; boundary=x" },
      body: object,
      status: 415,
      type: BAD,
      code: "unsupported_media_type",
      param: null,
    },
  ];
}

/** A 400 naming `param`. */
const field = (name: string, method: string, path: string, body: string, param: string): BadCase => ({
  name,
  method,
  path,
  body,
  status: 400,
  type: BAD,
  code: "invalid_value",
  param,
});

const LONG_KEY = `x_${"k".repeat(900)}`;

const CASES: BadCase[] = [
  // --- POST /admin/tokens --------------------------------------------------------------------------------------
  ...bodyCases("issue", "POST", TOKENS, issue({})),
  {
    name: "issue: an empty body",
    method: "POST",
    path: TOKENS,
    body: "",
    status: 400,
    type: BAD,
    code: null,
    param: null,
  },
  {
    name: "issue: no body at all",
    method: "POST",
    path: TOKENS,
    status: 400,
    type: BAD,
    code: null,
    param: null,
  },
  field("issue: no name", "POST", TOKENS, json({ models: ["chat-echo"] }), "name"),
  field("issue: no models", "POST", TOKENS, json({ name: "bad-case" }), "models"),
  field("issue: a name that is a number", "POST", TOKENS, issue({ name: 5 }), "name"),
  field("issue: a name with a space", "POST", TOKENS, issue({ name: "a b" }), "name"),
  field("issue: an unknown field", "POST", TOKENS, issue({ scopes: ["chat"] }), "scopes"),
  field(
    "issue: an unknown field with a 900-character name",
    "POST",
    TOKENS,
    issue({ [LONG_KEY]: 1 }),
    LONG_KEY,
  ),
  field("issue: a sha256", "POST", TOKENS, issue({ sha256: "a".repeat(64) }), "sha256"),
  field("issue: a token", "POST", TOKENS, issue({ token: "gw-mine-0123456789abcdef" }), "token"),
  field("issue: limits.rpm 0", "POST", TOKENS, issue({ limits: { rpm: 0 } }), "limits.rpm"),
  field("issue: limits.tpm past 2^53", "POST", TOKENS, issue({ limits: { tpm: 2 ** 53 + 2 } }), "limits.tpm"),
  field(
    "issue: an alias that does not exist",
    "POST",
    TOKENS,
    issue({ models: ["chat-echo", "gpt-9"] }),
    "models.1",
  ),
  field("issue: no models at all", "POST", TOKENS, issue({ models: [] }), "models"),
  field(
    "issue: an endpoint that does not exist",
    "POST",
    TOKENS,
    issue({ endpoints: ["completions"] }),
    "endpoints.0",
  ),
  field("issue: max_tokens 1.5", "POST", TOKENS, issue({ max_tokens: 1.5 }), "max_tokens"),
  field("issue: expires_at in the past", "POST", TOKENS, issue({ expires_at: "2020-01-01" }), "expires_at"),
  field(
    "issue: expires_at on February 30",
    "POST",
    TOKENS,
    issue({ expires_at: "2099-02-30" }),
    "expires_at",
  ),
  field(
    "issue: expires_at without an offset",
    "POST",
    TOKENS,
    issue({ expires_at: "2099-01-01T00:00:00" }),
    "expires_at",
  ),
  field(
    "issue: a description over 500 characters",
    "POST",
    TOKENS,
    issue({ description: "d".repeat(501) }),
    "description",
  ),
  field(
    "issue: a description holding NUL",
    "POST",
    TOKENS,
    issue({ description: "a\u0000b" }),
    "description",
  ),
  field(
    "issue: an environment holding NUL",
    "POST",
    TOKENS,
    issue({ environment: "prod\u0000" }),
    "environment",
  ),
  field(
    "issue: a budget in tokens and cost",
    "POST",
    TOKENS,
    issue({ budget: { tokens: 5, cost: 1, period: "day" } }),
    "budget",
  ),
  field(
    "issue: a cost budget on an unpriced alias",
    "POST",
    TOKENS,
    issue({ budget: { cost: 1, period: "day" } }),
    "budget.cost",
  ),
  field("issue: disabled as a string", "POST", TOKENS, issue({ disabled: "false" }), "disabled"),
  {
    name: "issue: the name of a config token",
    method: "POST",
    path: TOKENS,
    body: issue({ name: "test-all" }),
    status: 409,
    type: BAD,
    code: "token_name_taken",
    param: null,
  },

  // --- PATCH /admin/tokens/{id} ---------------------------------------------------------------------------------
  ...bodyCases("change", "PATCH", TOKEN, json({ disabled: true })),
  {
    name: "change: an empty body",
    method: "PATCH",
    path: TOKEN,
    body: "",
    status: 400,
    type: BAD,
    code: null,
    param: null,
  },
  field("change: the name", "PATCH", TOKEN, json({ name: "other" }), "name"),
  field("change: an unknown field", "PATCH", TOKEN, json({ owner: "me" }), "owner"),
  field("change: limits.tpm -1", "PATCH", TOKEN, json({ limits: { tpm: -1 } }), "limits.tpm"),
  field(
    "change: expires_at in the past",
    "PATCH",
    TOKEN,
    json({ expires_at: "1970-01-01T00:00:00Z" }),
    "expires_at",
  ),
  field("change: a description holding NUL", "PATCH", TOKEN, json({ description: "\u0000" }), "description"),
  field("change: models null", "PATCH", TOKEN, json({ models: null }), "models"),
  {
    name: "change: an unknown id",
    method: "PATCH",
    path: "/admin/tokens/tok_000000000000000000000000",
    body: json({ disabled: true }),
    status: 404,
    type: BAD,
    code: "token_not_found",
    param: "id",
  },
  {
    name: "change: a config token",
    method: "PATCH",
    path: "/admin/tokens/cfg_test-all",
    body: json({ disabled: true }),
    status: 409,
    type: BAD,
    code: "token_read_only",
    param: null,
  },

  // --- POST /admin/tokens/{id}/rotate ---------------------------------------------------------------------------
  ...bodyCases("rotate", "POST", ROTATE, json({ grace: "60s" })),
  field("rotate: grace over 30 days", "POST", ROTATE, json({ grace: "31d" }), "grace"),
  field("rotate: grace -1", "POST", ROTATE, json({ grace: -1 }), "grace"),
  field("rotate: grace in weeks", "POST", ROTATE, json({ grace: "1w" }), "grace"),
  field("rotate: grace as a fraction of a millisecond", "POST", ROTATE, json({ grace: 0.5 }), "grace"),
  field("rotate: an unknown field", "POST", ROTATE, json({ grace: "1s", reason: "leak" }), "reason"),
  {
    name: "rotate: an unknown id",
    method: "POST",
    path: "/admin/tokens/tok_000000000000000000000000/rotate",
    status: 404,
    type: BAD,
    code: "token_not_found",
    param: "id",
  },
  {
    name: "rotate: a config token",
    method: "POST",
    path: "/admin/tokens/cfg_test-all/rotate",
    status: 409,
    type: BAD,
    code: "token_read_only",
    param: null,
  },

  // --- methods and credentials ----------------------------------------------------------------------------------
  {
    name: "PUT /admin/tokens",
    method: "PUT",
    path: TOKENS,
    body: issue({}),
    status: 405,
    type: BAD,
    code: "method_not_allowed",
    param: null,
  },
  {
    name: "issue: a client token",
    method: "POST",
    path: TOKENS,
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
    body: issue({}),
    status: 401,
    type: BAD,
    code: "invalid_api_key",
    param: null,
  },
  {
    name: "issue: no token",
    method: "POST",
    path: TOKENS,
    headers: { authorization: null },
    body: issue({}),
    status: 401,
    type: BAD,
    code: null,
    param: null,
  },

  // --- POST /admin/teams ---------------------------------------------------------------------------------------
  ...bodyCases("team", "POST", "/admin/teams", json({ name: "bad-team" })),
  field("team: a name with a space", "POST", "/admin/teams", json({ name: "a b" }), "name"),
  field("team: NUL in the name", "POST", "/admin/teams", json({ name: "a\u0000" }), "name"),
  field(
    "team: NUL in the description",
    "POST",
    "/admin/teams",
    json({ name: "t", description: "\u0000" }),
    "description",
  ),
  field("team: rpm 0", "POST", "/admin/teams", json({ name: "t", limits: { rpm: 0 } }), "limits.rpm"),
  field("team: an unknown alias", "POST", "/admin/teams", json({ name: "t", models: ["gpt-9"] }), "models.0"),
  field("team: an unknown field", "POST", "/admin/teams", json({ name: "t", owner: "me" }), "owner"),

  // --- the reads' query parameters ------------------------------------------------------------------------------
  ...(
    [
      ["/admin/tokens?limit=0", "limit"],
      ["/admin/tokens?limit=1001", "limit"],
      ["/admin/tokens?status=gone", "status"],
      ["/admin/tokens?source=file", "source"],
      ["/admin/tokens?after=tok_000000000000000000000000", "after"],
      ["/admin/audit?after=aud_1", "after"],
      // Well-formed but naming no entry: a 400 as for a token cursor, never an empty last page.
      ["/admin/audit?after=aud_000000000000000000000000", "after"],
      ["/admin/audit?action=destroy", "action"],
      ["/admin/audit?from=yesterday", "from"],
      ["/admin/audit?limit=-1", "limit"],
      ["/admin/audit?token=%00", "token"],
      ["/admin/audit?actor=ops%00", "actor"],
      ["/admin/explain?model=chat-echo", "token"],
      ["/admin/explain?token=test-all", "model"],
      ["/admin/explain?token=test-all&model=chat-echo&endpoint=models", "endpoint"],
      ["/admin/requests?status=6xx", "status"],
      ["/admin/requests?limit=0", "limit"],
      ["/admin/requests?before=not-a-cursor", "before"],
      [`/admin/requests?before=${nulCursor}`, "before"],
      // Cursors the gateway never issued: times that are no record's.
      [`/admin/requests?before=${cursorOf(["not a time", "x"])}`, "before"],
      [`/admin/requests?before=${cursorOf(["zzzz", ""])}`, "before"],
      [`/admin/requests?before=${cursorOf(["2026-11-30T00:00:00Z", "x"])}`, "before"],
      // Dates Date.parse would take: words, a day the month lacks, a six-digit year (which sorts wrongly).
      ["/admin/usage?from=%2B010000-01-01", "from"],
      ["/admin/requests?to=%2B010000-01-01", "to"],
      ["/admin/usage?from=foo%201", "from"],
      ["/admin/requests?to=hello%2099", "to"],
      ["/admin/usage?from=2026-02-30", "from"],
      ["/admin/audit?to=2026-11-30T24:00:00Z", "to"],
      ["/admin/requests?environment=%00", "environment"],
      ["/admin/requests?to=%00", "to"],
      ["/admin/usage?group_by=week", "group_by"],
      ["/admin/usage?alias=chat%00", "alias"],
      ["/admin/usage?rule=a,b", "rule"],
      ["/admin/usage?rule=%00", "rule"],
      ["/admin/usage?outcome=maybe", "outcome"],
      // A grouped report is a bounded page: 1–10000 groups, from a whole offset.
      ["/admin/usage?group_by=minute&limit=0", "limit"],
      ["/admin/usage?group_by=minute&limit=10001", "limit"],
      ["/admin/usage?group_by=minute&offset=-1", "offset"],
    ] as const
  ).map(([path, param]): BadCase => ({
    name: `GET ${path}`,
    method: "GET",
    path,
    status: 400,
    type: BAD,
    code: "invalid_value",
    param,
  })),
  {
    name: "GET /admin/explain for an unknown token",
    method: "GET",
    path: "/admin/explain?token=nobody&model=chat-echo",
    status: 404,
    type: BAD,
    code: "token_not_found",
    param: "token",
  },
  {
    name: "GET /admin/explain for an unknown alias",
    method: "GET",
    path: "/admin/explain?token=test-all&model=gpt-9",
    status: 404,
    type: BAD,
    code: "model_not_found",
    param: "model",
  },
  {
    name: "GET /admin/tokens/{id} with an id of 3,000 characters",
    method: "GET",
    path: `/admin/tokens/${"x".repeat(3_000)}`,
    status: 404,
    type: BAD,
    code: "token_not_found",
    param: "id",
  },
  {
    name: "GET /admin/tokens/{id} with NUL in the id",
    method: "GET",
    path: `/admin/tokens/${ID}%00`,
    status: 404,
    type: BAD,
    code: "token_not_found",
    param: "id",
  },
];

/** The request of `c` for the token `id`; `wire` means fetch sends it, which sets Content-Length itself. */
function requestOf(
  c: BadCase,
  id: string,
  wire: boolean,
): { path: string; init: RequestInit & { duplex?: "half" } } {
  return { path: c.path.replace(ID, id), init: requestInit(c, `Bearer ${ADMIN_TOKEN}`, wire) };
}

/** What every error answer must satisfy, and here: a bounded message, and no secret of any token. */
async function assertErrorResponse(c: BadCase, response: Response): Promise<void> {
  const label = `case "${c.name}"`;
  const { text, message } = await assertErrorShape(c, response, [ADMIN_TOKEN, TEST_TOKEN]);
  assert.ok(
    message.length < 600,
    `${label}: the message echoes unbounded input (${message.length} characters)`,
  );
  assert.doesNotMatch(text, /gw-[A-Za-z0-9_-]{43}/, `${label}: a secret leaked`);
}

type Send = (path: string, init: RequestInit & { duplex?: "half" }) => Promise<Response>;

/** Issues the token the cases aim at; returns its id. */
async function issueTarget(send: Send): Promise<string> {
  const response = await send(TOKENS, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: json({ name: "target", models: ["chat-*"], budget: { tokens: 100, period: "day" } }),
  });
  const body = await response.json();
  assert.equal(response.status, 201, JSON.stringify(body));
  return body.id;
}

/** A rotation's body is optional: no body, an empty one (by length or by chunks) or `{}` all rotate. */
async function assertRotateWithoutBody(send: Send, id: string, wire: boolean): Promise<void> {
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const inits: [string, RequestInit & { duplex?: "half" }][] = [
    ["no body", { method: "POST", headers: admin }],
    // fetch sets Content-Length: 0 itself; in-process it is set by hand, as a socket request would carry it.
    [
      "an empty body",
      {
        method: "POST",
        headers: wire ? admin : { ...admin, "content-length": "0" },
        body: new Uint8Array(0),
      },
    ],
    [
      "an empty chunked body",
      {
        method: "POST",
        headers: { ...admin, "content-type": "application/json" },
        body: new ReadableStream<Uint8Array>({ start: (c) => c.close() }),
        duplex: "half",
      },
    ],
    ["{}", {
      method: "POST",
      headers: { ...admin, "content-type": "application/json" },
      body: encoder.encode("{}"),
    }],
  ];
  for (const [name, init] of inits) {
    const response = await send(`/admin/tokens/${id}/rotate`, init);
    const body = await response.json();
    assert.equal(response.status, 200, `${name}: ${JSON.stringify(body)}`);
    assert.match(body.token, /^gw-[A-Za-z0-9_-]{43}$/, name);
    assert.equal(
      body.previous_expires_at,
      body.rotated_at,
      `${name}: no grace, the old secret stops at once`,
    );
  }
  const chunked = await send(`/admin/tokens/${id}/rotate`, {
    method: "POST",
    headers: { ...admin, "content-type": "application/json" },
    body: new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(encoder.encode('{"grace":'));
        c.enqueue(encoder.encode('"1h"}'));
        c.close();
      },
    }),
    duplex: "half",
  } as RequestInit);
  const rotated = await chunked.json();
  assert.equal(chunked.status, 200, JSON.stringify(rotated));
  assert.equal(
    Date.parse(rotated.previous_expires_at) - Date.parse(rotated.rotated_at),
    3_600_000,
    "a chunked grace",
  );
}

/** Still serving: the list answers, and a token issued now works at once. */
async function assertStillServing(send: Send): Promise<void> {
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };
  const list = await send("/admin/tokens", { headers: admin });
  assert.equal(list.status, 200);
  await list.body?.cancel();
  const issued = await send(TOKENS, {
    method: "POST",
    headers: admin,
    body: json({ name: "after", models: ["chat-echo"] }),
  });
  const token = await issued.json();
  assert.equal(issued.status, 201, JSON.stringify(token));
  const chat = await send("/v1/chat/completions", {
    method: "POST",
    headers: { authorization: `Bearer ${token.token}`, "content-type": "application/json" },
    body: json({ model: "chat-echo", messages: [{ role: "user", content: "still alive?" }] }),
  });
  assert.equal(chat.status, 200);
  assert.equal((await chat.json()).choices[0].message.content, "still alive?");
}

function inProcess() {
  const result = parseConfigText(CONFIG, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(`test config invalid: ${JSON.stringify(result.issues)}`);
  assert.equal(result.config.server.max_body_size, LIMIT);
  const state: GatewayState = { config: result.config, providers: createProviders(result.config.providers) };
  const logger = createMemoryLogger();
  const tokens = createTokenDirectory({ store: createMemoryTokenStore(), logger, pollMs: 60_000 });
  const usage = createSqliteStore(":memory:");
  const handler = createGateway({
    state: () => state,
    logger,
    services: {
      tokens,
      usageStore: {
        flush: () => Promise.resolve(),
        query: (q) => usage.query(q),
        listRecords: (q) => usage.listRecords(q),
      },
    },
  });
  const send: Send = (path, init) => handler(new Request(`http://gateway.test${path}`, init));
  return {
    send,
    logger,
    close: async () => {
      await tokens.close();
      await usage.close();
    },
  };
}

Deno.test("admin bad requests: the table has enough distinct cases", () => {
  assert.ok(CASES.length >= 80, `only ${CASES.length} cases`);
  assert.equal(new Set(CASES.map((c) => c.name)).size, CASES.length, "case names are unique");
});

Deno.test("admin bad requests: in-process, every case gets its status, code and param", async (t) => {
  const { send, logger, close } = inProcess();
  try {
    const id = await issueTarget(send);
    for (const c of CASES) {
      await t.step(c.name, async () => {
        const { path, init } = requestOf(c, id, false);
        await assertErrorResponse(c, await send(path, init));
      });
    }
    await assertRotateWithoutBody(send, id, false);
    await assertStillServing(send);
    const access = logger.lines.filter((l) => l.msg === "request").map((l) => l.status);
    assert.deepEqual(
      access.slice(1, CASES.length + 1),
      CASES.map((c) => c.status),
      "one access-log line each",
    );
    assert.deepEqual(logger.lines.filter((l) => l.level === "error"), [], "no bad request is a gateway bug");
    for (const line of logger.lines) {
      assert.doesNotMatch(
        JSON.stringify(line),
        /gw-[A-Za-z0-9_-]{43}|[0-9a-f]{64}/,
        "no secret or hash logged",
      );
    }
  } finally {
    await close();
  }
});

Deno.test("admin bad requests: over a real socket, every case gets its status, code and param", async (t) => {
  const gw = await startGateway(CONFIG);
  const send: Send = (path, init) => fetch(`${gw.url}${path}`, init);
  try {
    const id = await issueTarget(send);
    for (const c of CASES) {
      await t.step(c.name, async () => {
        const { path, init } = requestOf(c, id, true);
        await assertErrorResponse(c, await send(path, init));
      });
    }
    await assertRotateWithoutBody(send, id, true);
    await assertStillServing(send);
    assert.deepEqual(gw.logs.filter((l) => l.level === "error"), []);
  } finally {
    await gw.stop();
  }
});

/** Whether a missing PostgreSQL may skip the test: only off CI. */
const MAY_SKIP = Deno.env.get("CI") === undefined;

Deno.test("admin bad requests: NUL in a token field or a filter is a 400 on PostgreSQL, not a 503", async (t) => {
  const schema = randomSchema("adminbad");
  let db;
  try {
    db = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
  } catch (err) {
    if (MAY_SKIP) return console.warn(`PostgreSQL unreachable, skipped: ${err}`);
    throw err;
  }
  const result = parseConfigText(CONFIG, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  const state: GatewayState = { config: result.config, providers: createProviders(result.config.providers) };
  const logger = createMemoryLogger();
  const tokens = createTokenDirectory({ store: db.tokens, logger, pollMs: 60_000 });
  const store = db;
  const handler = createGateway({
    state: () => state,
    logger,
    services: {
      tokens,
      usageStore: {
        flush: () => Promise.resolve(),
        query: (q) => store.query(q),
        listRecords: (q) => store.listRecords(q),
      },
    },
  });
  const send: Send = (path, init) => handler(new Request(`http://gateway.test${path}`, init));
  try {
    const id = await issueTarget(send);
    const holdsNul = (c: BadCase) =>
      c.path.includes("%00") || c.path.includes(nulCursor) ||
      (typeof c.body === "string" && c.body.includes("\\u0000"));
    const nul = CASES.filter((c) => holdsNul(c) && c.status === 400);
    assert.ok(nul.length >= 10, `only ${nul.length} NUL cases`);
    // Twice over: a 503 reset the pool each time, and resets in a row crashed the process.
    for (const round of [1, 2]) {
      for (const c of nul) {
        await t.step(`${round}: ${c.name}`, async () => {
          const { path, init } = requestOf(c, id, false);
          await assertErrorResponse(c, await send(path, init));
        });
      }
    }
    await assertStillServing(send);
    const audit = await send(`/admin/audit?token=${id}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(audit.status, 200);
    assert.deepEqual(
      (await audit.json()).data.map((e: { action: string }) => e.action),
      ["create"],
      "nothing changed",
    );
    assert.deepEqual(
      logger.lines.filter((l) => l.level !== "info"),
      [],
      "nothing looked like a database failure",
    );
  } finally {
    await tokens.close();
    await db.close();
    await dropSchema(schema);
  }
});

/**
 * Issue 20, acceptance 1: what a token keeps (stored responses, their items and chains; its limit counters)
 * belongs to the token's identity, not its name. Over a real socket, on SQLite and on PostgreSQL, in-process
 * on Deno or as the binary named by `GATEWAY_BIN`:
 * - a token revoked and its name issued again (same environment, and another) gets 404 for every stored
 *   response, input item, `previous_response_id`, `item_reference`, input-token count and delete of the old
 *   one; the new token's rate limit starts afresh (its own counter, not the revoked one's);
 * - a token disabled and enabled again keeps its data;
 * - a stored token shadowed by a config token of the same name after a reload: the config token gets 404 for
 *   the stored token's data, and keeps its own across reloads; when the config token goes again, the stored
 *   token has its data back and none of the config token's.
 *
 * The PostgreSQL case runs in CI always (its own schema of the shared test database); off CI it skips only
 * when the database cannot be reached.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { dropSchema, postgresOrSkip, randomSchema, TEST_DATABASE_URL } from "../helpers/postgres.ts";

const ADMIN = "gw-ownership-admin-0123456789abcdef";
const FILE_SECRET = "gw-ownership-file-0123456789abcdef";

/** The gateway's config; `fileToken` adds a config token of that name (the reload's clash). */
function config(store: string, fileToken?: string): string {
  return `${store}
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
${
    fileToken === undefined ? "" : `tokens:
  - { name: ${fileToken}, environment: prod, sha256: ${hashToken(FILE_SECRET)}, models: ["*"] }`
  }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`;
}

async function call(
  gw: TestGateway,
  secret: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown>; headers: Headers }> {
  const response = await fetch(`${gw.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text === "" ? {} : JSON.parse(text), headers: response.headers };
}

async function ok(gw: TestGateway, secret: string, method: string, path: string, body?: unknown) {
  const answer = await call(gw, secret, method, path, body);
  assert.ok(answer.status < 300, `${method} ${path}: ${answer.status} ${JSON.stringify(answer.json)}`);
  return answer;
}

/** Issues a token named `name`; its id and secret. */
async function issue(gw: TestGateway, name: string, environment: string, limits?: { rpm: number }) {
  const { json } = await ok(gw, ADMIN, "POST", "/admin/tokens", { name, environment, models: ["*"], limits });
  return { id: String(json.id), secret: String(json.token) };
}

/** A stored response of `secret`'s, and the id of its first input item. */
async function respond(gw: TestGateway, secret: string, text: string) {
  const { json } = await ok(gw, secret, "POST", "/v1/responses", { model: "chat-echo", input: text });
  const items = await ok(gw, secret, "GET", `/v1/responses/${json.id}/input_items`);
  const data = items.json.data as { id: string; content: { text: string }[] }[];
  assert.equal(data[0].content[0].text, text);
  return { id: String(json.id), item: data[0].id };
}

/** Every way to reach response `id` (and its item `item`) with `secret` answers 404; nothing is deleted. */
async function assertNoneReachable(gw: TestGateway, secret: string, id: string, item: string, who: string) {
  const cases: [string, string, unknown?][] = [
    ["GET", `/v1/responses/${id}`],
    ["GET", `/v1/responses/${id}/input_items`],
    ["POST", "/v1/responses", { model: "chat-echo", input: "go on", previous_response_id: id }],
    ["POST", "/v1/responses", {
      model: "chat-echo",
      input: [{ type: "item_reference", id: item }, { role: "user", content: "and?" }],
    }],
    ["POST", "/v1/responses/input_tokens", { model: "chat-echo", input: "go on", previous_response_id: id }],
    ["DELETE", `/v1/responses/${id}`],
  ];
  for (const [method, path, body] of cases) {
    const answer = await call(gw, secret, method, path, body);
    assert.equal(answer.status, 404, `${who}: ${method} ${path} ${JSON.stringify(body ?? "")}`);
    const error = answer.json.error as { type: string; message: string };
    assert.equal(error.type, "invalid_request_error");
    assert.doesNotMatch(JSON.stringify(answer.json), /secret of/, "nothing of the old text leaks");
  }
}

/** Response `id` is `secret`'s: readable, with its text, and a chain continues from it. */
async function assertReachable(gw: TestGateway, secret: string, id: string, text: string) {
  await ok(gw, secret, "GET", `/v1/responses/${id}`);
  const items = await ok(gw, secret, "GET", `/v1/responses/${id}/input_items`);
  assert.match(JSON.stringify(items.json), new RegExp(text));
  await ok(gw, secret, "POST", "/v1/responses", {
    model: "chat-echo",
    input: "go on",
    previous_response_id: id,
    store: false,
  });
}

async function ownershipScenario(store: string) {
  const gw = await startGateway(config(store));
  try {
    // Revoked, then the name issued again: in the same environment and in another.
    for (const environment of ["prod", "staging"]) {
      const name = `svc-${environment}`;
      const old = await issue(gw, name, "prod");
      const kept = await respond(gw, old.secret, `secret of ${name}`);
      await ok(gw, ADMIN, "DELETE", `/admin/tokens/${old.id}`);
      const reissued = await issue(gw, name, environment);
      assert.notEqual(reissued.id, old.id);
      await assertNoneReachable(
        gw,
        reissued.secret,
        kept.id,
        kept.item,
        `${name} reissued in ${environment}`,
      );
      // The new token's own data works.
      const mine = await respond(gw, reissued.secret, "mine");
      await assertReachable(gw, reissued.secret, mine.id, "mine");
    }

    // Disabled and enabled again: the same token, the same data.
    const paused = await issue(gw, "svc-paused", "prod");
    const pausedData = await respond(gw, paused.secret, "secret of svc-paused");
    await ok(gw, ADMIN, "PATCH", `/admin/tokens/${paused.id}`, { disabled: true });
    assert.equal((await call(gw, paused.secret, "GET", `/v1/responses/${pausedData.id}`)).status, 401);
    await ok(gw, ADMIN, "PATCH", `/admin/tokens/${paused.id}`, { disabled: false });
    await assertReachable(gw, paused.secret, pausedData.id, "secret of svc-paused");

    // Shadowed by a config token of the same name after a reload, then unshadowed.
    const shadowed = await issue(gw, "svc-shadow", "prod");
    const shadowedData = await respond(gw, shadowed.secret, "secret of svc-shadow");
    await Deno.writeTextFile(gw.configFile, config(store, "svc-shadow"));
    await ok(gw, ADMIN, "POST", "/admin/reload");
    await assertNoneReachable(gw, FILE_SECRET, shadowedData.id, shadowedData.item, "the config's svc-shadow");
    // The config token's own data survives a reload (its identity is its name in the file).
    const fileData = await respond(gw, FILE_SECRET, "the config token's own");
    await ok(gw, ADMIN, "POST", "/admin/reload");
    await assertReachable(gw, FILE_SECRET, fileData.id, "the config token's own");
    await Deno.writeTextFile(gw.configFile, config(store));
    await ok(gw, ADMIN, "POST", "/admin/reload");
    await assertReachable(gw, shadowed.secret, shadowedData.id, "secret of svc-shadow");
    await assertNoneReachable(gw, shadowed.secret, fileData.id, fileData.item, "svc-shadow, unshadowed");
  } finally {
    await gw.stop();
  }
}

Deno.test("token ownership: a reissued name gets none of the old token's data (SQLite)", async () => {
  await ownershipScenario("");
});

Deno.test("token ownership: a reissued name gets none of the old token's data (PostgreSQL)", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("owner");
  const dir = await Deno.makeTempDir({ prefix: "ownership-pg-" });
  try {
    await ownershipScenario(
      `postgres: { url: "${TEST_DATABASE_URL}", schema: ${schema}, timeout: 2s }
usage: { spill: "${dir}/spill.jsonl", flush_interval: 50ms }`,
    );
  } finally {
    await dropSchema(schema);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("token ownership: a reissued name starts its own rate-limit counter", async () => {
  const gw = await startGateway(config(""));
  try {
    const chat = { model: "chat-echo", messages: [{ role: "user", content: "hi" }] };
    const old = await issue(gw, "svc-limited", "prod", { rpm: 2 });
    for (let i = 0; i < 2; i++) await ok(gw, old.secret, "POST", "/v1/chat/completions", chat);
    assert.equal((await call(gw, old.secret, "POST", "/v1/chat/completions", chat)).status, 429);
    await ok(gw, ADMIN, "DELETE", `/admin/tokens/${old.id}`);
    const reissued = await issue(gw, "svc-limited", "prod", { rpm: 2 });
    const first = await ok(gw, reissued.secret, "POST", "/v1/chat/completions", chat);
    assert.equal(
      first.headers.get("x-ratelimit-remaining-requests"),
      "1",
      "its own minute, not the old one's",
    );
  } finally {
    await gw.stop();
  }
});

Deno.test("token ownership: after a restart, a reissued name's budget is seeded from its own usage only", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ownership-budget-" });
  const store = `usage: { sqlite: "${dir}/usage.sqlite", spill: "${dir}/spill.jsonl", flush_interval: 50ms }`;
  const budget = { tokens: 100_000, period: "month" };
  const chat = { model: "chat-echo", messages: [{ role: "user", content: "spend some of the budget" }] };
  const used = async (gw: TestGateway) => {
    const { json } = await ok(gw, ADMIN, "GET", "/admin/explain?token=svc-budget&model=chat-echo");
    return (json.budget as { used: number }).used;
  };
  try {
    const first = await startGateway(config(store));
    let oldId: string;
    let newId: string;
    try {
      const post = (body: unknown) => ok(first, ADMIN, "POST", "/admin/tokens", body);
      const old = await post({ name: "svc-budget", models: ["*"], budget });
      oldId = String(old.json.id);
      for (let i = 0; i < 3; i++) {
        await ok(first, String(old.json.token), "POST", "/v1/chat/completions", chat);
      }
      assert.ok(await used(first) > 0, "the old token spent part of its budget");
      await ok(first, ADMIN, "DELETE", `/admin/tokens/${oldId}`);
      const reissued = await post({ name: "svc-budget", models: ["*"], budget });
      newId = String(reissued.json.id);
      assert.equal(await used(first), 0, "the reissued name starts its own budget");
      await ok(first, String(reissued.json.token), "POST", "/v1/chat/completions", chat);
    } finally {
      await first.stop();
    }
    const second = await startGateway(config(store));
    try {
      // Seeded at start from the usage records of the new token's identity only.
      const records = await ok(second, ADMIN, "GET", "/admin/requests?token=svc-budget");
      const ids = (records.json.data as { token_id: string }[]).map((r) => r.token_id);
      assert.deepEqual(
        ids.toSorted(),
        [newId, oldId, oldId, oldId].toSorted(),
        "each record names its token",
      );
      const seeded = await used(second);
      assert.ok(seeded > 0, "the new token's own request is counted");
      const { json } = await ok(second, ADMIN, "GET", "/admin/usage?token=svc-budget");
      const totals = json.totals as { total_tokens: number };
      assert.ok(seeded < totals.total_tokens, `${seeded} is the new token's share of ${totals.total_tokens}`);
      assert.equal(seeded * 4, totals.total_tokens, "one request of four, all the same size");
    } finally {
      await second.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("token ownership: token_id filters usage and the request log to one token, not its name's predecessor", async () => {
  const gw = await startGateway(config(""));
  try {
    const chat = { model: "chat-echo", messages: [{ role: "user", content: "hi" }] };
    const old = await issue(gw, "svc-reused", "prod");
    for (let i = 0; i < 3; i++) await ok(gw, old.secret, "POST", "/v1/chat/completions", chat);
    await ok(gw, ADMIN, "DELETE", `/admin/tokens/${old.id}`);
    const reissued = await issue(gw, "svc-reused", "prod");
    await ok(gw, reissued.secret, "POST", "/v1/chat/completions", chat);
    const requests = async (query: string) => {
      const { json } = await ok(gw, ADMIN, "GET", `/admin/requests?${query}`);
      return (json.data as { token_id: string }[]).map((r) => r.token_id);
    };
    // Records are written off the request path: wait for all four under the shared name.
    for (let i = 0; i < 200 && (await requests("token=svc-reused")).length < 4; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal((await requests("token=svc-reused")).length, 4, "the name has both tokens' records");
    assert.deepEqual(await requests(`token_id=${reissued.id}`), [reissued.id]);
    assert.deepEqual(await requests(`token_id=${old.id}`), [old.id, old.id, old.id]);
    const usage = async (query: string) => {
      const { json } = await ok(gw, ADMIN, "GET", `/admin/usage?${query}`);
      return (json.totals as { requests: number }).requests;
    };
    assert.equal(await usage(`token_id=${reissued.id}`), 1);
    assert.equal(await usage(`token_id=${old.id}&group_by=token`), 3);
    assert.equal(await usage("token=svc-reused"), 4);
    // Grouped by identity: a group per token, each with its own count and the name its records carry.
    const { json: grouped } = await ok(gw, ADMIN, "GET", "/admin/usage?token=svc-reused&group_by=token_id");
    const groups = grouped.groups as { key: Record<string, string | null>; requests: number }[];
    assert.deepEqual(
      Object.fromEntries(groups.map((g) => [g.key.token_id, [g.key.token, g.requests]])),
      { [old.id]: ["svc-reused", 3], [reissued.id]: ["svc-reused", 1] },
    );
    const bad = await call(gw, ADMIN, "GET", "/admin/usage?token_id=a%00b");
    assert.equal(bad.status, 400);
    assert.equal((bad.json.error as { param: string }).param, "token_id");
  } finally {
    await gw.stop();
  }
});

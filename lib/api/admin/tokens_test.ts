/**
 * `/admin/tokens` in-process, over the memory token store: every route, the 400 of every bad field naming it,
 * the 409s, paging and filters. The `/admin/audit` trail, and that no answer but the issuing one holds a
 * secret, and none a hash, are in tokens_audit_test.ts.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../auth/authenticate.ts";
import { parseConfigText } from "../../config/load.ts";
import { createMemoryLogger } from "../../log.ts";
import { createProviders } from "../../providers/registry.ts";
import { createGateway } from "../../server.ts";
import { createTokenDirectory } from "../../tokens/directory.ts";
import { createMemoryTokenStore } from "../../tokens/store_memory.ts";
import type { GatewayState } from "../../http/context.ts";
import { MAX_SECRETS_IN_GRACE } from "./tokens.ts";
import { ADMIN, CONFIG, errorOf, FILE_TOKEN, type Json, OTHER_ADMIN, setup } from "./tokens_test_helpers.ts";

Deno.test("admin tokens: issue, use at once, change, disable, rotate and revoke", async () => {
  const gw = setup();
  try {
    const created = await gw.admin("POST", "/admin/tokens", {
      name: "ci-bot",
      environment: "staging",
      description: "CI pipeline",
      models: ["chat-*"],
      limits: { rpm: 60 },
    });
    assert.equal(created.status, 201);
    assert.equal(created.headers.get("cache-control"), "no-store");
    const token = created.body;
    const secret = String(token.token);
    assert.match(secret, /^gw-[A-Za-z0-9_-]{43}$/);
    assert.match(String(token.id), /^tok_[0-9a-f]{24}$/);
    assert.equal(token.object, "gateway.token");
    assert.equal(token.source, "api");
    assert.equal(token.status, "active");
    assert.equal(token.created_by, "ops");
    assert.deepEqual(token.limits, { rpm: 60 });
    assert.equal(token.budget, null);
    assert.equal(token.endpoints, null);
    assert.equal(token.revoked_at, null);
    assert.equal((await gw.chat(secret)).status, 200, "works on this replica before the 201 arrives");
    assert.equal((await gw.chat(secret, "embed")).status, 404, "scoped to chat-*");

    const one = await gw.admin("GET", `/admin/tokens/${token.id}`);
    assert.equal(one.status, 200);
    assert.equal(one.body.token, undefined, "the secret is shown once");
    assert.equal(one.body.name, "ci-bot");

    const patched = await gw.admin("PATCH", `/admin/tokens/${token.id}`, {
      models: ["chat-a"],
      max_tokens: 50,
    });
    assert.equal(patched.status, 200);
    assert.deepEqual(patched.body.models, ["chat-a"]);
    assert.equal((await gw.chat(secret, "chat-b")).status, 404, "the narrower scope holds at once");

    const disabled = await gw.admin("PATCH", `/admin/tokens/${token.id}`, { disabled: true }, OTHER_ADMIN);
    assert.equal(disabled.body.status, "disabled");
    assert.deepEqual(await gw.chat(secret), { status: 401, code: "token_disabled" });
    await gw.admin("PATCH", `/admin/tokens/${token.id}`, { disabled: false });
    assert.equal((await gw.chat(secret)).status, 200);

    const rotated = await gw.admin("POST", `/admin/tokens/${token.id}/rotate`, { grace: "1h" });
    assert.equal(rotated.status, 200);
    assert.equal(rotated.headers.get("cache-control"), "no-store");
    const secret2 = String(rotated.body.token);
    assert.notEqual(secret2, secret);
    assert.ok(Date.parse(String(rotated.body.previous_expires_at)) > Date.now() + 3_500_000);
    assert.equal((await gw.chat(secret)).status, 200, "the old secret works in its grace period");
    assert.equal((await gw.chat(secret2)).status, 200);
    const rotatedAgain = await gw.admin("POST", `/admin/tokens/${token.id}/rotate`);
    assert.equal(rotatedAgain.status, 200, "no body: grace 0");
    const secret3 = String(rotatedAgain.body.token);
    assert.equal((await gw.chat(secret2)).status, 401, "grace 0: the replaced secret stops at once");
    assert.equal((await gw.chat(secret)).status, 200, "a secret in its own grace period keeps its end");
    assert.equal((await gw.chat(secret3)).status, 200);

    const revoked = await gw.admin("DELETE", `/admin/tokens/${token.id}`);
    assert.equal(revoked.status, 200);
    assert.equal(revoked.body.status, "revoked");
    for (const s of [secret, secret3]) {
      assert.deepEqual(await gw.chat(s), { status: 401, code: "invalid_api_key" });
    }
    const again = await gw.admin("DELETE", `/admin/tokens/${token.id}`);
    assert.equal(again.status, 200);
    assert.equal(again.body.revoked_at, revoked.body.revoked_at, "revoking twice keeps the first time");
    assert.equal(
      errorOf((await gw.admin("PATCH", `/admin/tokens/${token.id}`, { disabled: true })).body).code,
      "token_revoked",
    );
    const rotateRevoked = await gw.admin("POST", `/admin/tokens/${token.id}/rotate`, {});
    assert.equal(rotateRevoked.status, 409);
    assert.equal(errorOf(rotateRevoked.body).code, "token_revoked");

    const reused = await gw.admin("POST", "/admin/tokens", { name: "ci-bot", models: ["chat-a"] });
    assert.equal(reused.status, 201, "a revoked token's name is free again");
  } finally {
    await gw.close();
  }
});

Deno.test("admin tokens: every bad field is a 400 naming it; conflicts are 409s", async () => {
  const gw = setup();
  try {
    const cases: [unknown, string][] = [
      [{ models: ["chat-a"] }, "name"],
      [{ name: "x", models: ["chat-a", "image-*"] }, "models.1"],
      [{ name: "x", models: ["chat-a"], limits: { rpm: 0 } }, "limits.rpm"],
      [{ name: "x", models: ["chat-a"], limits: { rpm: 1, burst: 2 } }, "limits.burst"],
      [{ name: "x", models: ["chat-*"], budget: { cost: 1, period: "day" } }, "budget.cost"],
      [{ name: "x", models: ["chat-a"], budget: { tokens: 1, period: "week" } }, "budget.period"],
      [{ name: "x", models: ["chat-a"], expires_at: "2001-01-01T00:00:00Z" }, "expires_at"],
      [{ name: "x", models: ["chat-a"], endpoints: ["chat", "audio"] }, "endpoints.1"],
      [{ name: "x", models: ["chat-a"], sha256: "0".repeat(64) }, "sha256"],
      [{ name: "x", models: ["chat-a"], token: "gw-0123456789abcdef0123" }, "token"],
      [{ name: "x", models: ["chat-a"], colour: "red" }, "colour"],
      [{ name: "x", models: ["chat-a"], cache: true }, "cache"],
      [{ name: "x", models: ["chat-a"], cache: { max_age: "soon" } }, "cache.max_age"],
    ];
    for (const [body, param] of cases) {
      const answer = await gw.admin("POST", "/admin/tokens", body);
      assert.equal(answer.status, 400, JSON.stringify(body));
      const error = errorOf(answer.body);
      assert.equal(error.param, param, JSON.stringify(body));
      assert.equal(error.type, "invalid_request_error");
      assert.equal(typeof error.message, "string");
    }
    assert.equal((await gw.admin("POST", "/admin/tokens", "{not json")).status, 400);
    assert.equal((await gw.admin("POST", "/admin/tokens", "[]")).status, 400);

    const taken = await gw.admin("POST", "/admin/tokens", { name: "from-file", models: ["chat-a"] });
    assert.equal(taken.status, 409, "a config token's name");
    assert.equal(errorOf(taken.body).code, "token_name_taken");
    const first = await gw.admin("POST", "/admin/tokens", { name: "twin", models: ["chat-a"] });
    assert.equal(first.status, 201);
    const twin = await gw.admin("POST", "/admin/tokens", { name: "twin", models: ["chat-a"] });
    assert.equal(twin.status, 409);
    assert.equal(errorOf(twin.body).code, "token_name_taken");

    const id = String(first.body.id);
    const patchCases: [unknown, string][] = [
      [{ name: "renamed" }, "name"],
      [{ models: ["chat-a", "nope"] }, "models.1"],
      [{ limits: { concurrent: 0 } }, "limits.concurrent"],
      [{ expires_at: "yesterday" }, "expires_at"],
      [{ disabled: "no" }, "disabled"],
      [{ cache: "off" }, "cache"],
      [{ cache: { ttl: "1h" } }, "cache.ttl"],
    ];
    for (const [body, param] of patchCases) {
      const answer = await gw.admin("PATCH", `/admin/tokens/${id}`, body);
      assert.equal(answer.status, 400, JSON.stringify(body));
      assert.equal(errorOf(answer.body).param, param, JSON.stringify(body));
    }
    const badGrace = await gw.admin("POST", `/admin/tokens/${id}/rotate`, { grace: "forever" });
    assert.equal(errorOf(badGrace.body).param, "grace");

    for (
      const [method, path] of [["PATCH", "/admin/tokens/cfg_from-file"], [
        "DELETE",
        "/admin/tokens/cfg_from-file",
      ], [
        "POST",
        "/admin/tokens/cfg_from-file/rotate",
      ]]
    ) {
      const answer = await gw.admin(method, path, method === "DELETE" ? undefined : { disabled: true });
      assert.equal(answer.status, 409, `${method} ${path}`);
      assert.equal(errorOf(answer.body).code, "token_read_only");
    }
    const missing = await gw.admin("GET", "/admin/tokens/tok_000000000000000000000000");
    assert.equal(missing.status, 404);
    assert.equal(errorOf(missing.body).code, "token_not_found");
    assert.equal((await gw.admin("DELETE", "/admin/tokens/cfg_nobody")).status, 404);
  } finally {
    await gw.close();
  }
});

Deno.test("admin tokens: the list has both sources, filters and pages", async () => {
  const gw = setup();
  try {
    const ids: Record<string, string> = {};
    for (
      const [name, environment] of [["alpha", "dev"], ["beta", "prod"], ["gamma", "dev"], ["delta", "dev"]]
    ) {
      const answer = await gw.admin("POST", "/admin/tokens", { name, environment, models: ["chat-a"] });
      ids[name] = String(answer.body.id);
    }
    await gw.admin("PATCH", `/admin/tokens/${ids.gamma}`, { disabled: true });
    await gw.admin("DELETE", `/admin/tokens/${ids.delta}`);

    const names = (body: Json) => (body.data as Json[]).map((t) => t.name);
    const all = await gw.admin("GET", "/admin/tokens");
    assert.equal(all.body.object, "list");
    assert.deepEqual(names(all.body), ["alpha", "beta", "from-file", "gamma"], "by name; revoked left out");
    const file = (all.body.data as Json[]).find((t) => t.name === "from-file")!;
    assert.equal(file.id, "cfg_from-file");
    assert.equal(file.source, "config");
    assert.equal(file.created_at, null);
    assert.deepEqual(file.limits, { rpm: 5 });
    assert.equal((await gw.admin("GET", "/admin/tokens/cfg_from-file")).body.environment, "prod");

    assert.deepEqual(names((await gw.admin("GET", "/admin/tokens?environment=dev")).body), [
      "alpha",
      "gamma",
    ]);
    assert.deepEqual(names((await gw.admin("GET", "/admin/tokens?source=config")).body), ["from-file"]);
    assert.deepEqual(names((await gw.admin("GET", "/admin/tokens?status=revoked")).body), ["delta"]);
    assert.deepEqual(names((await gw.admin("GET", "/admin/tokens?status=disabled")).body), ["gamma"]);
    assert.deepEqual(names((await gw.admin("GET", "/admin/tokens?q=ET")).body), ["beta"]);

    const page1 = await gw.admin("GET", "/admin/tokens?limit=2");
    assert.deepEqual(names(page1.body), ["alpha", "beta"]);
    assert.equal(page1.body.has_more, true);
    assert.equal(page1.body.first_id, ids.alpha);
    assert.equal(page1.body.last_id, ids.beta);
    const page2 = await gw.admin("GET", `/admin/tokens?limit=2&after=${page1.body.last_id}`);
    assert.deepEqual(names(page2.body), ["from-file", "gamma"]);
    assert.equal(page2.body.has_more, false);

    for (
      const [query, param] of [
        ["limit=0", "limit"],
        ["limit=1001", "limit"],
        ["limit=x", "limit"],
        [
          "status=gone",
          "status",
        ],
        ["source=yaml", "source"],
        ["after=tok_nope", "after"],
      ]
    ) {
      const answer = await gw.admin("GET", `/admin/tokens?${query}`);
      assert.equal(answer.status, 400, query);
      assert.equal(errorOf(answer.body).param, param, query);
    }
  } finally {
    await gw.close();
  }
});

Deno.test("admin tokens: without a database the token routes answer 503 token_store_disabled", async () => {
  const gw = setup(false);
  for (
    const [method, path] of [["GET", "/admin/tokens"], ["POST", "/admin/tokens"], ["GET", "/admin/audit"], [
      "GET",
      "/admin/tokens/cfg_from-file",
    ]]
  ) {
    const answer = await gw.admin(
      method,
      path,
      method === "POST" ? { name: "x", models: ["chat-a"] } : undefined,
    );
    assert.equal(answer.status, 503, `${method} ${path}`);
    assert.equal(errorOf(answer.body).code, "token_store_disabled");
  }
  const client = await gw.admin("GET", "/admin/tokens", undefined, FILE_TOKEN);
  assert.equal(client.status, 401, "a client token is refused under /admin");
});

Deno.test("admin tokens: rotating in a loop keeps at most MAX_SECRETS_IN_GRACE old secrets; the oldest stops", async () => {
  const gw = setup();
  try {
    const created = await gw.admin("POST", "/admin/tokens", { name: "looped", models: ["chat-*"] });
    assert.equal(created.status, 201);
    const id = String(created.body.id);
    const secrets = [String(created.body.token)];
    for (let i = 0; i < MAX_SECRETS_IN_GRACE + 2; i++) {
      const rotated = await gw.admin("POST", `/admin/tokens/${id}/rotate`, { grace: "1h" });
      assert.equal(rotated.status, 200);
      secrets.push(String(rotated.body.token));
    }
    // Newest first: the current secret and the MAX_SECRETS_IN_GRACE rotated out last still work.
    const statuses = [];
    for (const secret of secrets.toReversed()) statuses.push((await gw.chat(secret)).status);
    assert.deepEqual(statuses, [
      200,
      ...Array(MAX_SECRETS_IN_GRACE).fill(200),
      ...Array(secrets.length - 1 - MAX_SECRETS_IN_GRACE).fill(401),
    ]);
  } finally {
    await gw.close();
  }
});

Deno.test("admin tokens: a config reload that takes a stored token's name shadows it, and the list says so", async () => {
  const load = (text: string) => {
    const result = parseConfigText(text, { source: "<test>", env: {} });
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    return { config: result.config, providers: createProviders(result.config.providers) } as GatewayState;
  };
  const CLASH = "gw-clash-in-file-0123456789abcdef";
  let state = load(CONFIG);
  const logger = createMemoryLogger();
  const tokens = createTokenDirectory({ store: createMemoryTokenStore(), logger, pollMs: 60_000 });
  const handler = createGateway({ state: () => state, logger, services: { tokens } });
  const call = async (secret: string, method: string, path: string, body?: unknown) => {
    const response = await handler(
      new Request(`http://gateway.test${path}`, {
        method,
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    return { status: response.status, body: await response.json() as Json };
  };
  const chat = (secret: string) =>
    call(secret, "POST", "/v1/chat/completions", {
      model: "chat-a",
      messages: [{ role: "user", content: "hi" }],
    });
  try {
    const issued = await call(ADMIN, "POST", "/admin/tokens", { name: "clash", models: ["chat-a"] });
    assert.equal(issued.status, 201);
    assert.equal(issued.body.shadowed_by_config, false);
    assert.equal((await chat(String(issued.body.token))).status, 200);

    // The file gains a token of the same name (a reload): the file's token wins.
    state = load(CONFIG.replace(
      "admin_tokens:",
      `  - { name: clash, sha256: ${hashToken(CLASH)}, models: ["chat-a"] }\nadmin_tokens:`,
    ));
    assert.equal((await chat(String(issued.body.token))).status, 401);
    assert.equal((await chat(CLASH)).status, 200);
    const list = await call(ADMIN, "GET", "/admin/tokens?q=clash");
    const rows = (list.body.data as Json[]).map((t) => [t.source, t.shadowed_by_config]);
    assert.deepEqual(rows.sort(), [["api", true], ["config", false]]);
    const one = await call(ADMIN, "GET", `/admin/tokens/${issued.body.id}`);
    assert.equal(one.body.shadowed_by_config, true);
    assert.ok(logger.lines.some((l) => l.msg === "token_name_clash"), "the clash is logged");
  } finally {
    await tokens.close();
  }
});

Deno.test("admin tokens: a trailing / on a token's or a team's path is unknown_url naming the path meant", async () => {
  const g = setup();
  try {
    const created = await g.admin("POST", "/admin/tokens", { name: "ci-bot", models: ["chat-a"] });
    const id = created.body.id as string;
    const team = await g.admin("POST", "/admin/teams", { name: "platform" });
    assert.equal(team.status, 201, JSON.stringify(team.body));
    for (
      const [method, path] of [
        ["GET", `/admin/tokens/${id}/`],
        ["DELETE", `/admin/tokens/${id}/`],
        ["POST", `/admin/tokens/${id}/rotate/`],
        ["GET", "/admin/teams/platform/"],
      ]
    ) {
      const answer = await g.admin(method, path);
      assert.equal(answer.status, 404, path);
      const error = errorOf(answer.body);
      assert.equal(error.code, "unknown_url", path);
      assert.match(String(error.message), new RegExp(`Did you mean ${path.slice(0, -1)}\\?`), path);
    }
    assert.equal(
      (await g.admin("GET", `/admin/tokens/${id}`)).body.revoked_at,
      null,
      "the DELETE changed nothing",
    );
  } finally {
    await g.close();
  }
});

/**
 * `GET /admin/explain` through the gateway's fetch handler, in-process: parameters, 404s, admin-only access,
 * and an explanation that follows real requests (their counters, a target they ejected) without taking from
 * any limit itself.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../auth/authenticate.ts";
import { parseConfigText } from "../../config/load.ts";
import type { ResolvedConfig, ResolvedToken } from "../../config/types.ts";
import { createMemoryLogger } from "../../log.ts";
import { createProviders } from "../../providers/registry.ts";
import { HealthRegistry } from "../../routing/health.ts";
import { createGateway } from "../../server.ts";
import { createTokenDirectory } from "../../tokens/directory.ts";
import { createMemoryTokenStore } from "../../tokens/store_memory.ts";
import { MODEL_ENDPOINTS } from "../../policy/explanation.ts";
import type { GatewayState } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import { tokenByName } from "./explain.ts";

const ADMIN = "gw-admin-token-0123456789abcdef";
const CI_BOT = "gw-ci-bot-token-0123456789abcdef";

const CONFIG = `
providers:
  local: { type: builtin }
  spare: { type: builtin }
routing: { eject_after: 1, eject_cooldown: 30s }
models:
  chat-main:
    type: chat
    targets:
      - { provider: local, model: echo, price: { input: 0.15, output: 0.6 } }
      - { provider: spare, model: echo }
  chat-secret: { type: chat, targets: [ { provider: local, model: echo } ] }
  embed-main: { type: embedding, targets: [ { provider: local, model: hash } ] }
tokens:
  - name: ci-bot
    environment: staging
    token: ${CI_BOT}
    models: ["chat-main", "embed-*"]
    limits: { rpm: 10, concurrent: 4 }
    budget: { tokens: 100000, period: month }
  - name: off
    sha256: ${"c".repeat(64)}
    models: ["*"]
    disabled: true
admin_tokens:
  - { name: ops-admin, token: ${ADMIN} }
`;

function loadConfig(): ResolvedConfig {
  const result = parseConfigText(CONFIG, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(`test config invalid: ${JSON.stringify(result.issues)}`);
  return result.config;
}

function setup(config = loadConfig()) {
  const state: GatewayState = { config, providers: createProviders(config.providers) };
  const health = new HealthRegistry();
  const handler = createGateway({ state: () => state, logger: createMemoryLogger(), routing: { health } });
  const explainCall = (query: string, token = ADMIN) =>
    handler(
      new Request(`http://gateway.test/admin/explain?${query}`, {
        headers: { authorization: `Bearer ${token}` },
      }),
    );
  const chat = async () => {
    const response = await handler(
      new Request("http://gateway.test/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${CI_BOT}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "chat-main", messages: [{ role: "user", content: "hello" }] }),
      }),
    );
    assert.equal(response.status, 200);
    await response.body?.cancel();
  };
  return { config, health, explainCall, chat };
}

async function explanation(response: Response) {
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "application/json");
  return await response.json();
}

async function errorOf(response: Response, status: number) {
  assert.equal(response.status, status);
  return (await response.json()).error as { param: string | null; code: string | null; message: string };
}

function rpm(e: { limits: { rule: string; used: number; remaining: number }[] }) {
  const found = e.limits.find((l) => l.rule === "token.rpm");
  assert.ok(found);
  return [found.used, found.remaining];
}

Deno.test("admin explain: an allowed token and alias, with targets, limits, budget and prices", async () => {
  const { explainCall } = setup();
  const e = await explanation(await explainCall("token=ci-bot&model=chat-main"));
  assert.equal(e.object, "gateway.explanation");
  assert.deepEqual(e.token, {
    name: "ci-bot",
    id: "cfg_ci-bot",
    source: "config",
    environment: "staging",
    status: "active",
    team: null,
  });
  assert.deepEqual([e.model, e.endpoint, e.allowed, e.denied_by], ["chat-main", "chat", true, null]);
  assert.deepEqual(
    e.targets.map((t: { provider: string; state: string; price: unknown }) => [t.provider, t.state, t.price]),
    [
      ["local", "healthy", { input: 0.15, output: 0.6 }],
      ["spare", "healthy", null],
    ],
  );
  assert.deepEqual(
    e.limits.map((l: { rule: string; limit: number; remaining: number }) => [l.rule, l.limit, l.remaining]),
    [
      ["token.concurrent", 4, 4],
      ["token.rpm", 10, 10],
    ],
  );
  assert.deepEqual([e.budget.unit, e.budget.limit, e.budget.used, e.budget.remaining], [
    "tokens",
    100000,
    0,
    100000,
  ]);
  // The endpoint defaults to the alias's kind.
  assert.equal(
    (await explanation(await explainCall("token=ci-bot&model=embed-main"))).endpoint,
    "embeddings",
  );
});

Deno.test("admin explain: a forbidden alias says token.models, a disabled token token.status", async () => {
  const { explainCall } = setup();
  const forbidden = await explanation(await explainCall("token=ci-bot&model=chat-secret"));
  assert.equal(forbidden.allowed, false);
  assert.equal(forbidden.denied_by.rule, "token.models");
  assert.match(forbidden.denied_by.message, /"chat-main", "embed-\*"/);
  const off = await explanation(await explainCall("token=off&model=chat-main"));
  assert.deepEqual([off.allowed, off.token.status, off.denied_by.rule], [false, "disabled", "token.status"]);
  const wrongType = await explanation(await explainCall("token=ci-bot&model=embed-main&endpoint=chat"));
  assert.equal(wrongType.denied_by.rule, "model.type");
});

Deno.test("admin explain: after N requests rpm has N fewer left, and explaining takes nothing", async () => {
  const { explainCall, chat } = setup();
  for (let i = 0; i < 3; i++) await chat();
  const first = await explanation(await explainCall("token=ci-bot&model=chat-main"));
  assert.deepEqual(rpm(first), [3, 7]);
  assert.ok(first.budget.used > 0, "the requests were charged to the budget");
  const second = await explanation(await explainCall("token=ci-bot&model=chat-main"));
  assert.deepEqual(rpm(second), [3, 7]);
  assert.equal(second.budget.used, first.budget.used);
  // The seven left are seven requests, not fewer: explaining took none of them.
  for (let i = 0; i < 7; i++) await chat();
  const spent = await explanation(await explainCall("token=ci-bot&model=chat-main"));
  assert.deepEqual(rpm(spent), [10, 0]);
  assert.deepEqual([spent.allowed, spent.denied_by.rule, spent.denied_by.status], [false, "token.rpm", 429]);
});

Deno.test("admin explain: an ejected target shows as ejected with the end of its cooldown", async () => {
  const { config, health, explainCall } = setup();
  const target = config.models.get("chat-main")!.targets[0];
  const lease = health.acquire(target, config.routing);
  assert.ok(typeof lease !== "string");
  lease.failed();
  lease.release();
  const e = await explanation(await explainCall("token=ci-bot&model=chat-main"));
  assert.equal(e.targets[0].state, "ejected");
  assert.equal(e.targets[0].available, false);
  const until = Date.parse(e.targets[0].ejected_until);
  assert.ok(until > Date.now() && until <= Date.now() + 30_000, e.targets[0].ejected_until);
  assert.equal(e.targets[1].state, "healthy");
  assert.equal(e.allowed, true);
});

Deno.test("admin explain: missing parameters are 400s naming them, unknown names 404s naming them", async () => {
  const { explainCall } = setup();
  assert.equal((await errorOf(await explainCall("model=chat-main"), 400)).param, "token");
  assert.equal((await errorOf(await explainCall("token=ci-bot"), 400)).param, "model");
  assert.equal((await errorOf(await explainCall("token=&model=chat-main"), 400)).param, "token");
  assert.equal(
    (await errorOf(await explainCall("token=ci-bot&model=chat-main&endpoint=models"), 400)).param,
    "endpoint",
  );
  assert.equal(
    (await errorOf(await explainCall("token=ci-bot&model=chat-main&endpoint=nope"), 400)).param,
    "endpoint",
  );
  const token = await errorOf(await explainCall("token=nobody&model=chat-main"), 404);
  assert.deepEqual([token.param, token.code], ["token", "token_not_found"]);
  const model = await errorOf(await explainCall("token=ci-bot&model=no-such-alias"), 404);
  assert.deepEqual([model.param, model.code], ["model", "model_not_found"]);
});

Deno.test("admin explain: a client token is refused like an unknown one", async () => {
  const { explainCall } = setup();
  await errorOf(await explainCall("token=ci-bot&model=chat-main", CI_BOT), 401);
  await errorOf(await explainCall("token=ci-bot&model=chat-main", "gw-not-a-token-0123456789abcdef"), 401);
});

Deno.test("admin explain: a token issued through the API is shown with its id and source", async () => {
  const base = loadConfig();
  const ciBot = tokenByName(base.tokens.values(), "ci-bot")!;
  const issued: ResolvedToken = {
    ...ciBot,
    name: "issued",
    sha256: hashToken("gw-issued-0123456789abcdef"),
    id: "tok_1234",
    source: "api",
  };
  const config: ResolvedConfig = { ...base, tokens: new Map([...base.tokens, [issued.sha256, issued]]) };
  const { explainCall } = setup(config);
  const e = await explanation(await explainCall("token=issued&model=chat-main"));
  assert.deepEqual([e.token.id, e.token.source], ["tok_1234", "api"]);
});

Deno.test("admin explain: a token in its rotation grace period is explained by its current secret", () => {
  const base = tokenByName(loadConfig().tokens.values(), "ci-bot")!;
  const current = { ...base, expiresAt: null };
  const old = { ...base, sha256: "e".repeat(64), expiresAt: Date.now() + 60_000 };
  assert.equal(tokenByName([old, current], "ci-bot"), current);
  assert.equal(tokenByName([current, old], "ci-bot"), current);
});

Deno.test("admin explain: the endpoints explained are the routes that call a model, with their alias types", () => {
  const fromRoutes = new Map<string, string>();
  for (const route of Object.values(ROUTES)) {
    if (route.endpoint !== null && "modelType" in route && route.modelType) {
      fromRoutes.set(route.endpoint, route.modelType);
    }
  }
  assert.deepEqual(Object.fromEntries(fromRoutes), { ...MODEL_ENDPOINTS });
});

Deno.test("admin explain: a revoked token says token.status revoked, with what its client gets", async () => {
  const config = loadConfig();
  const state: GatewayState = { config, providers: createProviders(config.providers) };
  const logger = createMemoryLogger();
  const tokens = createTokenDirectory({ store: createMemoryTokenStore(), logger });
  try {
    const handler = createGateway({ state: () => state, logger, services: { tokens } });
    const admin = (method: string, path: string, body?: unknown) =>
      handler(
        new Request(`http://gateway.test${path}`, {
          method,
          headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      );
    const created = await admin("POST", "/admin/tokens", { name: "gone", models: ["chat-main"] });
    assert.equal(created.status, 201);
    const { id } = await created.json();
    const before = await explanation(await admin("GET", "/admin/explain?token=gone&model=chat-main"));
    assert.deepEqual([before.allowed, before.token.status], [true, "active"]);

    assert.equal((await admin("DELETE", `/admin/tokens/${id}`)).status, 200);
    const after = await explanation(await admin("GET", "/admin/explain?token=gone&model=chat-main"));
    assert.equal(after.allowed, false);
    assert.deepEqual([after.token.id, after.token.source, after.token.status], [id, "api", "revoked"]);
    assert.deepEqual([after.denied_by.rule, after.denied_by.status, after.denied_by.code], [
      "token.status",
      401,
      "invalid_api_key",
    ]);
    assert.match(after.checks[0].detail, /^revoked at \d{4}-/);
  } finally {
    await tokens.close();
  }
});

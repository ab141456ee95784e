/**
 * The gateway's fetch handler called in-process with `Request` objects: health endpoints, request ids, the
 * access log, alias lookup, token states, and what an unexpected exception turns into.
 */
import assert from "node:assert/strict";
import { parseConfigText } from "../../lib/config/load.ts";
import type { GatewayState } from "../../lib/http/context.ts";
import { createMemoryLogger } from "../../lib/log.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import type { Provider } from "../../lib/providers/types.ts";
import { createGateway, requestIdFor } from "../../lib/server.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";

const DISABLED_TOKEN = "gw-disabled-token-0123456789abcdef";
const EXPIRED_TOKEN = "gw-expired-token-0123456789abcdef";

const CONFIG = `
server: { host: 127.0.0.1, port: 0 }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  team/chat: { type: chat, targets: [ { provider: local, model: echo } ] }
  embed-local: { type: embedding, targets: [ { provider: local, model: hash } ] }
${TEST_TOKENS_YAML}  - name: test-disabled
    environment: staging
    token: ${DISABLED_TOKEN}
    models: ["*"]
    disabled: true
  - name: test-expired
    environment: staging
    token: ${EXPIRED_TOKEN}
    models: ["*"]
    expires_at: 2001-01-01
`;

const REQUEST_ID = /^req_[0-9a-f]{32}$/;

function setup(swap?: (providers: Map<string, Provider>) => void) {
  const result = parseConfigText(CONFIG, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(`test config invalid: ${JSON.stringify(result.issues)}`);
  const providers = createProviders(result.config.providers);
  swap?.(providers);
  const state: GatewayState = { config: result.config, providers };
  const logger = createMemoryLogger();
  const handler = createGateway({ state: () => state, logger });
  const call = (path: string, init: RequestInit = {}) =>
    handler(new Request(`http://gateway.test${path}`, init));
  const access = () => logger.lines.filter((l) => l.msg === "request");
  return { call, logger, access };
}

function post(
  body: unknown,
  token = TEST_TOKEN,
  headers: Record<string, string> = {},
): RequestInit {
  return {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  };
}

const get = (token = TEST_TOKEN, headers: Record<string, string> = {}): RequestInit => ({
  headers: { authorization: `Bearer ${token}`, ...headers },
});

async function errorOf(response: Response) {
  assert.equal(response.headers.get("content-type"), "application/json");
  const body = await response.json();
  assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
  return body.error as { message: string; type: string; param: string | null; code: string | null };
}

Deno.test("handler: /healthz answers 200 without authentication", async () => {
  const { call } = setup();
  for (const init of [{}, { headers: { authorization: "Bearer nonsense" } }]) {
    const response = await call("/healthz", init);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/json");
    assert.deepEqual(await response.json(), { status: "ok" });
    assert.match(response.headers.get("x-request-id") ?? "", REQUEST_ID);
  }
});

Deno.test("handler: /readyz answers 200 with status ready", async () => {
  const { call } = setup();
  const response = await call("/readyz");
  assert.equal(response.status, 200);
  const body = await response.json();
  assert.equal(body.status, "ready");
  assert.equal(body.models, 3);
});

Deno.test("handler: a sane x-request-id is echoed, an insane one replaced", async () => {
  const { call, access } = setup();
  for (const sane of ["abc-123", "trace.1:span/2@svc+x=y", "A".repeat(128)]) {
    const response = await call("/healthz", { headers: { "x-request-id": sane } });
    await response.body?.cancel();
    assert.equal(response.headers.get("x-request-id"), sane);
  }
  const insane = [
    "B".repeat(129),
    "has space",
    "tab\there",
    "caf\u00e9",
    "semi;colon",
    'quote"d',
    "<script>",
  ];
  for (const value of insane) {
    const response = await call("/healthz", { headers: { "x-request-id": value } });
    await response.body?.cancel();
    const id = response.headers.get("x-request-id") ?? "";
    assert.match(id, REQUEST_ID, `"${value}" must be replaced`);
  }
  // An empty header is replaced too, and the access log carries the id that was sent back.
  const response = await call("/healthz", { headers: { "x-request-id": "" } });
  await response.body?.cancel();
  assert.match(response.headers.get("x-request-id") ?? "", REQUEST_ID);
  assert.equal(access().at(-1)?.request_id, response.headers.get("x-request-id"));
  // Error responses carry the id as well.
  const denied = await call("/v1/models", { headers: { "x-request-id": "err-42" } });
  await denied.body?.cancel();
  assert.equal(denied.status, 401);
  assert.equal(denied.headers.get("x-request-id"), "err-42");
});

Deno.test("handler: the access log has one line per request with its facts, never the token or prompt text", async () => {
  const { call, logger, access } = setup();
  const marker = `MARKER-${crypto.randomUUID()}`;
  const prompt = [{ role: "system", content: `sys ${marker}` }, { role: "user", content: `say ${marker}` }];

  const chat = await call(
    "/v1/chat/completions",
    post(
      {
        model: "chat-echo",
        messages: prompt,
      },
      TEST_TOKEN,
      { "x-request-id": "log-chat-1" },
    ),
  );
  assert.equal(chat.status, 200);
  const completion = await chat.json();
  assert.ok(completion.choices[0].message.content.includes(marker), "the echo answers with the prompt");

  const stream = await call(
    "/v1/chat/completions",
    post({ model: "team/chat", messages: prompt, stream: true }, TEST_TOKEN, {
      "x-request-id": "log-stream-1",
    }),
  );
  assert.equal(stream.status, 200);
  assert.ok((await stream.text()).includes("[DONE]"));

  const embed = await call(
    "/v1/embeddings",
    post({ model: "embed-local", input: `embed ${marker}` }, TEST_TOKEN, {
      "x-request-id": "log-embed-1",
    }),
  );
  assert.equal(embed.status, 200);
  await embed.body?.cancel();

  // A rejected request with the marker in a field the error message names, and one with a bad token.
  const rejected = await call(
    "/v1/chat/completions",
    post({ model: "chat-echo", messages: [{ role: marker, content: marker }] }),
  );
  assert.equal(rejected.status, 400);
  await rejected.body?.cancel();
  const unknown = await call(
    "/v1/chat/completions",
    post({ model: marker, messages: prompt }),
  );
  assert.equal(unknown.status, 404);
  await unknown.body?.cancel();
  const stranger = await call("/v1/models", get(`gw-${marker}`));
  assert.equal(stranger.status, 401);
  await stranger.body?.cancel();

  // Streams log when their body ends, which it has: one line per request.
  const lines = access();
  assert.equal(lines.length, 6);

  const byId = (id: string) => lines.find((l) => l.request_id === id)!;
  for (
    const [id, alias, path] of [
      ["log-chat-1", "chat-echo", "/v1/chat/completions"],
      ["log-stream-1", "team/chat", "/v1/chat/completions"],
      ["log-embed-1", "embed-local", "/v1/embeddings"],
    ]
  ) {
    const line = byId(id);
    assert.ok(line, `no access line for ${id}`);
    assert.equal(line.level, "info");
    assert.equal(line.method, "POST");
    assert.equal(line.path, path);
    assert.equal(line.token, "test-all");
    assert.equal(line.environment, "test");
    assert.equal(line.alias, alias);
    assert.equal(line.provider, "local");
    assert.equal(line.upstream_model, alias === "embed-local" ? "hash" : "echo");
    assert.equal(line.status, 200);
    assert.equal(typeof line.latency_ms, "number");
    assert.ok(Number(line.latency_ms) >= 0);
    assert.ok(Number(line.prompt_tokens) > 0, `${id}: prompt_tokens`);
    assert.equal(typeof line.completion_tokens, "number", `${id}: completion_tokens`);
  }
  assert.equal(byId("log-chat-1").prompt_tokens, completion.usage.prompt_tokens);
  assert.equal(byId("log-chat-1").completion_tokens, completion.usage.completion_tokens);
  assert.ok(Number(byId("log-stream-1").completion_tokens) > 0, "a stream's tokens are counted");
  assert.equal(byId("log-stream-1").stream, true);
  assert.equal(byId("log-embed-1").completion_tokens, 0);

  const statuses = lines.map((l) => l.status).sort();
  assert.deepEqual(statuses, [200, 200, 200, 400, 401, 404]);
  const failed = lines.filter((l) => l.status !== 200);
  assert.ok(failed.every((l) => typeof l.error_code === "string" && typeof l.latency_ms === "number"));

  for (const line of logger.lines) {
    const text = JSON.stringify(line);
    assert.ok(!text.includes(marker), `prompt text leaked into a log line: ${text}`);
    assert.ok(!text.includes(TEST_TOKEN), `the token leaked into a log line: ${text}`);
    assert.ok(!text.includes("Bearer"), `an authorization header leaked into a log line: ${text}`);
  }
});

Deno.test("handler: GET /v1/models/{alias} works for an alias containing a slash", async () => {
  const { call } = setup();
  for (const path of ["/v1/models/team/chat", "/v1/models/team%2Fchat"]) {
    const response = await call(path, get());
    assert.equal(response.status, 200, path);
    const model = await response.json();
    assert.equal(model.id, "team/chat");
    assert.equal(model.object, "model");
    assert.equal(typeof model.created, "number");
    assert.equal(model.owned_by, "local");
  }
  const list = await call("/v1/models", get());
  assert.ok((await list.json()).data.some((m: { id: string }) => m.id === "team/chat"));
  const missing = await call("/v1/models/team/other", get());
  assert.equal(missing.status, 404);
  assert.equal((await errorOf(missing)).code, "model_not_found");
  // A slash alias also works as `model` in a request.
  const chat = await call(
    "/v1/chat/completions",
    post({
      model: "team/chat",
      messages: [{ role: "user", content: "slash" }],
    }),
  );
  assert.equal(chat.status, 200);
  assert.equal((await chat.json()).model, "team/chat");
});

Deno.test("handler: disabled and expired tokens get 401 with their own codes", async () => {
  const { call, access } = setup();
  const cases = [
    { token: DISABLED_TOKEN, code: "token_disabled" },
    { token: EXPIRED_TOKEN, code: "token_expired" },
  ];
  for (const { token, code } of cases) {
    for (
      const response of [
        await call("/v1/models", get(token)),
        await call(
          "/v1/chat/completions",
          post({ model: "chat-echo", messages: [{ role: "user", content: "x" }] }, token),
        ),
      ]
    ) {
      assert.equal(response.status, 401);
      assert.ok(response.headers.get("www-authenticate"));
      const text = await response.clone().text();
      assert.ok(!text.includes(token), "the token is never echoed");
      const error = await errorOf(response);
      assert.equal(error.code, code);
      assert.equal(error.type, "invalid_request_error");
      assert.equal(error.param, null);
    }
  }
  assert.deepEqual(access().map((l) => l.error_code), [
    "token_disabled",
    "token_disabled",
    "token_expired",
    "token_expired",
  ]);
});

// Anthropic's clients send the token as `x-api-key`, Google's as `x-goog-api-key` or `?key=`: a token an admin
// disabled (say, leaked) or that expired must be as dead there as in `Authorization`, or it keeps spending.
Deno.test("handler: disabled and expired tokens get 401 through x-api-key, x-goog-api-key and ?key=, never upstream", async () => {
  let upstreamCalls = 0;
  const { call, access } = setup((providers) => {
    const real = providers.get("local")!;
    providers.set("local", {
      chat: (request, upstream) => {
        upstreamCalls++;
        return real.chat(request, upstream);
      },
      embed: (request, upstream) => {
        upstreamCalls++;
        return real.embed(request, upstream);
      },
    });
  });
  const messages = (key: string) =>
    call("/v1/messages", {
      method: "POST",
      headers: { "x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json" },
      body: JSON.stringify({
        model: "chat-echo",
        max_tokens: 20,
        messages: [{ role: "user", content: "x" }],
      }),
    });
  const gemini = (key: string, via: "header" | "query") =>
    call(`/v1beta/models/chat-echo:generateContent${via === "query" ? `?key=${key}` : ""}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(via === "header" ? { "x-goog-api-key": key } : {}) },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "x" }] }] }),
    });

  // The same requests with a live token reach the provider: the counter sees what a refused token would spend.
  for (const response of [await messages(TEST_TOKEN), await gemini(TEST_TOKEN, "header")]) {
    assert.equal(response.status, 200, await response.clone().text());
    await response.body?.cancel();
  }
  assert.equal(upstreamCalls, 2);
  upstreamCalls = 0;

  const anthropic = [
    { response: await messages(DISABLED_TOKEN), token: DISABLED_TOKEN, says: /disabled/ },
    { response: await messages(EXPIRED_TOKEN), token: EXPIRED_TOKEN, says: /expired/ },
  ];
  for (const { response, token, says } of anthropic) {
    assert.equal(response.status, 401);
    const text = await response.text();
    assert.ok(!text.includes(token), "the token is never echoed");
    const body = JSON.parse(text);
    assert.equal(body.type, "error");
    assert.equal(body.error.type, "authentication_error");
    assert.match(body.error.message, says);
  }
  const google = [
    { response: await gemini(EXPIRED_TOKEN, "header"), token: EXPIRED_TOKEN, says: /expired/ },
    { response: await gemini(DISABLED_TOKEN, "query"), token: DISABLED_TOKEN, says: /disabled/ },
    { response: await gemini(DISABLED_TOKEN, "header"), token: DISABLED_TOKEN, says: /disabled/ },
  ];
  for (const { response, token, says } of google) {
    assert.equal(response.status, 401);
    const text = await response.text();
    assert.ok(!text.includes(token), "the token is never echoed");
    const { error } = JSON.parse(text);
    assert.equal(error.code, 401);
    assert.equal(error.status, "UNAUTHENTICATED");
    assert.match(error.message, says);
  }
  assert.equal(upstreamCalls, 0, "a refused token reaches no upstream");
  assert.deepEqual(access().slice(-5).map((l) => l.error_code), [
    "token_disabled",
    "token_expired",
    "token_expired",
    "token_disabled",
    "token_disabled",
  ]);
});

Deno.test("handler: an unexpected exception in a provider is a generic 500 and an unhandled_error log line", async () => {
  const SECRET = "boom at /secret/path.ts:1";
  const throwing: Provider = {
    chat: () => Promise.reject(new Error(SECRET)),
    embed: () => {
      throw new TypeError(SECRET);
    },
  };
  const { call, logger, access } = setup((providers) => providers.set("local", throwing));
  const requests: [string, unknown][] = [
    ["/v1/chat/completions", { model: "chat-echo", messages: [{ role: "user", content: "hi" }] }],
    ["/v1/chat/completions", {
      model: "chat-echo",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    }],
    ["/v1/embeddings", { model: "embed-local", input: "hi" }],
  ];
  for (const [path, body] of requests) {
    const response = await call(path, post(body, TEST_TOKEN, { "x-request-id": `boom-${path}` }));
    assert.equal(response.status, 500);
    const text = await response.clone().text();
    assert.ok(!text.includes("boom"), text);
    assert.ok(!text.includes("/secret/path"), text);
    assert.ok(!text.includes(".ts:"), text);
    const error = await errorOf(response);
    assert.equal(error.type, "server_error");
    assert.ok(error.message.length > 0);
    assert.equal(response.headers.get("x-request-id"), `boom-${path}`);
  }
  const unhandled = logger.lines.filter((l) => l.msg === "unhandled_error");
  assert.equal(unhandled.length, requests.length);
  for (const [i, [path]] of requests.entries()) {
    assert.equal(unhandled[i].level, "error");
    assert.equal(unhandled[i].request_id, `boom-${path}`);
    assert.match(String(unhandled[i].error), /boom/, "operators see what went wrong");
  }
  assert.deepEqual(access().map((l) => l.status), [500, 500, 500]);
  assert.ok(access().every((l) => l.provider === "local"));

  // The gateway keeps serving: other routes are unaffected.
  const health = await call("/healthz");
  assert.equal(health.status, 200);
  await health.body?.cancel();
});

Deno.test("request ids: generated ones are unique and keep OpenAI's req_<32 hex> form", () => {
  const ids = new Set<string>();
  for (let i = 0; i < 5_000; i++) {
    const id = requestIdFor(new Request("http://gateway.test/v1/models"));
    assert.match(id, REQUEST_ID);
    ids.add(id);
  }
  assert.equal(ids.size, 5_000);
});

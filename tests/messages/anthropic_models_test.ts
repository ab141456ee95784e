/**
 * `GET /v1/models` and `GET /v1/models/{id}` as Anthropic's clients call them, over real sockets: the official
 * `@anthropic-ai/sdk` (`client.models.list()`, its auto-pagination, `retrieve()`) and Claude Code's gateway model
 * discovery (`CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY=1` with `ANTHROPIC_API_KEY`: `GET /v1/models?limit=1000`
 * with `x-api-key` and `anthropic-version: 2023-06-01`). With `anthropic-version` the answers are Anthropic's
 * Models API shapes and errors; without it, OpenAI's, byte for byte as before.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { TestGateway } from "../helpers/gateway.ts";
import { withTestGateway } from "../helpers/with_gateway.ts";

const T = {
  all: "gw-models-all-token-0123456789abcdef",
  narrow: "gw-models-narrow-token-0123456789abcdef",
};

/** 25 chat aliases: more than the SDK's default page of 20. */
const MANY = Array.from({ length: 23 }, (_, i) => `claude-extra-${String(i).padStart(2, "0")}`);

const CONFIG = `
providers:
  local: { type: builtin }
models:
  claude-sonnet-gw: { type: chat, created: 1700000000, targets: [ { provider: local, model: echo } ] }
  secret-model: { type: chat, created: 1700000000, targets: [ { provider: local, model: echo } ] }
  embed: { type: embedding, created: 1700000000, targets: [ { provider: local, model: hash } ] }
${
  MANY.map((m) =>
    `  ${m}: { type: chat, created: 1700000000, targets: [ { provider: local, model: echo } ] }`
  ).join("\n")
}
tokens:
  - { name: all, environment: test, sha256: ${hashToken(T.all)}, models: ["*"] }
  - { name: narrow, environment: test, sha256: ${hashToken(T.narrow)}, models: ["claude-sonnet-gw", "embed"] }
`;

function withGateway(fn: (gw: TestGateway) => Promise<void>) {
  return withTestGateway(() => ({ fakes: undefined, config: CONFIG }), fn);
}

/** A client sending the token as `x-api-key` only, as Claude Code does with `ANTHROPIC_API_KEY`. */
function apiKeyClient(gw: TestGateway, token: string): Anthropic {
  return new Anthropic({
    apiKey: null,
    authToken: null,
    baseURL: gw.url,
    maxRetries: 0,
    defaultHeaders: { "x-api-key": token },
  });
}

const SONNET = {
  type: "model",
  id: "claude-sonnet-gw",
  display_name: "claude-sonnet-gw",
  created_at: "2023-11-14T22:13:20Z",
};

Deno.test("anthropic models: Claude Code's discovery (x-api-key, limit=1000) gets Anthropic's model list", async () => {
  await withGateway(async (gw) => {
    const response = await fetch(`${gw.url}/v1/models?limit=1000`, {
      headers: {
        "x-api-key": T.narrow,
        "anthropic-version": "2023-06-01",
        "user-agent": "claude-cli/2.1.332",
      },
    });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("request-id") ?? "", /^req_/);
    // The token's chat aliases only: the embedding alias is not a model the Messages API serves.
    assert.deepEqual(await response.json(), {
      data: [SONNET],
      has_more: false,
      first_id: "claude-sonnet-gw",
      last_id: "claude-sonnet-gw",
    });
    const all = await (await fetch(`${gw.url}/v1/models?limit=1000`, {
      headers: { "x-api-key": T.all, "anthropic-version": "2023-06-01" },
    })).json();
    assert.deepEqual(all.data.map((m: { id: string }) => m.id), [
      "claude-sonnet-gw",
      "secret-model",
      ...MANY,
    ]);
  });
});

Deno.test("anthropic models: the SDK lists (every page), pages by cursor and retrieves", async () => {
  await withGateway(async (gw) => {
    for (
      const client of [
        apiKeyClient(gw, T.all),
        new Anthropic({ apiKey: T.all, baseURL: gw.url, maxRetries: 0 }),
      ]
    ) {
      const first = await client.models.list();
      assert.equal(first.data.length, 20);
      assert.equal(first.has_more, true);
      assert.deepEqual(first.data[0], SONNET);
      const ids: string[] = [];
      for await (const model of client.models.list()) ids.push(model.id);
      assert.deepEqual(ids, ["claude-sonnet-gw", "secret-model", ...MANY]);
      const before = await client.models.list({ limit: 2, before_id: MANY[0] });
      assert.deepEqual(before.data.map((m) => m.id), ["claude-sonnet-gw", "secret-model"]);
      assert.equal(before.has_more, false);
      const after = await client.models.list({ limit: 2, after_id: MANY[20] });
      assert.deepEqual(after.data.map((m) => m.id), [MANY[21], MANY[22]]);
      assert.equal(after.has_more, false);
      assert.deepEqual(await client.models.retrieve("claude-sonnet-gw"), SONNET);
    }
  });
});

/** The SDK error of a call that must fail. */
async function failure(call: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  const err = await call.then(() => null, (e) => e);
  assert.ok(err instanceof Anthropic.APIError, `expected an API error, got ${err}`);
  return err;
}

function anthropicError(err: InstanceType<typeof Anthropic.APIError>, status: number, type: string): string {
  assert.equal(err.status, status);
  const body = err.error as { type: string; error: { type: string; message: string }; request_id: string };
  assert.equal(body.type, "error");
  assert.equal(body.error.type, type);
  assert.equal(body.request_id, err.requestID);
  return body.error.message;
}

Deno.test("anthropic models: errors in Anthropic's shape (401, 404 alike for unknown and forbidden, 400)", async () => {
  await withGateway(async (gw) => {
    const narrow = apiKeyClient(gw, T.narrow);
    const forbidden = await failure(narrow.models.retrieve("secret-model"));
    assert.ok(forbidden instanceof Anthropic.NotFoundError);
    const unknown = await failure(narrow.models.retrieve("no-such-model"));
    assert.equal(
      anthropicError(forbidden, 404, "not_found_error").replace("secret-model", "X"),
      anthropicError(unknown, 404, "not_found_error").replace("no-such-model", "X"),
    );
    anthropicError(await failure(narrow.models.retrieve("embed")), 404, "not_found_error");
    const bad = await failure(apiKeyClient(gw, "gw-wrong-token").models.list());
    assert.ok(bad instanceof Anthropic.AuthenticationError);
    anthropicError(bad, 401, "authentication_error");
    const none = await fetch(`${gw.url}/v1/models`, { headers: { "anthropic-version": "2023-06-01" } });
    assert.equal(none.status, 401);
    const noneBody = await none.json();
    assert.equal(noneBody.error.type, "authentication_error");
    assert.match(noneBody.error.message, /x-api-key/);
    const limit = await failure(narrow.models.list({ limit: 1001 }));
    assert.match(anthropicError(limit, 400, "invalid_request_error"), /^limit: /);
  });
});

Deno.test("anthropic models: without anthropic-version the routes answer OpenAI's shapes as before", async () => {
  await withGateway(async (gw) => {
    const get = (path: string, headers: Record<string, string>) => fetch(`${gw.url}${path}`, { headers });
    const bearer = await get("/v1/models/claude-sonnet-gw", { authorization: `Bearer ${T.narrow}` });
    assert.equal(
      await bearer.text(),
      '{"id":"claude-sonnet-gw","object":"model","created":1700000000,"owned_by":"local"}',
    );
    assert.equal(bearer.headers.get("request-id"), null);
    // x-api-key is taken on these routes (when no Authorization came), the answer stays OpenAI's.
    const viaKey = await get("/v1/models", { "x-api-key": T.narrow });
    assert.equal(
      await viaKey.text(),
      '{"object":"list","data":[' +
        '{"id":"claude-sonnet-gw","object":"model","created":1700000000,"owned_by":"local"},' +
        '{"id":"embed","object":"model","created":1700000000,"owned_by":"local"}]}',
    );
    const none = await get("/v1/models", {});
    assert.equal(none.status, 401);
    assert.deepEqual(await none.json(), {
      error: {
        message: "You didn't provide an API key. You need to provide your API key in an Authorization " +
          "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        type: "invalid_request_error",
        param: null,
        code: null,
      },
    });
    const unknown = await get("/v1/models/nope", { authorization: `Bearer ${T.narrow}` });
    assert.equal(unknown.status, 404);
    assert.equal((await unknown.json()).error.code, "model_not_found");
    // An Authorization header decides: a bad bearer token is refused whatever x-api-key says.
    const both = await get("/v1/models", { authorization: "Bearer gw-wrong", "x-api-key": T.narrow });
    assert.equal(both.status, 401);
    await both.body?.cancel();
  });
});

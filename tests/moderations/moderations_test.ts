/**
 * `POST /v1/moderations` end to end with the official `openai` SDK (`client.moderations.create`) against a
 * gateway on a real socket and the OpenAI moderation fake (`startFakeModeration`): results passed through
 * with the alias as `model`, the token's `moderations` scope, an alias of another type, bad bodies, admission
 * (rpm, content rules) and the usage record.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { FAKE_MODERATION_KEY, type FakeModeration, startFakeModeration } from "../helpers/fake_guardrails.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

const CHAT_ONLY_TOKEN = "gw-chat-only-token-0123456789abcdef";
const MODERATIONS_ONLY_TOKEN = "gw-moderations-only-token-0123456789";
const LIMITED_TOKEN = "gw-limited-token-0123456789abcdef";

function configFor(fake: FakeModeration): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  local: { type: builtin }
  moderator: { type: openai, base_url: "${fake.url}/v1", api_key: "${FAKE_MODERATION_KEY}" }
models:
  mod-fake: { type: moderation, targets: [ { provider: moderator, model: omni-moderation-latest } ] }
  mod-redact:
    type: moderation
    targets: [ { provider: moderator, model: omni-moderation-latest } ]
    content_rules: [ { name: card, pattern: "\\\\d{4}-\\\\d{4}", action: redact } ]
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  embed-local: { type: embedding, targets: [ { provider: local, model: hash } ] }
${TEST_TOKENS_YAML}
  - name: chat-only
    sha256: ${hashToken(CHAT_ONLY_TOKEN)}
    models: ["*"]
    endpoints: [chat, embeddings]
  - name: moderations-only
    sha256: ${hashToken(MODERATIONS_ONLY_TOKEN)}
    models: ["*"]
    endpoints: [moderations]
  - name: limited
    sha256: ${hashToken(LIMITED_TOKEN)}
    models: ["*"]
    limits: { rpm: 1 }
`;
}

function withGateway(fn: (gw: TestGateway, fake: FakeModeration, client: OpenAI) => Promise<void>) {
  return withFakeGateway(startFakeModeration, configFor, fn);
}

function clientWith(gw: TestGateway, token: string): OpenAI {
  return new OpenAI({ apiKey: token, baseURL: gw.baseURL, maxRetries: 0 });
}

async function post(gw: TestGateway, body: unknown, token = TEST_TOKEN) {
  const res = await fetch(`${gw.baseURL}/moderations`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

Deno.test("moderations: results pass through, model is the alias, upstream gets the target's model", async () => {
  await withGateway(async (_gw, fake, client) => {
    const { data, response } = await client.moderations
      .create({ model: "mod-fake", input: ["hello there", "we attack at dawn"] })
      .withResponse();
    assert.equal(data.model, "mod-fake");
    assert.match(data.id, /^modr-/);
    assert.equal(data.results.length, 2);
    assert.equal(data.results[0].flagged, false);
    assert.equal(data.results[1].flagged, true);
    assert.equal(data.results[1].categories.violence, true);
    assert.equal(data.results[1].category_scores.violence, 0.93);
    assert.deepEqual(data.results[1].category_applied_input_types, {});
    assert.equal(response.headers.get("x-gateway-provider"), "moderator");
    assert.equal(response.headers.get("x-gateway-model"), "omni-moderation-latest");

    const call = fake.calls.at(-1)!;
    assert.equal(call.path, "/v1/moderations");
    assert.deepEqual(call.body, {
      model: "omni-moderation-latest",
      input: ["hello there", "we attack at dawn"],
    });

    const single = await client.moderations.create({ model: "mod-fake", input: "just words" });
    assert.equal(single.results.length, 1);
    assert.equal(single.results[0].flagged, false);
  });
});

Deno.test("moderations: parts reach the upstream as sent, and its 400 reaches the client", async () => {
  await withGateway(async (_gw, fake, client) => {
    const input = [
      { type: "text" as const, text: "a caption" },
      { type: "image_url" as const, image_url: { url: "https://example.com/cat.png" } },
    ];
    // The fake speaks only text, as `text-moderation-*` models do: its 400 is the client's.
    await assert.rejects(client.moderations.create({ model: "mod-fake", input }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.BadRequestError);
      return true;
    });
    assert.deepEqual((fake.calls.at(-1)!.body as { input: unknown }).input, input);
  });
});

Deno.test("moderations: the token's endpoints scope; an alias of another type is embeddings' 400", async () => {
  await withGateway(async (gw, fake, client) => {
    const calls = fake.calls.length;
    await assert.rejects(
      clientWith(gw, CHAT_ONLY_TOKEN).moderations.create({ model: "mod-fake", input: "x" }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.PermissionDeniedError);
        assert.equal(err.status, 403);
        assert.equal(err.code, "endpoint_not_allowed");
        assert.match(err.message, /moderations endpoint/);
        return true;
      },
    );
    assert.equal(fake.calls.length, calls, "a refused request never reaches the upstream");
    const allowed = await clientWith(gw, MODERATIONS_ONLY_TOKEN).moderations.create({
      model: "mod-fake",
      input: "x",
    });
    assert.equal(allowed.results.length, 1);

    // The same refusal as embeddings with a chat alias: 400 model_not_supported on `model`, naming the path.
    const wrongType = async (call: Promise<unknown>) => {
      let caught: unknown;
      await call.catch((err) => caught = err);
      assert.ok(caught instanceof OpenAI.BadRequestError);
      return { code: caught.code, param: caught.param, type: caught.type, message: caught.message };
    };
    const viaModerations = await wrongType(client.moderations.create({ model: "chat-echo", input: "x" }));
    const viaEmbeddings = await wrongType(client.embeddings.create({ model: "chat-echo", input: "x" }));
    assert.deepEqual(
      { ...viaModerations, message: undefined },
      { ...viaEmbeddings, message: undefined },
    );
    assert.deepEqual(
      { code: viaModerations.code, param: viaModerations.param, type: viaModerations.type },
      { code: "model_not_supported", param: "model", type: "invalid_request_error" },
    );
    assert.equal(
      viaModerations.message,
      "400 The model `chat-echo` is a chat model and cannot be used with /v1/moderations; use /v1/chat/completions.",
    );
    const backwards = await wrongType(client.embeddings.create({ model: "mod-fake", input: "x" }));
    assert.equal(
      backwards.message,
      "400 The model `mod-fake` is a moderation model and cannot be used with /v1/embeddings; use /v1/moderations.",
    );
    await assert.rejects(
      client.moderations.create({ model: "no-such-alias", input: "x" }),
      (err: unknown) => err instanceof OpenAI.NotFoundError && err.code === "model_not_found",
    );
  });
});

Deno.test("moderations: bad bodies are 400s naming the param, before the upstream", async () => {
  await withGateway(async (gw, fake) => {
    const cases: [unknown, string, string][] = [
      [{ model: "mod-fake" }, "input", "missing_required_parameter"],
      [{ input: "x" }, "model", "missing_required_parameter"],
      [{ model: "mod-fake", input: 5 }, "input", "invalid_type"],
      [{ model: "mod-fake", input: [] }, "input", "empty_array"],
      [{ model: "mod-fake", input: ["a", { type: "text" }] }, "input[1]", "invalid_type"],
      [{ model: "mod-fake", input: [{ type: "video", url: "x" }] }, "input[0].type", "invalid_value"],
      [
        { model: "mod-fake", input: Array.from({ length: 2049 }, () => "x") },
        "input",
        "array_above_max_length",
      ],
    ];
    for (const [body, param, code] of cases) {
      const { status, body: answer } = await post(gw, body);
      assert.equal(status, 400, JSON.stringify(body).slice(0, 80));
      assert.equal(answer.error.param, param, JSON.stringify(body).slice(0, 80));
      assert.equal(answer.error.code, code, JSON.stringify(body).slice(0, 80));
      assert.equal(answer.error.type, "invalid_request_error");
    }
    const noModel = await post(gw, { input: "x" });
    assert.match(noModel.body.error.message, /no default moderation model/);
    const notJson = await post(gw, "{");
    assert.equal(notJson.status, 400);
    const get = await fetch(`${gw.baseURL}/moderations`, {
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
    });
    await get.body?.cancel();
    assert.equal(get.status, 405);
    assert.equal(fake.calls.length, 0);
  });
});

Deno.test("moderations: admitted like embeddings (rpm, content rules) and recorded under moderations", async () => {
  await withGateway(async (gw, fake, client) => {
    const limited = clientWith(gw, LIMITED_TOKEN);
    await limited.moderations.create({ model: "mod-fake", input: "first" });
    await assert.rejects(
      limited.moderations.create({ model: "mod-fake", input: "second" }),
      (err: unknown) => err instanceof OpenAI.RateLimitError,
    );

    await client.moderations.create({ model: "mod-redact", input: ["card 1234-5678 please"] });
    const sent = (fake.calls.at(-1)!.body as { input: string[] }).input[0];
    assert.ok(!sent.includes("1234-5678"), `the content rule redacted the input: ${sent}`);

    type Row = {
      endpoint: string;
      alias: string;
      status: number;
      prompt_tokens: number;
      completion_tokens: number;
      tokens_estimated: number;
      cost: number;
      provider: string;
      upstream_model: string;
    };
    const rows = await pollUsageRows<Row>(gw, (r) => r.length >= 3, {
      sql: "SELECT endpoint, alias, status, prompt_tokens, completion_tokens, tokens_estimated, cost, " +
        "provider, upstream_model FROM usage ORDER BY time",
    });
    assert.equal(rows.length, 3);
    for (const row of rows) assert.equal(row.endpoint, "moderations");
    const [first, denied, redacted] = rows;
    assert.deepEqual(
      { ...first, prompt_tokens: first.prompt_tokens > 0 },
      {
        endpoint: "moderations",
        alias: "mod-fake",
        status: 200,
        prompt_tokens: true,
        completion_tokens: 0,
        tokens_estimated: 1,
        cost: 0,
        provider: "moderator",
        upstream_model: "omni-moderation-latest",
      },
    );
    assert.equal(denied.status, 429);
    assert.equal(redacted.alias, "mod-redact");
  });
});

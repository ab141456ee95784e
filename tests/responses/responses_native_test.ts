/**
 * `POST /v1/responses` passed through to upstreams that speak the Responses API natively (`native_responses:
 * true`), end to end with the official `openai` SDK against a gateway on a real socket and a fake native
 * upstream (tests/helpers/fake_openai_responses.ts). What a client notices: the alias as `model`, the gateway's
 * own ids, built-in tools and reasoning items passed through (and refused with 400 where no target can take
 * them), `previous_response_id` passed through to the provider that made the earlier response and rebuilt for
 * any other, a broken stream ending in `error` + `response.failed`, and one usage record per request with the
 * upstream's token counts. Every Response and event validates against OpenAI's published spec when it is at
 * hand.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type OpenAI from "openai";
import { zodTextFormat } from "openai/helpers/zod";
import { z } from "zod";
import { FAKE_ANSWER, FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import {
  type FakeNativeUpstream,
  NATIVE_AFTER_TOOL,
  NATIVE_ANSWER,
  NATIVE_JSON,
  NATIVE_KEY,
  NATIVE_PROGRAM_FINGERPRINT,
  NATIVE_USAGE,
  startFakeNativeResponses,
} from "../helpers/fake_openai_responses.ts";
import {
  NARROW_TOKEN,
  startGateway,
  TEST_TOKEN,
  TEST_TOKENS_YAML,
  type TestGateway,
  waitForLog,
} from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import { checkEvents, checkResponse, parseSse, type WireEvent } from "../helpers/responses_conformance.ts";
import { usageRows } from "../helpers/usage_rows.ts";
import { type Fakes as FakeSet, startFakes } from "../helpers/fakes.ts";

const schemas = await loadOpenApiSchemas();

type Fakes = FakeSet<{ native: FakeNativeUpstream; chat: FakeUpstream }>;

const startAll = (): Fakes => startFakes({ native: startFakeNativeResponses, chat: startFakeOpenAI });

function configFor(f: Fakes): string {
  const native =
    `type: openai, base_url: "${f.native.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true`;
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  native: { ${native} }
  native-b: { ${native} }
  chat: { type: openai, base_url: "${f.chat.baseURL}", api_key: "${FAKE_KEY}" }
  local: { type: builtin }
models:
  chat-native: { type: chat, targets: [ { provider: native, model: resp-ok } ] }
  chat-program: { type: chat, targets: [ { provider: native, model: resp-program } ] }
  chat-native-b: { type: chat, targets: [ { provider: native-b, model: resp-ok } ] }
  chat-translated: { type: chat, targets: [ { provider: chat, model: gpt-ok } ] }
  chat-mixed: { type: chat, targets: [ { provider: chat, model: gpt-ok }, { provider: native, model: resp-ok } ] }
  chat-fallback: { type: chat, targets: [ { provider: native, model: resp-500, retries: 0 }, { provider: native-b, model: resp-ok } ] }
  chat-length: { type: chat, targets: [ { provider: native, model: resp-length } ] }
  chat-cut: { type: chat, targets: [ { provider: native, model: resp-cut } ] }
  chat-error: { type: chat, targets: [ { provider: native, model: resp-error } ] }
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: TestGateway, fakes: Fakes, client: OpenAI) => Promise<void>) {
  return withFakeGateway(startAll, configFor, fn);
}

async function raw(gw: TestGateway, body: unknown, token = TEST_TOKEN): Promise<Response> {
  return await fetch(`${gw.baseURL}/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** A raw stream's events, checked as a whole (spec, sequence numbers, item bookkeeping). */
async function streamEvents(res: Response): Promise<WireEvent[]> {
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
  const events = parseSse(await res.text());
  checkEvents(schemas, events);
  return events;
}

/** A Response the client got from a native target: spec-valid, the gateway's id, the alias as model. */
function assertNative(response: unknown, alias: string): Record<string, unknown> {
  checkResponse(schemas, response);
  const r = response as Record<string, unknown>;
  assert.equal(r.model, alias);
  assert.doesNotMatch(String(r.id), /_up\d+$/, "the upstream's id is not shown");
  return r;
}

const WEATHER_TOOL = {
  type: "function" as const,
  name: "get_weather",
  description: "Weather for a city",
  parameters: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
    additionalProperties: false,
  },
  strict: true,
};

Deno.test("responses native: create with a string and with items, passed through with the target model", async () => {
  await withGateway(async (_gw, fakes, client) => {
    const { data, response } = await client.responses
      .create({
        model: "chat-native",
        input: "Hi",
        instructions: "Be brief.",
        reasoning: { summary: "auto" },
      })
      .withResponse();
    assertNative(data, "chat-native");
    assert.equal(data.output_text, NATIVE_ANSWER);
    assert.equal(data.output[0].type, "reasoning", "the upstream's reasoning item reaches the client");
    assert.equal(data.usage?.input_tokens, NATIVE_USAGE.input);
    assert.equal(data.usage?.output_tokens_details.reasoning_tokens, NATIVE_USAGE.reasoning);
    assert.equal(response.headers.get("x-gateway-provider"), "native");
    const sent = fakes.native.requests.at(-1)!;
    assert.equal(sent.path, "/v1/responses");
    assert.equal(
      sent.headers.get("authorization"),
      `Bearer ${NATIVE_KEY}`,
      "the provider's key, not the client's",
    );
    assert.deepEqual(sent.body, {
      model: "resp-ok",
      input: "Hi",
      instructions: "Be brief.",
      reasoning: { summary: "auto" },
    });

    const reasoning = data.output[0];
    const items = await client.responses.create({
      model: "chat-native",
      input: [
        { role: "user", content: [{ type: "input_text", text: "Hi" }] },
        reasoning as OpenAI.Responses.ResponseReasoningItem,
        { role: "assistant", content: NATIVE_ANSWER },
        { type: "message", role: "user", content: [{ type: "input_text", text: "Again" }] },
      ],
      max_output_tokens: 64,
    });
    assertNative(items, "chat-native");
    assert.equal(items.output_text, NATIVE_ANSWER);
    const input = fakes.native.requests.at(-1)!.body.input as Record<string, unknown>[];
    assert.equal(input.length, 4);
    assert.deepEqual(input[1], reasoning, "a reasoning item goes to a native upstream as sent");
    assert.equal(fakes.native.requests.at(-1)!.body.max_output_tokens, 64);
    assert.equal(fakes.chat.requests.length, 0);
  });
});

Deno.test("responses native: a function-tool round trip, and responses.parse with a zod schema", async () => {
  await withGateway(async (_gw, fakes, client) => {
    const first = await client.responses.create({
      model: "chat-native",
      input: "Weather in Paris?",
      tools: [WEATHER_TOOL],
    });
    assertNative(first, "chat-native");
    const call = first.output.find((i) => i.type === "function_call");
    assert.ok(call && call.type === "function_call");
    assert.deepEqual(JSON.parse(call.arguments), { city: "Paris" });
    assert.deepEqual(fakes.native.requests.at(-1)!.body.tools, [WEATHER_TOOL], "tools go upstream as sent");

    const final = await client.responses.create({
      model: "chat-native",
      input: [
        { role: "user", content: "Weather in Paris?" },
        call,
        { type: "function_call_output", call_id: call.call_id, output: '{"temp_c":21}' },
      ],
      tools: [WEATHER_TOOL],
    });
    assert.equal(final.output_text, NATIVE_AFTER_TOOL);
    const input = fakes.native.requests.at(-1)!.body.input as Record<string, unknown>[];
    assert.deepEqual(input[1], call);
    assert.deepEqual(input[2], {
      type: "function_call_output",
      call_id: call.call_id,
      output: '{"temp_c":21}',
    });

    const parsed = await client.responses.parse({
      model: "chat-native",
      input: "Greet me in French.",
      text: { format: zodTextFormat(z.object({ greeting: z.string() }), "answer") },
    });
    assert.deepEqual(parsed.output_parsed, JSON.parse(NATIVE_JSON));
    assert.equal(
      (fakes.native.requests.at(-1)!.body.text as { format: { type: string } }).format.type,
      "json_schema",
    );
  });
});

Deno.test("responses native: the stream() helper to finalResponse(), and every event forwarded rewritten", async () => {
  await withGateway(async (gw, _fakes, client) => {
    const deltas: string[] = [];
    const runner = client.responses.stream({
      model: "chat-native",
      input: "Hi",
      reasoning: { summary: "auto" },
    });
    runner.on("response.output_text.delta", (e) => deltas.push(e.delta));
    const final = await runner.finalResponse();
    assertNative(final, "chat-native");
    assert.equal(final.output_text, NATIVE_ANSWER);
    assert.equal(deltas.join(""), NATIVE_ANSWER);
    assert.ok(deltas.length > 1);

    const events = await streamEvents(await raw(gw, { model: "chat-native", input: "Hi", stream: true }));
    const types = events.map((e) => e.type);
    assert.ok(
      types.includes("response.reasoning_summary_text.delta"),
      "reasoning summary events pass through",
    );
    assert.equal(types.at(-1), "response.completed");
    const ids = new Set(events.filter((e) => e.response).map((e) => (e.response as { id: string }).id));
    assert.equal(ids.size, 1);
    for (const e of events.filter((e) => e.response)) assertNative(e.response, "chat-native");
  });
});

Deno.test("responses native: a built-in tool passes through; a translated-only alias answers without it (x-gateway-dropped)", async () => {
  await withGateway(async (gw, fakes, client) => {
    const answer = await client.responses.create({
      model: "chat-native",
      input: "Weather?",
      tools: [{ type: "web_search" }],
    });
    assertNative(answer, "chat-native");
    assert.equal(answer.output[0].type, "web_search_call");
    assert.equal(answer.output_text, NATIVE_ANSWER);
    assert.deepEqual(fakes.native.requests.at(-1)!.body.tools, [{ type: "web_search" }]);

    const events = await streamEvents(
      await raw(gw, {
        model: "chat-native",
        input: "Weather?",
        tools: [{ type: "web_search" }],
        stream: true,
      }),
    );
    assert.ok(events.some((e) => e.type === "response.web_search_call.completed"));

    // An alias with a translated and a native target: the built-in tool can only go to the native one.
    const before = fakes.chat.requests.length;
    const { data, response } = await client.responses
      .create({ model: "chat-mixed", input: "Weather?", tools: [{ type: "web_search" }] }).withResponse();
    assert.equal(response.headers.get("x-gateway-provider"), "native");
    assert.equal(data.model, "chat-mixed");
    assert.equal(fakes.chat.requests.length, before, "the translated target was never tried");
    // Without a built-in tool the same alias goes to its first target, translated.
    const plain = await client.responses.create({ model: "chat-mixed", input: "Hi" });
    assert.equal(plain.output_text, FAKE_ANSWER);

    const natives = fakes.native.requests.length;
    // A translated-only alias answers without the built-in tool, and says so.
    const dropped = await raw(gw, {
      model: "chat-translated",
      input: "Hi",
      tools: [{ type: "function", name: "f" }, { type: "web_search" }],
    });
    assert.equal(dropped.status, 200);
    assert.equal(dropped.headers.get("x-gateway-dropped"), "tools[1]");
    await dropped.body?.cancel();
    assert.deepEqual(
      (fakes.chat.requests.at(-1)!.body.tools as { function: { name: string } }[]).map((t) =>
        t.function.name
      ),
      ["f"],
    );
    // A built-in tool's item is content the model must read: refused without a native target.
    const res = await raw(gw, {
      model: "chat-translated",
      input: [{ type: "web_search_call", id: "ws_1", status: "completed" }],
    });
    assert.equal(res.status, 400);
    const error = (await res.json()).error;
    assert.equal(error.param, "input[0].type");
    assert.equal(error.type, "invalid_request_error");
    assert.match(error.message, /web_search_call/);
    assert.equal(fakes.native.requests.length, natives);
  });
});

Deno.test("responses native: previous_response_id passes through to the same provider, rebuilt for another", async () => {
  await withGateway(async (gw, fakes, client) => {
    const first = await client.responses.create({ model: "chat-native", input: "My name is Ada." });
    const upstreamFirst = fakes.native.requests.length;
    const second = await client.responses.create({
      model: "chat-native",
      input: "What is my name?",
      previous_response_id: first.id,
    });
    assertNative(second, "chat-native");
    assert.equal(second.previous_response_id, first.id, "the client sees its own previous id");
    const passed = fakes.native.requests.at(-1)!.body;
    assert.equal(fakes.native.requests.length, upstreamFirst + 1);
    assert.match(String(passed.previous_response_id), /^resp_up\d+$/, "the upstream gets its own id");
    assert.ok(fakes.native.made.has(String(passed.previous_response_id)));
    assert.equal(passed.input, "What is my name?", "nothing rebuilt");

    // The same conversation continued on another provider: rebuilt as input items, no upstream id.
    const third = await client.responses.create({
      model: "chat-native-b",
      input: "And again?",
      previous_response_id: second.id,
      stream: false,
    });
    assertNative(third, "chat-native-b");
    const rebuilt = fakes.native.requests.at(-1)!.body;
    assert.equal(rebuilt.previous_response_id, undefined);
    const input = rebuilt.input as Record<string, unknown>[];
    const texts = JSON.stringify(input);
    for (const said of ["My name is Ada.", "What is my name?", NATIVE_ANSWER, "And again?"]) {
      assert.ok(texts.includes(said), `the rebuilt input holds ${said}`);
    }
    assert.ok(!input.some((i) => i.type === "reasoning"), "another upstream's reasoning items are left out");

    // A translated response continued natively: rebuilt too.
    const translated = await client.responses.create({ model: "chat-translated", input: "Remember 42." });
    await client.responses.create({
      model: "chat-native",
      input: "Number?",
      previous_response_id: translated.id,
    });
    const fromTranslated = fakes.native.requests.at(-1)!.body;
    assert.equal(fromTranslated.previous_response_id, undefined);
    assert.ok(JSON.stringify(fromTranslated.input).includes(FAKE_ANSWER));

    // Another token's id, and an unknown one, are 404 before any upstream call.
    const count = fakes.native.requests.length;
    for (const [id, token] of [[first.id, NARROW_TOKEN], ["resp_nope", TEST_TOKEN]]) {
      const res = await raw(gw, { model: "chat-native", input: "x", previous_response_id: id }, token);
      assert.equal(res.status, 404, `${id} for ${token}`);
    }
    assert.equal(fakes.native.requests.length, count);
  });
});

Deno.test("responses native: items of types only a native upstream reads (program) go back to it; a translated target goes without", async () => {
  await withGateway(async (gw, fakes, client) => {
    const ran = await client.responses.create({ model: "chat-program", input: "Add one and one." });
    const types = ran.output.map((item) => item.type as string);
    assert.deepEqual(types, ["program", "program_output", "message"]);
    // The next turn on the same provider, then on another native one (rebuilt) and on a translated one.
    const next = await raw(gw, { model: "chat-native", input: "And again?", previous_response_id: ran.id });
    assert.equal(next.status, 200, await next.clone().text());
    const again = (await next.json()) as { id: string };
    assert.match(String(fakes.native.requests.at(-1)!.body.previous_response_id), /^resp_up\d+$/);
    await client.responses.create({
      model: "chat-native-b",
      input: "Once more?",
      previous_response_id: again.id,
    });
    const rebuilt = JSON.stringify(fakes.native.requests.at(-1)!.body.input);
    assert.ok(rebuilt.includes(NATIVE_PROGRAM_FINGERPRINT), "another native upstream gets the program back");
    const translated = await client.responses.create({
      model: "chat-translated",
      input: "Sum?",
      previous_response_id: again.id,
    });
    assert.equal(translated.output_text, FAKE_ANSWER);
    assert.ok(!JSON.stringify(fakes.chat.requests.at(-1)!.body).includes(NATIVE_PROGRAM_FINGERPRINT));

    // Sent back as input (the client managing its own context): passed through as sent, to native targets only.
    const input = [...ran.output, { role: "user", content: "Thanks." }, { type: "teleport", to: "mars" }];
    const mixed = await raw(gw, { model: "chat-mixed", input });
    assert.equal(mixed.status, 200);
    assert.equal(mixed.headers.get("x-gateway-provider"), "native");
    await mixed.body?.cancel();
    assert.deepEqual(fakes.native.requests.at(-1)!.body.input, input);
    const natives = fakes.native.requests.length;
    for (
      const [item, named] of [[ran.output[0], /'program'/], [{ type: "teleport" }, /'teleport'/]] as const
    ) {
      const res = await raw(gw, { model: "chat-translated", input: [{ role: "user", content: "Hi" }, item] });
      assert.equal(res.status, 400);
      const error = (await res.json()).error;
      assert.equal(error.param, "input[1].type");
      assert.match(error.message, named);
    }
    assert.equal(fakes.native.requests.length, natives);
  });
});

Deno.test("responses native: a deleted earlier response never reaches the upstream through its own chain", async () => {
  await withGateway(async (_gw, fakes, client) => {
    const first = await client.responses.create({ model: "chat-native", input: "My secret is 4711." });
    const second = await client.responses.create({
      model: "chat-native",
      input: "Noted?",
      previous_response_id: first.id,
    });
    assert.match(String(fakes.native.requests.at(-1)!.body.previous_response_id), /^resp_up\d+$/);
    await client.responses.delete(first.id);
    // The upstream's chain for `second` still holds the secret: the gateway resends what remains instead.
    await client.responses.create({
      model: "chat-native",
      input: "What is my secret?",
      previous_response_id: second.id,
    });
    const sent = fakes.native.requests.at(-1)!.body;
    assert.equal(sent.previous_response_id, undefined, "the upstream's own chain is not named");
    const texts = JSON.stringify(sent.input);
    assert.ok(!texts.includes("4711"), "the deleted response is not sent");
    for (const said of ["Noted?", NATIVE_ANSWER, "What is my secret?"]) {
      assert.ok(texts.includes(said), `the rebuilt input holds ${said}`);
    }
  });
});

Deno.test("responses native: a length stop is incomplete; an upstream error or cut mid-stream makes the SDK raise", async () => {
  await withGateway(async (gw, _fakes, client) => {
    const short = await client.responses.create({ model: "chat-length", input: "Hi" });
    assert.equal(short.status, "incomplete");
    assert.equal(short.incomplete_details?.reason, "max_output_tokens");
    const incomplete = await streamEvents(await raw(gw, { model: "chat-length", input: "Hi", stream: true }));
    assert.equal(incomplete.at(-1)!.type, "response.incomplete");

    for (const alias of ["chat-cut", "chat-error"]) {
      const runner = client.responses.stream({ model: alias, input: "Hi" });
      await assert.rejects(runner.finalResponse(), `${alias}: the SDK raises`);
      const events = await streamEvents(await raw(gw, { model: alias, input: "Hi", stream: true }));
      assert.deepEqual(events.slice(-2).map((e) => e.type), ["error", "response.failed"]);
      assert.ok(
        events.some((e) => e.type === "response.output_text.delta"),
        "what came before was forwarded",
      );
      const text = JSON.stringify(events);
      assert.ok(!text.includes(NATIVE_KEY), "the upstream key never reaches the client");
    }
    const errorEvent = (await streamEvents(await raw(gw, { model: "chat-error", input: "Hi", stream: true })))
      .at(-2)!;
    assert.equal(errorEvent.code, "rate_limit_exceeded");
  });
});

Deno.test("responses native: a failing first target falls back before the first byte", async () => {
  await withGateway(async (gw, _fakes, client) => {
    const { data, response } = await client.responses.create({ model: "chat-fallback", input: "Hi" })
      .withResponse();
    assert.equal(data.output_text, NATIVE_ANSWER);
    assert.equal(response.headers.get("x-gateway-provider"), "native-b");
    const events = await streamEvents(await raw(gw, { model: "chat-fallback", input: "Hi", stream: true }));
    assert.equal(events.at(-1)!.type, "response.completed");
    const line = await waitForLog(
      gw,
      (l) => l.msg === "request" && l.alias === "chat-fallback" && l.stream === true,
    );
    assert.equal(line.attempts, 2);
  });
});

Deno.test("responses native: one usage record per request with the upstream's token counts", async () => {
  await withGateway(async (gw, _fakes, client) => {
    await client.responses.create({ model: "chat-native", input: "Hi" });
    await client.responses.stream({ model: "chat-native", input: "Hi" }).finalResponse();
    await client.responses.stream({ model: "chat-cut", input: "Hi" }).finalResponse().catch(() => {});
    // Waits a little longer to catch extras.
    const rows = await usageRows<Row>(gw, 3, { settleMs: 200 });
    assert.equal(rows.length, 3, "exactly one record per request");
    for (const row of rows.filter((r) => r.alias === "chat-native")) {
      assert.equal(row.endpoint, "responses");
      assert.equal(row.provider, "native");
      assert.equal(row.upstream_model, "resp-ok");
      assert.deepEqual([row.prompt_tokens, row.completion_tokens], [NATIVE_USAGE.input, NATIVE_USAGE.output]);
      assert.equal(row.tokens_estimated, 0);
    }
    const cut = rows.find((r) => r.alias === "chat-cut")!;
    assert.equal(cut.stream, 1);
    assert.ok(cut.error_code !== null, "a cut stream is recorded as failed");
    assert.equal(cut.tokens_estimated, 1, "without the upstream's usage, the gateway counts");
  });
});

Deno.test("responses native: the max_tokens ceiling, content rules and an rpm limit hold as for translated requests", async () => {
  const fakes = startAll();
  const ceiling = "gw-ceiling-token-0123456789abcdef";
  const limited = "gw-rpm-token-0123456789abcdef";
  const gw = await startGateway(`
providers:
  native: { type: openai, base_url: "${fakes.native.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
models:
  chat-native:
    type: chat
    targets: [ { provider: native, model: resp-ok } ]
    content_rules:
      - { name: secret, pattern: "TOPSECRET", action: deny }
      - { name: ssn, pattern: "\\\\b\\\\d{3}-\\\\d{2}-\\\\d{4}\\\\b", action: redact }
tokens:
  - { name: ceiling, environment: test, sha256: ${hashToken(ceiling)}, models: ["*"], max_tokens: 5 }
  - { name: limited, environment: test, sha256: ${hashToken(limited)}, models: ["*"], limits: { rpm: 2 } }
`);
  try {
    const capped = await raw(gw, { model: "chat-native", input: "Hi", max_output_tokens: 100 }, ceiling);
    assert.equal(capped.status, 200);
    assert.equal(fakes.native.requests.at(-1)!.body.max_output_tokens, 5, "the ceiling reaches the upstream");
    const set = await raw(gw, { model: "chat-native", input: "Hi" }, ceiling);
    await set.body?.cancel();
    assert.equal(fakes.native.requests.at(-1)!.body.max_output_tokens, 5, "and is set when none was asked");

    const redacted = await raw(gw, {
      model: "chat-native",
      instructions: "Mine is 123-45-6789.",
      input: [{ role: "user", content: [{ type: "input_text", text: "SSN 123-45-6789 please" }] }],
    }, ceiling);
    assert.equal(redacted.status, 200);
    const sent = fakes.native.requests.at(-1)!.body;
    assert.equal(sent.instructions, "Mine is [REDACTED].");
    assert.deepEqual(sent.input, [{
      role: "user",
      content: [{ type: "input_text", text: "SSN [REDACTED] please" }],
    }]);

    const before = fakes.native.requests.length;
    const denied = await raw(gw, { model: "chat-native", input: "the TOPSECRET plan" }, ceiling);
    assert.equal(denied.status, 400);
    assert.equal((await denied.json()).error.code, "content_policy_violation");
    const statuses = [];
    for (let i = 0; i < 3; i++) {
      const res = await raw(gw, { model: "chat-native", input: "Hi", stream: i % 2 === 0 }, limited);
      await res.text();
      statuses.push(res.status);
    }
    assert.deepEqual(statuses, [200, 200, 429]);
    assert.equal(fakes.native.requests.length, before + 2, "denied requests never reach the upstream");
  } finally {
    await gw.stop();
    await fakes.stop();
  }
});

interface Row {
  alias: string;
  endpoint: string;
  provider: string;
  upstream_model: string;
  stream: number;
  prompt_tokens: number;
  completion_tokens: number;
  tokens_estimated: number;
  error_code: string | null;
}

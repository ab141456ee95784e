/**
 * The client's `anthropic-beta` names through `POST /v1/messages` (and its `count_tokens`) to a translated
 * target, over real sockets: the chat form has no betas, so a translated target (OpenAI-compatible, Gemini, the
 * builtin) goes without every one, and the answer's `x-gateway-dropped` and the usage record's `dropped` name
 * each, as `anthropic-beta:<name>`, before the body's field paths. A `strict` alias does not refuse them (they
 * are what Claude Code sends on every request). A native target (Anthropic) gets them all, and nothing is named.
 */
import assert from "node:assert/strict";
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { FAKE_GEMINI_KEY, startFakeGemini } from "../helpers/fake_gemini.ts";
import { FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { type Fakes, startFakes } from "../helpers/fakes.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";

/** Betas Claude Code sends (one of them twice, as a client merging its own list with the user's may). */
const BETAS =
  "claude-code-20250219, interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14," +
  "context-management-2025-06-27,prompt-caching-scope-2026-01-05,claude-code-20250219";
/** How the answer and the record name them: each once, in the client's order. */
const NAMED = [
  "anthropic-beta:claude-code-20250219",
  "anthropic-beta:interleaved-thinking-2025-05-14",
  "anthropic-beta:fine-grained-tool-streaming-2025-05-14",
  "anthropic-beta:context-management-2025-06-27",
  "anthropic-beta:prompt-caching-scope-2026-01-05",
].join(",");

type Upstreams = Fakes<{
  openai: ReturnType<typeof startFakeOpenAI>;
  gemini: ReturnType<typeof startFakeGemini>;
  anthropic: ReturnType<typeof startFakeAnthropic>;
}>;

function config(f: Upstreams): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  local: { type: builtin }
  oa: { type: openai, base_url: "${f.openai.baseURL}", api_key: "${FAKE_KEY}" }
  gm: { type: gemini, base_url: "${f.gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
  claude: { type: anthropic, base_url: "${f.anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  oa-ok: { type: chat, targets: [ { provider: oa, model: gpt-ok } ] }
  oa-strict: { type: chat, strict: true, targets: [ { provider: oa, model: gpt-ok } ] }
  gm-ok: { type: chat, targets: [ { provider: gm, model: gem-ok } ] }
  claude-ok: { type: chat, targets: [ { provider: claude, model: claude-ok } ] }
  claude-checked: { type: chat, targets: [ { provider: claude, model: claude-ok } ], guardrails: [answers] }
guardrails:
  answers: { type: pii, entities: [CREDIT_CARD], action: deny, phase: output }
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: TestGateway, fakes: Upstreams) => Promise<void>): Promise<void> {
  const start = () =>
    startFakes({ openai: startFakeOpenAI, gemini: startFakeGemini, anthropic: startFakeAnthropic });
  return withFakeGateway(start, config, fn);
}

function post(gw: TestGateway, path: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: {
      "x-api-key": TEST_TOKEN,
      "anthropic-version": "2023-06-01",
      "anthropic-beta": BETAS,
      "content-type": "application/json",
    },
    body: JSON.stringify({ messages: [{ role: "user", content: "Hello" }], ...body }),
  });
}

/** The `dropped` of the usage record of `answer`'s request, once it is stored. */
async function recordDropped(gw: TestGateway, answer: Response): Promise<unknown> {
  const requestId = answer.headers.get("request-id");
  const rows = await pollUsageRows<{ dropped: unknown }>(gw, (r) => r.length > 0, {
    sql: "SELECT dropped FROM usage WHERE request_id = ?",
    params: [requestId],
  });
  assert.equal(rows.length, 1, `the record of ${requestId}`);
  return rows[0].dropped;
}

Deno.test("messages betas: a translated target names every beta it went without, in the header and the record", async () => {
  await withGateway(async (gw, fakes) => {
    const whole = await post(gw, "/v1/messages", { model: "oa-ok", max_tokens: 64 });
    const message = await whole.json();
    assert.equal(whole.status, 200, JSON.stringify(message));
    assert.equal(message.type, "message");
    assert.equal(fakes.openai.requests.at(-1)!.headers.get("anthropic-beta"), null, "OpenAI gets no beta");
    assert.equal(whole.headers.get("x-gateway-dropped"), NAMED);
    assert.equal(await recordDropped(gw, whole), NAMED);

    // Streamed, beside a field the target goes without too: the betas first, then the body's paths.
    const streamed = await post(gw, "/v1/messages", {
      model: "gm-ok",
      max_tokens: 64,
      stream: true,
      speed: "fast",
    });
    assert.equal(streamed.status, 200);
    const events = await streamed.text();
    assert.match(events, /event: message_stop/);
    assert.equal(streamed.headers.get("x-gateway-dropped"), `${NAMED},speed`);
    assert.equal(await recordDropped(gw, streamed), `${NAMED},speed`);

    // A strict alias refuses what the body loses, not the betas every Claude Code request carries.
    const strict = await post(gw, "/v1/messages", { model: "oa-strict", max_tokens: 64 });
    assert.equal(strict.status, 200, await strict.clone().text());
    await strict.body?.cancel();
    assert.equal(strict.headers.get("x-gateway-dropped"), NAMED);
    assert.equal(await recordDropped(gw, strict), NAMED);
  });
});

Deno.test("messages betas: a count made from the chat form names the betas; exact (Gemini) or estimated alike", async () => {
  await withGateway(async (gw) => {
    for (const model of ["gm-ok", "chat-echo"]) {
      const counted = await post(gw, "/v1/messages/count_tokens", { model });
      const count = await counted.json();
      assert.equal(counted.status, 200, JSON.stringify(count));
      assert.ok(count.input_tokens > 0);
      assert.equal(count.estimated, model === "chat-echo" ? true : undefined, model);
      assert.equal(counted.headers.get("x-gateway-dropped"), NAMED, model);
      assert.equal(await recordDropped(gw, counted), NAMED, model);
    }
  });
});

Deno.test("messages betas: a native target (Anthropic) gets every beta, and nothing is named dropped", async () => {
  await withGateway(async (gw, fakes) => {
    for (const stream of [false, true]) {
      const answer = await post(gw, "/v1/messages", { model: "claude-ok", max_tokens: 64, stream });
      assert.equal(answer.status, 200, await answer.clone().text());
      await answer.text();
      assert.equal(
        fakes.anthropic.requests.at(-1)!.headers.get("anthropic-beta"),
        NAMED.replaceAll("anthropic-beta:", ""),
      );
      assert.equal(answer.headers.get("x-gateway-dropped"), null, `stream: ${stream}`);
      assert.equal(await recordDropped(gw, answer), null, `stream: ${stream}`);
    }
    const counted = await post(gw, "/v1/messages/count_tokens", { model: "claude-ok" });
    assert.equal(counted.status, 200, await counted.clone().text());
    assert.equal((await counted.json()).estimated, undefined, "Anthropic counted it");
    assert.equal(counted.headers.get("x-gateway-dropped"), null);
    assert.equal(await recordDropped(gw, counted), null);
  });
});

Deno.test("messages betas: a native target served the chat form (its answer is checked) names every beta it went without", async () => {
  // An output guardrail reads the chat form's answer, so Anthropic is sent that form, which has no betas: it
  // went without each, though it takes them all when sent the client's body.
  await withGateway(async (gw, fakes) => {
    for (const stream of [false, true]) {
      const answer = await post(gw, "/v1/messages", { model: "claude-checked", max_tokens: 64, stream });
      assert.equal(answer.status, 200, await answer.clone().text());
      await answer.text();
      assert.equal(
        fakes.anthropic.requests.at(-1)!.headers.get("anthropic-beta"),
        null,
        "the chat form has none",
      );
      assert.equal(answer.headers.get("x-gateway-dropped"), NAMED, `stream: ${stream}`);
      assert.equal(await recordDropped(gw, answer), NAMED, `stream: ${stream}`);
    }
  });
});

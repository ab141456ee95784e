/**
 * A Responses request using what only a native target serves well (a built-in tool: Codex declares
 * `web_search` in every request) on an alias of a native Responses target and a translated one: the native
 * target answers whenever it can, whatever the strategy or the weights, and when it fails the translated target
 * answers as a fallback, without the built-in tool and naming it (`x-gateway-dropped`, the usage record's
 * `dropped`). Before, such a request went to the native targets only, so Codex got the native target's 5xx
 * although the alias could answer. A `strict` alias refuses the drop: native targets only.
 */
import assert from "node:assert/strict";
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { NATIVE_KEY, startFakeNativeResponses } from "../helpers/fake_openai_responses.ts";
import { startFakes } from "../helpers/fakes.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import type { InProcessGateway } from "../helpers/in_process.ts";
import { withInProcessGateway } from "../helpers/with_gateway.ts";

type Fakes = ReturnType<typeof start>;

function start() {
  return startFakes({ native: startFakeNativeResponses, anthropic: startFakeAnthropic });
}

function config(fakes: Fakes): string {
  const native = (model: string, extra = "") => `{ provider: native, model: ${model}, retries: 0${extra} }`;
  const claude = (extra = "") => `{ provider: claude, model: claude-ok, retries: 0${extra} }`;
  return `
routing: { backoff_base: 5ms, backoff_max: 10ms }
providers:
  native: { type: openai, base_url: "${fakes.native.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
  claude: { type: anthropic, base_url: "${fakes.anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
models:
  chat-failing-native: { type: chat, targets: [${native("resp-500")}, ${claude()}] }
  chat-weighted: { type: chat, strategy: weighted, targets: [${claude(", weight: 1000")}, ${
    native("resp-plain", ", weight: 1")
  }] }
  chat-latency: { type: chat, strategy: latency, targets: [${claude()}, ${native("resp-plain")}] }
  chat-strict: { type: chat, strict: true, targets: [${native("resp-500")}, ${claude()}] }
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: InProcessGateway, fakes: Fakes) => Promise<void>): Promise<void> {
  return withInProcessGateway(() => {
    const fakes = start();
    return { fakes, config: config(fakes) };
  }, fn);
}

/** A request as Codex 0.171 makes it: a function tool, then the built-in `web_search` (`tools[1]`). */
function codexTurn(model: string, stream: boolean): Record<string, unknown> {
  return {
    model,
    stream,
    store: false,
    input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }],
    tools: [
      {
        type: "function",
        name: "exec_command",
        description: "Runs a command",
        parameters: { type: "object", properties: { cmd: { type: "string" } }, required: ["cmd"] },
        strict: false,
      },
      { type: "web_search", external_web_access: true },
    ],
    tool_choice: "auto",
    parallel_tool_calls: false,
  };
}

function post(gw: InProcessGateway, body: Record<string, unknown>): Promise<Response> {
  return gw.fetch("/v1/responses", {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

Deno.test("responses: a built-in tool's request falls back to the alias's translated target when the native one fails", async () => {
  await withGateway(async (gw, fakes) => {
    for (const stream of [true, false]) {
      const records = gw.records.length;
      const response = await post(gw, codexTurn("chat-failing-native", stream));
      const text = await response.text();
      assert.equal(response.status, 200, `stream=${stream}: ${text.slice(0, 300)}`);
      assert.equal(response.headers.get("x-gateway-provider"), "claude");
      assert.equal(response.headers.get("x-gateway-dropped"), "tools[1]");
      const sent = fakes.anthropic.requests.at(-1)!.body;
      assert.deepEqual((sent.tools as { name: string }[]).map((t) => t.name), ["exec_command"]);
      assert.equal(gw.records.length, records + 1, "one usage record");
      const record = gw.records.at(-1)!;
      assert.equal(record.dropped, "tools[1]");
      assert.equal(record.provider, "claude");
    }
    // The native target was asked first, each time.
    assert.ok(fakes.native.requests.length >= 1);
  });
});

Deno.test("responses: a healthy native target answers a built-in tool's request whatever the strategy and weights", async () => {
  await withGateway(async (gw, fakes) => {
    for (const model of ["chat-weighted", "chat-latency"]) {
      for (let i = 0; i < 12; i++) {
        const response = await post(gw, codexTurn(model, false));
        const body = await response.json();
        assert.equal(response.status, 200, `${model}: ${JSON.stringify(body)}`);
        assert.equal(response.headers.get("x-gateway-provider"), "native", model);
        assert.equal(response.headers.get("x-gateway-dropped"), null);
        // The native target got the built-in tool as sent.
        const tools = fakes.native.requests.at(-1)!.body.tools as { type: string }[];
        assert.deepEqual(tools.map((t) => t.type), ["function", "web_search"]);
      }
    }
    assert.equal(fakes.anthropic.requests.length, 0, "the translated target was never needed");
  });
});

Deno.test("responses: a strict alias sends a built-in tool's request to its native targets only", async () => {
  await withGateway(async (gw, fakes) => {
    const response = await post(gw, codexTurn("chat-strict", false));
    await response.body?.cancel();
    assert.equal(response.status, 502, "the native target's failure");
    assert.equal(response.headers.get("x-gateway-dropped"), null);
    assert.equal(fakes.anthropic.requests.length, 0);
  });
});

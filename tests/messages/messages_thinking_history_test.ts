/**
 * Thinking in a Messages conversation's history, where its turns were answered by different kinds of target.
 * Claude Code keeps every thinking block it was shown and sends it back with the turn it belongs to:
 *
 * - On a chat target that thinks (Kimi K2, DeepSeek in thinking mode), the next turn of a tool loop is refused
 *   ("thinking is enabled but reasoning_content is missing in assistant tool call message") unless the turn
 *   that called the tools carries its reasoning back: the gateway showed that reasoning as a thinking block,
 *   and the block's text goes back as the turn's `reasoning_content`.
 * - On a Claude target (an alias's fallback, or a user switching models mid-session), the thinking block the
 *   gateway made has no Claude signature, and Anthropic refuses it ("Invalid `signature` in `thinking` block"):
 *   it is left out, thinking is turned off when the tool loop's last turn then starts without one (Claude
 *   requires one there), and both are named in `x-gateway-dropped` and the usage record.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import type { InProcessGateway } from "../helpers/in_process.ts";
import { type RawRequest, type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";
import { FAKE_CLAUDE_SIGNATURE, type FakeAnthropic, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { json } from "../helpers/mixed_vendors.ts";
import { thinkingToolTurnRefusal } from "../helpers/vendor_refusals.ts";
import { withInProcessGateway } from "../helpers/with_gateway.ts";

type Json = Record<string, unknown>;

const REASONING = "The user wants a file: I should call write.";
const TOOLS = [{
  name: "write",
  description: "Write a file",
  input_schema: { type: "object", properties: { path: { type: "string" } } },
}];
const THINKING = { thinking: { type: "enabled", budget_tokens: 2048 } };

/** A chat completion of `message`, as Kimi K2 answers. */
const completion = (message: Json, finish: string): RawStep =>
  json({
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model: "kimi-k2-thinking",
    choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: finish }],
    usage: { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 },
  });

const THINK_THEN_CALL = completion({
  content: null,
  reasoning_content: REASONING,
  tool_calls: [{
    id: "call_0",
    type: "function",
    function: { name: "write", arguments: '{"path":"a.txt"}' },
  }],
}, "tool_calls");

/**
 * Kimi K2 in thinking mode: refuses a tool-calling assistant turn without its `reasoning_content` (its words),
 * else reasons and calls `write`, or answers once the tool has run.
 */
function kimi(request: RawRequest, down: boolean): RawStep {
  if (down) {
    return {
      status: 500,
      headers: { "content-type": "application/json" },
      chunks: [JSON.stringify({ error: { message: "server overloaded", type: "server_error" } })],
    };
  }
  const body = JSON.parse(request.body) as Json;
  const messages = (body.messages ?? []) as Json[];
  const message = thinkingToolTurnRefusal(body);
  if (message !== null) {
    return {
      status: 400,
      headers: { "content-type": "application/json" },
      chunks: [JSON.stringify({ error: { message, type: "invalid_request_error" } })],
    };
  }
  return messages.at(-1)?.role === "tool" ? completion({ content: "Written." }, "stop") : THINK_THEN_CALL;
}

interface Fakes {
  kimi: ReturnType<typeof startRawUpstream>;
  /** Whether Kimi answers 500 (its target fails, and the alias falls back). */
  kimiDown: boolean;
  claude: FakeAnthropic;
}

function withGateway(fn: (gw: InProcessGateway, fakes: Fakes) => Promise<void>) {
  return withInProcessGateway(() => {
    const kimiUp = startRawUpstream();
    const claude = startFakeAnthropic();
    const fakes: Fakes = { kimi: kimiUp, kimiDown: false, claude };
    kimiUp.stepFor = (request) => kimi(request, fakes.kimiDown);
    const config = `
providers:
  moonshot: { type: openai, base_url: "${kimiUp.url}/v1", api_key: "sk-moonshot-key-abcdef0123456789" }
  anthropic: { type: anthropic, base_url: "${claude.baseURL}", api_key: "sk-ant-fake-key-0123456789abcdef" }
models:
  chat-kimi: { type: chat, targets: [{ provider: moonshot, model: kimi-k2-thinking, retries: 0 }] }
  chat-claude: { type: chat, targets: [{ provider: anthropic, model: claude-ok, retries: 0 }] }
  chat-kimi-then-claude:
    type: chat
    targets:
      - { provider: moonshot, model: kimi-k2-thinking, retries: 0 }
      - { provider: anthropic, model: claude-ok, retries: 0 }
${TEST_TOKENS_YAML}`;
    return {
      fakes,
      config,
      stop: async () => {
        await kimiUp.stop();
        await claude.stop();
      },
    };
  }, fn);
}

/** A Messages request with Claude Code's tools and thinking (a count: without `max_tokens`, which it refuses). */
async function messages(gw: InProcessGateway, body: Json, count = false): Promise<Response> {
  return await gw.fetch(count ? "/v1/messages/count_tokens" : "/v1/messages", {
    method: "POST",
    headers: {
      "x-api-key": TEST_TOKEN,
      "anthropic-version": "2023-06-01",
      "content-type": "application/json",
    },
    body: JSON.stringify({ ...(count ? {} : { max_tokens: 4096 }), tools: TOOLS, ...THINKING, ...body }),
  });
}

/** The first turn of Claude Code's tool loop and what the gateway answered it with. */
async function firstTurn(gw: InProcessGateway, model: string): Promise<Json[]> {
  const ask = { role: "user", content: "Write a.txt" };
  const response = await messages(gw, { model, messages: [ask] });
  const message = await response.json();
  assert.equal(response.status, 200, JSON.stringify(message));
  return [ask, { role: "assistant", content: message.content }];
}

/** The tool's result for the first turn's call. */
function toolResult(history: Json[]): Json {
  const blocks = history[1].content as Json[];
  const call = blocks.find((b) => b.type === "tool_use")!;
  return { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "ok" }] };
}

Deno.test("messages thinking history: a chat target's reasoning goes back with the tool loop it belongs to", async () => {
  await withGateway(async (gw, fakes) => {
    const history = await firstTurn(gw, "chat-kimi");
    // The reasoning was shown as a thinking block: no Claude signature to give.
    assert.deepEqual((history[1].content as Json[])[0], {
      type: "thinking",
      thinking: REASONING,
      signature: "",
    });
    const response = await messages(gw, { model: "chat-kimi", messages: [...history, toolResult(history)] });
    const body = await response.json();
    assert.equal(response.status, 200, JSON.stringify(body));
    assert.deepEqual(body.content, [{ type: "text", text: "Written." }]);
    const sent = JSON.parse(fakes.kimi.requests.at(-1)!.body);
    const assistant = sent.messages.find((m: Json) => m.role === "assistant");
    assert.equal(assistant.reasoning_content, REASONING);
    // The block itself (its signature) is not sent, and the answer still says so.
    assert.equal(response.headers.get("x-gateway-dropped-thinking"), "1");
  });
});

Deno.test("messages thinking history: a tool loop begun on a chat target goes on on Claude", async () => {
  await withGateway(async (gw, fakes) => {
    const history = await firstTurn(gw, "chat-kimi-then-claude");
    // Kimi is down for the next turn: the alias falls back to Claude, which checks every thinking signature.
    fakes.kimiDown = true;
    const response = await messages(gw, {
      model: "chat-kimi-then-claude",
      messages: [...history, toolResult(history)],
    });
    const body = await response.json();
    assert.equal(response.status, 200, JSON.stringify(body));
    assert.deepEqual(body.content.map((b: Json) => b.type), ["text"], "answered without thinking");
    const sent = fakes.claude.requests.at(-1)!.body;
    assert.deepEqual(
      (sent.messages as Json[])[1].content,
      [(history[1].content as Json[])[1]],
      "the call alone",
    );
    assert.equal(sent.thinking, undefined);
    const dropped = "messages.1.content.0,thinking";
    assert.equal(response.headers.get("x-gateway-dropped"), dropped);
    assert.equal(gw.records.at(-1)?.dropped, dropped);
  });
});

Deno.test("messages thinking history: switched to Claude mid-session, its thinking stays on where it can", async () => {
  await withGateway(async (gw, fakes) => {
    const history = await firstTurn(gw, "chat-kimi");
    const done = await messages(gw, { model: "chat-kimi", messages: [...history, toolResult(history)] });
    const answer = await done.json();
    // The user switches to Claude for the next question: the loop is over, so Claude may think again.
    const next = [
      ...history,
      toolResult(history),
      { role: "assistant", content: answer.content },
      { role: "user", content: "Now read it back." },
    ];
    const response = await messages(gw, { model: "chat-claude", messages: next });
    const body = await response.json();
    assert.equal(response.status, 200, JSON.stringify(body));
    assert.equal(body.content[0].type, "thinking", "Claude thought");
    assert.equal(body.content[0].signature, FAKE_CLAUDE_SIGNATURE, "signed by Claude");
    const sent = fakes.claude.requests.at(-1)!.body;
    assert.deepEqual(sent.thinking, THINKING.thinking);
    assert.equal(JSON.stringify(sent.messages).includes('"signature":""'), false);
    assert.equal(response.headers.get("x-gateway-dropped"), "messages.1.content.0");
    // Claude's own thinking, signed, goes back to it as it came.
    const signed = [...next, { role: "assistant", content: body.content }, {
      role: "user",
      content: "Thanks.",
    }];
    const again = await messages(gw, { model: "chat-claude", messages: signed });
    await again.body?.cancel();
    assert.equal(again.status, 200);
    assert.equal(again.headers.get("x-gateway-dropped"), "messages.1.content.0");
    // A count asks Claude about the same body, and names the same.
    const count = await messages(gw, { model: "chat-claude", messages: next }, true);
    await count.body?.cancel();
    assert.equal(count.status, 200);
    assert.equal(count.headers.get("x-gateway-dropped"), "messages.1.content.0");
  });
});

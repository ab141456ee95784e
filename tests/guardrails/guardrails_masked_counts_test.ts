/**
 * The token counts (Messages `count_tokens`, Responses `input_tokens`, Gemini `countTokens`) and Responses
 * `compact` of a request whose input guardrail changed a text the client's native body cannot carry (a tool
 * call's arguments, which the chat form re-serializes): as `/v1/messages`, `/v1/responses` and
 * `generateContent` serve such a request over the chat form, none of them sends the client's own body, which
 * still holds the text as the client wrote it, to any upstream. A Claude or Gemini target counts the chat
 * form, OpenAI's Responses counting endpoint (which counts only a Responses body) leaves the count to the
 * gateway, and a compaction is the alias's own summary of the chat form; each names what that form went
 * without in `x-gateway-dropped`. Every fake records what it was sent; the webhook guardrail replaces `MASK`.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN } from "../helpers/gateway.ts";
import type { InProcessGateway } from "../helpers/in_process.ts";
import {
  anthropic,
  contentDocument,
  decoded,
  droppedOf,
  type Fakes,
  LOOKUP,
  MASK,
  MASKED,
  withGateway,
} from "./masked_native_gateway.ts";

/** Every body an upstream was sent (the guardrail's webhook aside), with its path, as JSON text. */
function upstreamBodies(fakes: Fakes): { path: string; body: string }[] {
  return [
    ...fakes.responses.requests.map((r) => ({ path: `responses ${r.path}`, body: decoded(r.body) })),
    ...fakes.chat.requests.map((r) => ({ path: `chat ${r.path}`, body: decoded(r.body) })),
    ...fakes.claude.requests.map((r) => ({ path: `claude ${r.path}`, body: decoded(r.body) })),
    ...fakes.gemini.requests.map((r) => ({ path: `gemini ${r.method}`, body: decoded(r.body) })),
  ];
}

/** Asserts that no upstream was ever sent the text the guardrail replaced. */
function assertNeverSent(fakes: Fakes, what: string): void {
  for (const sent of upstreamBodies(fakes)) {
    assert.ok(!sent.body.includes(MASK), `${what}: ${sent.path} was sent the masked text: ${sent.body}`);
  }
}

/** A Responses conversation whose tool call's arguments hold `MASK`, with a reasoning item the chat form lacks. */
const RESPONSES_INPUT = [
  { role: "user", content: "look it up" },
  { type: "function_call", call_id: "c1", name: "lookup", arguments: `{"q":"${MASK}"}` },
  { type: "function_call_output", call_id: "c1", output: "found" },
  {
    type: "reasoning",
    id: "rs_lost",
    summary: [{ type: "summary_text", text: "weighing the result" }],
    encrypted_content: "enc-lost-state",
  },
  { role: "user", content: "thanks" },
];

function postJson(gw: InProcessGateway, path: string, headers: Record<string, string>, body: unknown) {
  return gw.fetch(path, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

const OPENAI_AUTH = { authorization: `Bearer ${TEST_TOKEN}` };

Deno.test("guardrails masked counts: Messages count_tokens of a change the body cannot carry has Claude count the chat form", async () => {
  await withGateway(async (_gw, fakes) => {
    const before = fakes.claude.requests.length;
    const counted = await anthropic(_gw).messages.countTokens({
      model: "chat-claude",
      tools: [LOOKUP],
      messages: [
        { role: "user", content: "look it up" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "lookup", input: { q: MASK } }] },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "t1", content: [contentDocument("record 7")] }],
        },
      ],
    }).withResponse();
    assertNeverSent(fakes, "messages count_tokens");
    const sent = fakes.claude.requests.slice(before);
    assert.deepEqual(sent.map((r) => r.path), ["/v1/messages/count_tokens"]);
    const body = decoded(sent[0].body);
    assert.ok(body.includes(MASKED), body);
    assert.ok(!body.includes("record 7"), `the chat form was counted: ${body}`);
    assert.equal(typeof counted.data.input_tokens, "number");
    assert.equal((counted.data as { estimated?: boolean }).estimated, undefined, "Claude counted it");
    assert.deepEqual(droppedOf(counted.response), [
      "messages.2.content.0.content.0.source.type",
      "messages.2.content.0.content.0.source.content.0.text",
    ]);
  });
});

Deno.test("guardrails masked counts: Responses input_tokens of a change the body cannot carry is the gateway's count", async () => {
  await withGateway(async (gw, fakes) => {
    const before = fakes.responses.requests.length;
    const res = await postJson(gw, "/v1/responses/input_tokens", OPENAI_AUTH, {
      model: "chat-resp",
      input: RESPONSES_INPUT,
    });
    assert.equal(res.status, 200, await res.clone().text());
    const answer = await res.json();
    assertNeverSent(fakes, "responses input_tokens");
    assert.equal(fakes.responses.requests.length, before, "OpenAI counts only the client's body: not asked");
    assert.equal(answer.object, "response.input_tokens");
    assert.equal(typeof answer.input_tokens, "number");
    assert.equal(answer.estimated, true);
    assert.equal(gw.records.at(-1)!.tokens_estimated, true);
  });
});

Deno.test("guardrails masked counts: Gemini countTokens of a change the body cannot carry has Gemini count the chat form", async () => {
  await withGateway(async (gw, fakes) => {
    const before = fakes.gemini.requests.length;
    const res = await postJson(gw, "/v1beta/models/chat-gem:countTokens", { "x-goog-api-key": TEST_TOKEN }, {
      contents: [
        { role: "user", parts: [{ text: "look it up" }] },
        {
          role: "model",
          parts: [{ text: "pondering the lookup", thought: true }, {
            functionCall: { name: "lookup", args: { q: MASK } },
          }],
        },
        { role: "user", parts: [{ functionResponse: { name: "lookup", response: { found: true } } }] },
      ],
    });
    assert.equal(res.status, 200, await res.clone().text());
    const answer = await res.json();
    assertNeverSent(fakes, "gemini countTokens");
    const sent = fakes.gemini.requests.slice(before);
    assert.deepEqual(sent.map((r) => r.method), ["countTokens"]);
    const body = decoded(sent[0].body);
    assert.ok(body.includes(MASKED), body);
    assert.ok(!body.includes("pondering the lookup"), `the chat form was counted: ${body}`);
    assert.equal(typeof answer.totalTokens, "number");
    assert.equal(answer.estimated, undefined, "Gemini counted it");
    assert.deepEqual(droppedOf(res), ["contents[1].parts[0].text"]);
  });
});

Deno.test("guardrails masked counts: Responses compact of a change the body cannot carry is the alias's summary of the chat form", async () => {
  await withGateway(async (gw, fakes) => {
    const native = fakes.responses.requests.length;
    const chat = fakes.chat.requests.length;
    const res = await postJson(gw, "/v1/responses/compact", OPENAI_AUTH, {
      model: "chat-resp",
      input: RESPONSES_INPUT,
    });
    assert.equal(res.status, 200, await res.clone().text());
    const answer = await res.json();
    assertNeverSent(fakes, "responses compact");
    assert.equal(fakes.responses.requests.length, native, "the native compaction was not asked");
    const summarised = fakes.chat.requests.slice(chat);
    assert.equal(summarised.length, 1);
    assert.ok(decoded(summarised[0].body).includes(MASKED), decoded(summarised[0].body));
    // A compaction the client sends back as it would an upstream's: the gateway's own item, which it reads.
    assert.equal(answer.object, "response.compaction");
    const item = answer.output.at(-1);
    assert.equal(item.type, "compaction");
    assert.ok(String(item.encrypted_content).startsWith("gwc1."), JSON.stringify(item));
    assert.deepEqual(droppedOf(res), ["input[3].summary[0].text", "input[3].encrypted_content"]);
  });
});

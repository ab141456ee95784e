/**
 * Function responses through the Gemini API to a translated (OpenAI-compatible) target, over real sockets: each
 * tool message the upstream gets answers a call of the assistant message before it, as OpenAI requires (it
 * refuses the request otherwise), for the histories real clients send: Google's documented manual loop with
 * `@google/genai` (the model's turn sent back with its call ids, the responses without), parallel calls of one
 * name answered in order, and Gemini CLI's (calls without ids, responses with ids the CLI made itself).
 */
import assert from "node:assert/strict";
import { type Content, GoogleGenAI, Type } from "@google/genai";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { type ScriptedChat, startScriptedChat } from "../helpers/scripted_chat.ts";
import type { JsonObject } from "../../lib/openai/types.ts";

/**
 * Why OpenAI would refuse `messages`, or null: each assistant message's tool calls must be answered by the tool
 * messages right after it, and each of those must answer one of its calls, once.
 */
function pairingError(messages: JsonObject[]): string | null {
  for (let i = 0; i < messages.length; i++) {
    const calls = messages[i].tool_calls as { id: string }[] | undefined;
    if (calls === undefined) continue;
    const open = new Set(calls.map((c) => c.id));
    let j = i + 1;
    for (; j < messages.length && messages[j].role === "tool"; j++) {
      const id = String(messages[j].tool_call_id);
      if (!open.delete(id)) return `messages[${j}]: '${id}' answers no open call of messages[${i}]`;
    }
    if (open.size > 0) return `messages[${i}]: ${[...open].join(", ")} not answered`;
  }
  return null;
}

async function withScripted(fn: (gw: TestGateway, up: ScriptedChat) => Promise<void>) {
  const up = startScriptedChat();
  const gw = await startGateway(`
providers:
  oa: { type: openai, base_url: "${up.baseURL}", api_key: sk-scripted-0123456789 }
models:
  chat-oa: { type: chat, targets: [ { provider: oa, model: scripted, retries: 0 } ] }
${TEST_TOKENS_YAML}`);
  try {
    await fn(gw, up);
  } finally {
    await gw.stop();
    await up.stop();
  }
}

const TOOLS = [{
  functionDeclarations: [{
    name: "lookup",
    parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } } },
  }],
}];

async function generate(gw: TestGateway, contents: unknown[]) {
  const res = await fetch(`${gw.url}/v1beta/models/chat-oa:generateContent`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-goog-api-key": TEST_TOKEN },
    body: JSON.stringify({ contents, tools: TOOLS }),
  });
  return { status: res.status, body: await res.json() };
}

Deno.test("gemini pairing: Google's manual function-calling loop, responses without ids, reaches OpenAI paired", async () => {
  await withScripted(async (gw, up) => {
    up.answer = (body) =>
      (body.messages as JsonObject[]).some((m) => m.role === "tool")
        ? { content: ["It is 21C."] }
        : { toolArguments: ['{"city":"Paris"}'] };
    const ai = new GoogleGenAI({
      apiKey: TEST_TOKEN,
      apiVersion: "v1beta",
      httpOptions: { baseUrl: gw.url },
    });
    const contents: Content[] = [{ role: "user", parts: [{ text: "Weather in Paris?" }] }];
    const first = await ai.models.generateContent({ model: "chat-oa", contents, config: { tools: TOOLS } });
    const turn = first.candidates![0].content!;
    assert.equal(turn.parts![0].functionCall?.id, "call_1", "the upstream's call id reaches the client");
    // As Google's docs write the loop: the model's turn appended, then the response by name only.
    contents.push(turn, {
      role: "user",
      parts: [{ functionResponse: { name: "lookup", response: { result: "21C" } } }],
    });
    const second = await ai.models.generateContent({ model: "chat-oa", contents, config: { tools: TOOLS } });
    assert.equal(second.text, "It is 21C.");
    const sent = up.seen.at(-1)!.messages as JsonObject[];
    assert.equal(pairingError(sent), null, JSON.stringify(sent));
    assert.equal(sent.at(-1)!.tool_call_id, "call_1");
  });
});

Deno.test("gemini pairing: parallel calls of one name, and Gemini CLI's own call ids, each answer their call", async () => {
  await withScripted(async (gw, up) => {
    const ask = { role: "user", parts: [{ text: "Weather in Paris and Rome?" }] };
    const call = (city: string, id?: string) => ({ functionCall: { name: "lookup", args: { city }, id } });
    const response = (t: string, id?: string) => ({
      functionResponse: { name: "lookup", response: { t }, id },
    });
    const histories = [
      // An Anthropic-served turn's two calls of one name, answered in order without ids.
      [ask, { role: "model", parts: [call("Paris", "toolu_A"), call("Rome", "toolu_B")] }, {
        role: "user",
        parts: [response("21"), response("25")],
      }],
      // Gemini CLI: the call came without an id, the CLI answers it under the id it made.
      [ask, { role: "model", parts: [call("Paris")] }, {
        role: "user",
        parts: [response("21", "lookup-1733000000000-9f3a2c")],
      }],
    ];
    for (const contents of histories) {
      const answer = await generate(gw, contents);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      const sent = up.seen.at(-1)!.messages as JsonObject[];
      assert.equal(pairingError(sent), null, JSON.stringify(sent));
    }
  });
});

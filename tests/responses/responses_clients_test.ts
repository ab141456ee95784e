/**
 * `POST /v1/responses` with the third-party clients new users point at the gateway unchanged: the Vercel AI
 * SDK's default OpenAI model (`createOpenAI({ baseURL })(alias)` speaks Responses) and the OpenAI Agents SDK's
 * default model provider. Each runs against a gateway on a real socket in front of the fake OpenAI-compatible
 * chat upstream, so every request is translated, and each drives a whole tool round trip: the model calls
 * the tool, the client runs it and sends its output back, and the model answers. The AI SDK's usual second
 * turn (store on, its default) refers to its first answer by id (`item_reference`), resolved by the gateway.
 *
 * Needs `--allow-sys=hostname` (in `deno task test` and CI): `ai` loads `@vercel/oidc`, which reads
 * `os.hostname()` for its user agent when it is loaded. Without the permission Deno rejects that load, and the
 * Agents SDK's `unhandledRejection` listener (installed with its trace provider) then ends the process with only
 * "Unhandled rejection object", before any test runs.
 */
import assert from "node:assert/strict";
import { createOpenAI } from "@ai-sdk/openai";
import { Agent, run, setDefaultOpenAIClient, setTracingDisabled, tool as agentTool } from "@openai/agents";
import { generateText, type ModelMessage, stepCountIs, streamText, tool } from "ai";
import OpenAI from "openai";
import { z } from "zod";
import { FAKE_ANSWER, FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";

// The Agents SDK exports traces to OpenAI by default: these tests must not touch the network.
setTracingDisabled(true);

function configFor(fake: FakeUpstream): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  fake: { type: openai, base_url: "${fake.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-fake: { type: chat, targets: [ { provider: fake, model: gpt-ok } ] }
  chat-tools: { type: chat, targets: [ { provider: fake, model: gpt-tools } ] }
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: TestGateway, fake: FakeUpstream) => Promise<void>) {
  return withFakeGateway(startFakeOpenAI, configFor, fn);
}

/** The access-log paths of the requests the gateway served for `alias`. */
async function pathsFor(gw: TestGateway, alias: string): Promise<string[]> {
  await waitForLog(gw, (l) => l.msg === "request" && l.alias === alias);
  return gw.logs.filter((l) => l.msg === "request" && l.alias === alias).map((l) => String(l.path));
}

Deno.test("vercel ai sdk: generateText with the default model goes to /v1/responses", async () => {
  await withGateway(async (gw, fake) => {
    const openai = createOpenAI({ baseURL: gw.baseURL, apiKey: TEST_TOKEN });
    const result = await generateText({ model: openai("chat-fake"), prompt: "Say hello.", maxRetries: 0 });
    assert.equal(result.text, FAKE_ANSWER);
    assert.equal(result.finishReason, "stop");
    assert.equal(result.usage.inputTokens, 11);
    assert.equal(result.usage.outputTokens, 7);
    assert.deepEqual(await pathsFor(gw, "chat-fake"), ["/v1/responses"]);
    const messages = fake.requests.at(-1)!.body.messages as Record<string, unknown>[];
    assert.deepEqual(messages.at(-1), { role: "user", content: [{ type: "text", text: "Say hello." }] });
  });
});

Deno.test("vercel ai sdk: streamText streams the answer through /v1/responses", async () => {
  await withGateway(async (gw) => {
    const openai = createOpenAI({ baseURL: gw.baseURL, apiKey: TEST_TOKEN });
    const result = streamText({ model: openai("chat-fake"), prompt: "Say hello.", maxRetries: 0 });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    assert.ok(deltas.length > 1, `the answer arrives in pieces: ${JSON.stringify(deltas)}`);
    assert.equal(deltas.join(""), FAKE_ANSWER);
    assert.equal(await result.finishReason, "stop");
    assert.deepEqual(await pathsFor(gw, "chat-fake"), ["/v1/responses"]);
  });
});

Deno.test("vercel ai sdk: a second turn with store on refers to the first answer by id, and it resolves", async () => {
  await withGateway(async (gw, fake) => {
    // The requests the SDK sends, as it sends them.
    const sent: Record<string, unknown>[] = [];
    const recording: typeof fetch = (input, init) => {
      if (typeof init?.body === "string") sent.push(JSON.parse(init.body));
      return fetch(input, init);
    };
    const openai = createOpenAI({ baseURL: gw.baseURL, apiKey: TEST_TOKEN, fetch: recording });
    const question: ModelMessage = { role: "user", content: "Say hello." };
    const first = await generateText({ model: openai("chat-fake"), messages: [question], maxRetries: 0 });
    assert.equal(first.text, FAKE_ANSWER);
    const second = await generateText({
      model: openai("chat-fake"),
      messages: [question, ...first.response.messages, { role: "user", content: "Once more." }],
      maxRetries: 0,
    });
    assert.equal(second.text, FAKE_ANSWER);
    // The SDK's default (store on) sent the earlier answer as a reference to the stored output item…
    const firstId = (first.providerMetadata?.openai as { responseId?: string } | undefined)?.responseId;
    assert.ok(firstId?.startsWith("resp_"));
    const input = sent[1].input as Record<string, unknown>[];
    const stored = await fetch(`${gw.baseURL}/responses/${firstId}`, {
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
    }).then((r) => r.json()) as { output: { id: string }[] };
    assert.deepEqual(input[1], { type: "item_reference", id: stored.output[0].id });
    // …and the gateway put the item itself in its place for the upstream.
    const messages = fake.requests.at(-1)!.body.messages as Record<string, unknown>[];
    assert.deepEqual(messages.map((m) => [m.role, JSON.stringify(m.content)]), [
      ["user", JSON.stringify([{ type: "text", text: "Say hello." }])],
      ["assistant", JSON.stringify(FAKE_ANSWER)],
      ["user", JSON.stringify([{ type: "text", text: "Once more." }])],
    ]);
  });
});

/** The tool-result message the fake upstream received for `call_1`, the call `gpt-tools` always makes. */
function toolResultSent(fake: FakeUpstream): Record<string, unknown> | undefined {
  const last = fake.requests.at(-1)!.body.messages as Record<string, unknown>[];
  return last.find((m) => m.role === "tool" && m.tool_call_id === "call_1");
}

Deno.test("vercel ai sdk: a tool call is executed and its result reaches the model", async () => {
  await withGateway(async (gw, fake) => {
    const openai = createOpenAI({ baseURL: gw.baseURL, apiKey: TEST_TOKEN });
    const calls: string[] = [];
    const result = await generateText({
      // `chat-tools` always calls get_weather, so the step after the tool's result answers with `chat-fake`.
      model: openai("chat-tools"),
      prepareStep: ({ stepNumber }) => stepNumber > 0 ? { model: openai("chat-fake") } : undefined,
      tools: {
        get_weather: tool({
          description: "The weather in a city.",
          inputSchema: z.object({ city: z.string() }),
          execute: ({ city }) => {
            calls.push(city);
            return Promise.resolve({ city, forecast: "sunny" });
          },
        }),
      },
      stopWhen: stepCountIs(3),
      prompt: "What is the weather in Paris?",
      maxRetries: 0,
    });
    assert.deepEqual(calls, ["Paris"], "the SDK ran the tool with the model's arguments");
    assert.deepEqual(result.steps.map((s) => s.finishReason), ["tool-calls", "stop"]);
    assert.equal(result.text, FAKE_ANSWER);
    // The function_call_output the SDK sent back reached the upstream as the tool's answer.
    assert.deepEqual(toolResultSent(fake), {
      role: "tool",
      tool_call_id: "call_1",
      content: JSON.stringify({ city: "Paris", forecast: "sunny" }),
    });
    assert.deepEqual(await pathsFor(gw, "chat-tools"), ["/v1/responses"]);
    assert.deepEqual(await pathsFor(gw, "chat-fake"), ["/v1/responses"]);
  });
});

Deno.test("openai agents sdk: the default model runs a tool and gives the final output", async () => {
  await withGateway(async (gw, fake) => {
    setDefaultOpenAIClient(new OpenAI({ baseURL: gw.baseURL, apiKey: TEST_TOKEN, maxRetries: 0 }));
    const calls: string[] = [];
    const getWeather = agentTool({
      name: "get_weather",
      description: "The weather in a city.",
      parameters: z.object({ city: z.string() }),
      execute: ({ city }) => {
        calls.push(city);
        return Promise.resolve(`It is sunny in ${city}.`);
      },
    });
    const agent = new Agent({
      name: "Weather",
      instructions: "Answer briefly.",
      model: "chat-tools",
      tools: [getWeather],
    });
    // `chat-tools` always calls get_weather, so the turn after the tool's result answers with `chat-fake`
    // (the runner resolves the agent's model on every turn).
    agent.on("agent_tool_end", () => {
      agent.model = "chat-fake";
    });
    const result = await run(agent, "What is the weather in Paris?");
    assert.deepEqual(calls, ["Paris"], "the SDK ran the tool with the model's arguments");
    assert.equal(result.finalOutput, FAKE_ANSWER);
    assert.deepEqual(toolResultSent(fake), {
      role: "tool",
      tool_call_id: "call_1",
      content: "It is sunny in Paris.",
    });
    assert.deepEqual(await pathsFor(gw, "chat-tools"), ["/v1/responses"]);
    assert.deepEqual(await pathsFor(gw, "chat-fake"), ["/v1/responses"]);
  });
});

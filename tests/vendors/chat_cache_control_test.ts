/**
 * End to end with the official `openai` SDK: the Anthropic prompt-caching markers that clients of Claude send
 * through an OpenAI-compatible API (`cache_control` on a message, as opencode does for a model named "claude",
 * on a content part, as LiteLLM and OpenRouter callers do, or on a tool definition, as nanobot does) reach a
 * Claude target as Anthropic's API and
 * Bedrock's Converse take them, the upstream's cache reads come back as `cached_tokens`, more than the four a
 * request may carry still go out (with four, naming the rest in `x-gateway-dropped`), and a target with no such
 * markers names them all.
 */
import assert from "node:assert/strict";
import type OpenAI from "openai";
import {
  FAKE_ANTHROPIC_KEY,
  FAKE_CACHE_USAGE,
  type FakeAnthropic,
  startFakeAnthropic,
} from "../helpers/fake_anthropic.ts";
import {
  FAKE_AWS,
  FAKE_BEDROCK_CACHE_READ,
  FAKE_REGION,
  type FakeBedrock,
  startFakeBedrock,
} from "../helpers/fake_bedrock.ts";
import { FAKE_GEMINI_KEY, type FakeGemini, startFakeGemini } from "../helpers/fake_gemini.ts";
import { TEST_TOKENS_YAML, waitForLog } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";

/** The marker opencode and Anthropic's clients send. */
const EPHEMERAL = { type: "ephemeral" };

/**
 * A request as opencode sends one to a Claude model behind an OpenAI-compatible provider: its first two system
 * messages and last two other messages marked, on the message when its content is a string, on its last part
 * when it is a list. Typed loosely: the SDK's types have no `cache_control`.
 */
const OPENCODE_MESSAGES = [
  { role: "system", content: "You are opencode, an interactive CLI agent.", cache_control: EPHEMERAL },
  { role: "system", content: "Project instructions from AGENTS.md.", cache_control: EPHEMERAL },
  { role: "user", content: "Where is the bug?" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{
      id: "call_1",
      type: "function",
      function: { name: "read", arguments: '{"path":"a.ts"}' },
    }],
  },
  { role: "tool", tool_call_id: "call_1", content: "export const a = 1;", cache_control: EPHEMERAL },
  {
    role: "user",
    content: [{ type: "text", text: "Now fix the bug." }, {
      type: "text",
      text: "Be brief.",
      cache_control: EPHEMERAL,
    }],
  },
] as unknown as OpenAI.ChatCompletionMessageParam[];

/** Six markers, two past the limit: on both system messages, and on each of the four other messages. */
const SIX_MARKERS = [
  { role: "system", content: "System one.", cache_control: EPHEMERAL },
  { role: "system", content: [{ type: "text", text: "System two.", cache_control: EPHEMERAL }] },
  { role: "user", content: "First question.", cache_control: EPHEMERAL },
  { role: "assistant", content: "First answer.", cache_control: EPHEMERAL },
  { role: "user", content: [{ type: "text", text: "Second question.", cache_control: EPHEMERAL }] },
  { role: "assistant", content: "Second answer.", cache_control: EPHEMERAL },
  { role: "user", content: "Third question.", cache_control: EPHEMERAL },
] as unknown as OpenAI.ChatCompletionMessageParam[];

/** The markers of SIX_MARKERS left out: the third and fourth (the first two and the last two are kept). */
const SIX_DROPPED =
  "messages[2].cache_control,messages[3].cache_control,messages[4].content[0].cache_control";

function anthropicConfig(fake: FakeAnthropic): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  claude: { type: anthropic, base_url: "${fake.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}", default_max_tokens: 1000 }
models:
  chat-claude: { type: chat, targets: [ { provider: claude, model: claude-ok } ] }
${TEST_TOKENS_YAML}`;
}

/** What the fake got in `system` and `messages`, the parts that carry markers. */
function sentTo(fake: FakeAnthropic) {
  const body = fake.requests.at(-1)!.body;
  return { system: body.system, messages: body.messages };
}

Deno.test("cache_control e2e: opencode's markers reach Anthropic on the blocks they mark, and cache reads come back", async () => {
  await withFakeGateway(startFakeAnthropic, anthropicConfig, async (_gw, fake, client) => {
    const { data, response } = await client.chat.completions.create({
      model: "chat-claude",
      messages: OPENCODE_MESSAGES,
    }).withResponse();
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("x-gateway-dropped"), null);
    assert.deepEqual(sentTo(fake), {
      system: [
        { type: "text", text: "You are opencode, an interactive CLI agent.", cache_control: EPHEMERAL },
        { type: "text", text: "Project instructions from AGENTS.md.", cache_control: EPHEMERAL },
      ],
      messages: [
        { role: "user", content: "Where is the bug?" },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "call_1", name: "read", input: { path: "a.ts" } }],
        },
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: "call_1",
              content: "export const a = 1;",
              cache_control: EPHEMERAL,
            },
            { type: "text", text: "Now fix the bug." },
            { type: "text", text: "Be brief.", cache_control: EPHEMERAL },
          ],
        },
      ],
    });
    // Anthropic's cache reads are OpenAI's cached prompt tokens; prompt_tokens counts them, and the writes.
    const { cache_creation_input_tokens: writes, cache_read_input_tokens: reads } = FAKE_CACHE_USAGE;
    assert.equal(data.usage?.prompt_tokens_details?.cached_tokens, reads);
    assert.equal(data.usage?.prompt_tokens, 20 + writes + reads);

    const stream = await client.chat.completions.create({
      model: "chat-claude",
      messages: OPENCODE_MESSAGES,
      stream: true,
      stream_options: { include_usage: true },
    });
    let cached: number | undefined;
    for await (const chunk of stream) cached ??= chunk.usage?.prompt_tokens_details?.cached_tokens;
    assert.equal(cached, reads);
    assert.deepEqual(sentTo(fake).system, [
      { type: "text", text: "You are opencode, an interactive CLI agent.", cache_control: EPHEMERAL },
      { type: "text", text: "Project instructions from AGENTS.md.", cache_control: EPHEMERAL },
    ]);
  });
});

Deno.test("cache_control e2e: past Anthropic's four, the request goes out with the first two and last two and names the rest", async () => {
  await withFakeGateway(startFakeAnthropic, anthropicConfig, async (gw, fake, client) => {
    // The fake refuses more than four, as Anthropic does ("A maximum of 4 blocks with cache_control …").
    const { data, response } = await client.chat.completions.create({
      model: "chat-claude",
      messages: SIX_MARKERS,
    }).withResponse();
    assert.equal(response.status, 200);
    assert.equal(data.usage?.prompt_tokens_details?.cached_tokens, FAKE_CACHE_USAGE.cache_read_input_tokens);
    assert.equal(response.headers.get("x-gateway-dropped"), SIX_DROPPED);
    assert.deepEqual(sentTo(fake), {
      system: [
        { type: "text", text: "System one.", cache_control: EPHEMERAL },
        { type: "text", text: "System two.", cache_control: EPHEMERAL },
      ],
      messages: [
        { role: "user", content: "First question." },
        { role: "assistant", content: "First answer." },
        { role: "user", content: "Second question." },
        { role: "assistant", content: [{ type: "text", text: "Second answer.", cache_control: EPHEMERAL }] },
        { role: "user", content: [{ type: "text", text: "Third question.", cache_control: EPHEMERAL }] },
      ],
    });
    const line = await waitForLog(gw, (l) => typeof l.dropped === "string");
    assert.equal(line.dropped, SIX_DROPPED);
  });
});

Deno.test("cache_control e2e: a one-hour marker after a five-minute one goes to Anthropic without its ttl", async () => {
  await withFakeGateway(startFakeAnthropic, anthropicConfig, async (_gw, fake, client) => {
    // A developer message later in the conversation is hoisted into `system`, ahead of the user's 1h marker.
    const { response } = await client.chat.completions.create({
      model: "chat-claude",
      messages: [
        {
          role: "user",
          content: "Read this long document.",
          cache_control: { type: "ephemeral", ttl: "1h" },
        },
        { role: "developer", content: "Answer in French.", cache_control: { type: "ephemeral", ttl: "5m" } },
      ] as unknown as OpenAI.ChatCompletionMessageParam[],
    }).withResponse();
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("x-gateway-dropped"), "messages[0].cache_control.ttl");
    assert.deepEqual(sentTo(fake), {
      system: [{ type: "text", text: "Answer in French.", cache_control: { type: "ephemeral", ttl: "5m" } }],
      messages: [{
        role: "user",
        content: [{ type: "text", text: "Read this long document.", cache_control: EPHEMERAL }],
      }],
    });
  });
});

const CLAUDE_CACHED = "anthropic.claude-sonnet-cached-v1:0";

function bedrockConfig(fake: FakeBedrock): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  aws:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${fake.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
models:
  chat-claude-bedrock: { type: chat, targets: [{ provider: aws, model: "${CLAUDE_CACHED}" }] }
  chat-nova: { type: chat, targets: [{ provider: aws, model: "amazon.nova-pro-v1:0" }] }
${TEST_TOKENS_YAML}`;
}

Deno.test("cache_control e2e: on Claude on Bedrock the markers become Converse cachePoint blocks, four at most", async () => {
  await withFakeGateway(startFakeBedrock, bedrockConfig, async (_gw, fake, client) => {
    const { data, response } = await client.chat.completions.create({
      model: "chat-claude-bedrock",
      messages: OPENCODE_MESSAGES,
    }).withResponse();
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("x-gateway-dropped"), null);
    assert.equal(data.usage?.prompt_tokens_details?.cached_tokens, FAKE_BEDROCK_CACHE_READ);
    const point = { cachePoint: { type: "default" } };
    const body = fake.requests.at(-1)!.body;
    assert.deepEqual(body.system, [
      { text: "You are opencode, an interactive CLI agent." },
      point,
      { text: "Project instructions from AGENTS.md." },
      point,
    ]);
    assert.deepEqual((body.messages as { content: unknown }[])[2].content, [
      { toolResult: { toolUseId: "call_1", content: [{ text: "export const a = 1;" }], status: "success" } },
      point,
      { text: "Now fix the bug." },
      { text: "Be brief." },
      point,
    ]);

    // The fake refuses more than four cache points, as Bedrock does for Claude.
    const six = await client.chat.completions.create({ model: "chat-claude-bedrock", messages: SIX_MARKERS })
      .withResponse();
    assert.equal(six.response.status, 200);
    assert.equal(six.response.headers.get("x-gateway-dropped"), SIX_DROPPED);
    const sent = fake.requests.at(-1)!.body;
    const points = JSON.stringify([sent.system, sent.messages]).match(/"cachePoint"/g) ?? [];
    assert.equal(points.length, 4);
  });
});

Deno.test("cache_control e2e: a model with no markers (Bedrock Nova, Gemini) names every one it went without", async () => {
  await withFakeGateway(startFakeBedrock, bedrockConfig, async (_gw, fake, client) => {
    const { response } = await client.chat.completions.create({
      model: "chat-nova",
      messages: OPENCODE_MESSAGES,
    })
      .withResponse();
    assert.equal(response.status, 200);
    assert.equal(
      response.headers.get("x-gateway-dropped"),
      "messages[0].cache_control,messages[1].cache_control,messages[4].cache_control,messages[5].content[1].cache_control",
    );
    assert.doesNotMatch(JSON.stringify(fake.requests.at(-1)!.body), /cachePoint|cache_control/);
  });
  const geminiConfig = (fake: FakeGemini) => `
server: { host: 127.0.0.1, port: 0 }
providers:
  gemini: { type: gemini, base_url: "${fake.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
models:
  chat-gemini: { type: chat, targets: [{ provider: gemini, model: gem-ok }] }
${TEST_TOKENS_YAML}`;
  await withFakeGateway(startFakeGemini, geminiConfig, async (_gw, fake, client) => {
    const { response } = await client.chat.completions.create({
      model: "chat-gemini",
      messages: [
        { role: "system", content: "Be brief.", cache_control: EPHEMERAL },
        { role: "user", content: [{ type: "text", text: "Hi", cache_control: EPHEMERAL }] },
      ] as unknown as OpenAI.ChatCompletionMessageParam[],
    }).withResponse();
    assert.equal(response.status, 200);
    assert.equal(
      response.headers.get("x-gateway-dropped"),
      "messages[0].cache_control,messages[1].content[0].cache_control",
    );
    assert.doesNotMatch(JSON.stringify(fake.requests.at(-1)!.body), /cache_control/);
  });
});

/** nanobot's tools: the last one marked, as LiteLLM takes `cache_control` on a tool definition. */
const MARKED_TOOLS = [
  { type: "function", function: { name: "read", parameters: { type: "object" } } },
  { type: "function", function: { name: "exec", parameters: { type: "object" } }, cache_control: EPHEMERAL },
] as unknown as OpenAI.ChatCompletionTool[];

/** OPENCODE_MESSAGES' four and the tool's make five: the tool's comes first, the second system one is cut. */
const TOOL_DROPPED = "messages[1].cache_control";

Deno.test("cache_control e2e: a tool definition's marker reaches Anthropic first of the four, and what is cut is named", async () => {
  await withFakeGateway(startFakeAnthropic, anthropicConfig, async (gw, fake, client) => {
    const { response } = await client.chat.completions.create({
      model: "chat-claude",
      messages: OPENCODE_MESSAGES,
      tools: MARKED_TOOLS,
    }).withResponse();
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("x-gateway-dropped"), TOOL_DROPPED);
    const body = fake.requests.at(-1)!.body;
    assert.deepEqual(body.tools, [
      { name: "read", input_schema: { type: "object" } },
      { name: "exec", input_schema: { type: "object" }, cache_control: EPHEMERAL },
    ]);
    assert.deepEqual(body.system, [
      { type: "text", text: "You are opencode, an interactive CLI agent.", cache_control: EPHEMERAL },
      { type: "text", text: "Project instructions from AGENTS.md." },
    ]);
    const line = await waitForLog(gw, (l) => typeof l.dropped === "string");
    assert.equal(line.dropped, TOOL_DROPPED);
  });
});

Deno.test("cache_control e2e: on Claude on Bedrock a tool definition's marker is a cachePoint after its toolSpec; Nova names it", async () => {
  await withFakeGateway(startFakeBedrock, bedrockConfig, async (_gw, fake, client) => {
    const { response } = await client.chat.completions.create({
      model: "chat-claude-bedrock",
      messages: OPENCODE_MESSAGES,
      tools: MARKED_TOOLS,
    }).withResponse();
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("x-gateway-dropped"), TOOL_DROPPED);
    const body = fake.requests.at(-1)!.body;
    assert.deepEqual((body.toolConfig as { tools: unknown[] }).tools.slice(1), [
      { toolSpec: { name: "exec", inputSchema: { json: { type: "object" } } } },
      { cachePoint: { type: "default" } },
    ]);

    const nova = await client.chat.completions.create({
      model: "chat-nova",
      messages: [{ role: "user", content: "Hi" }],
      tools: MARKED_TOOLS,
    }).withResponse();
    assert.equal(nova.response.status, 200);
    assert.equal(nova.response.headers.get("x-gateway-dropped"), "tools[1].cache_control");
    assert.doesNotMatch(JSON.stringify(fake.requests.at(-1)!.body), /cachePoint|cache_control/);
  });
});

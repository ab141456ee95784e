/**
 * End to end with the official `openai` SDK: requests OpenAI's chat completions serve that a translated vendor
 * would refuse if the gateway sent them over as they are. The fakes refuse what the vendors refuse
 * (`tests/helpers/vendor_refusals.ts`), so each answer here is one a client would not have got.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import {
  FAKE_ANTHROPIC_KEY,
  FAKE_CLAUDE_ANSWER,
  type FakeAnthropic,
  startFakeAnthropic,
} from "../helpers/fake_anthropic.ts";
import {
  FAKE_AWS,
  FAKE_BEDROCK_ANSWER,
  FAKE_REGION,
  type FakeBedrock,
  startFakeBedrock,
} from "../helpers/fake_bedrock.ts";
import { FAKE_GEMINI_KEY, type FakeGemini, GEMINI_ANSWER, startFakeGemini } from "../helpers/fake_gemini.ts";
import { FAKE_ANSWER, FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { TEST_TOKENS_YAML, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";

const CLAUDE = "anthropic.claude-3-7-sonnet-20250219-v1:0";
const NOVA = "amazon.nova-pro-v1:0";

/** One fake of each translated vendor. */
interface Fakes {
  anthropic: FakeAnthropic;
  gemini: FakeGemini;
  bedrock: FakeBedrock;
  openai: FakeUpstream;
  stop(): Promise<void>;
}

function startFakes(): Fakes {
  const anthropic = startFakeAnthropic();
  const gemini = startFakeGemini();
  const bedrock = startFakeBedrock();
  const openai = startFakeOpenAI();
  return {
    anthropic,
    gemini,
    bedrock,
    openai,
    stop: async () => {
      await Promise.all([anthropic.stop(), gemini.stop(), bedrock.stop(), openai.stop()]);
    },
  };
}

function configFor(fakes: Fakes): string {
  const alias = (name: string, provider: string, model: string) =>
    `  ${name}: { type: chat, targets: [{ provider: ${provider}, model: "${model}" }] }`;
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  claude: { type: anthropic, base_url: "${fakes.anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  gem: { type: gemini, base_url: "${fakes.gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
  aws:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${fakes.bedrock.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
  oai: { type: openai, base_url: "${fakes.openai.baseURL}", api_key: "${FAKE_KEY}" }
models:
${alias("chat-claude", "claude", "claude-ok")}
${alias("chat-gem", "gem", "gem-ok")}
${alias("chat-gem3", "gem", "gem-3-ok")}
${alias("chat-nova", "aws", NOVA)}
${alias("chat-bedrock-claude", "aws", CLAUDE)}
  mixed-claude: { type: chat, targets: [{ provider: claude, model: claude-ok }, { provider: oai, model: gpt-ok }] }
  strict-mixed-claude:
    type: chat
    strict: true
    targets: [{ provider: claude, model: claude-ok }, { provider: oai, model: gpt-ok }]
  mixed-bedrock-claude:
    type: chat
    targets: [{ provider: aws, model: "${CLAUDE}" }, { provider: oai, model: gpt-ok }]
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: TestGateway, fakes: Fakes, client: OpenAI) => Promise<void>) {
  return withFakeGateway(startFakes, configFor, fn);
}

/** Each alias, the text its fake answers with, and the body the fake got last. */
function targets(fakes: Fakes): [string, string, () => Record<string, unknown>][] {
  return [
    ["chat-claude", FAKE_CLAUDE_ANSWER, () => fakes.anthropic.requests.at(-1)!.body],
    ["chat-gem", GEMINI_ANSWER, () => fakes.gemini.requests.at(-1)!.body],
    ["chat-nova", FAKE_BEDROCK_ANSWER, () => fakes.bedrock.requests.at(-1)!.body],
    ["chat-bedrock-claude", FAKE_BEDROCK_ANSWER, () => fakes.bedrock.requests.at(-1)!.body],
  ];
}

/** opencode's compaction request: the session's tool calls and results, then the ask for a summary; no tools. */
const COMPACTION: OpenAI.ChatCompletionMessageParam[] = [
  { role: "user", content: "list files" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "call_1", type: "function", function: { name: "bash", arguments: '{"cmd":"ls"}' } }],
  },
  { role: "tool", tool_call_id: "call_1", content: "a.txt b.txt" },
  { role: "user", content: "Summarize the conversation so far." },
];

Deno.test("translated e2e: a tool history without tools (a coding agent's compaction) is answered by every vendor", async () => {
  await withGateway(async (_gw, fakes, client) => {
    for (const [model, answer, sent] of targets(fakes)) {
      const completion = await client.chat.completions.create({ model, messages: COMPACTION });
      assert.equal(completion.choices[0].message.content, answer, model);
      assert.equal(completion.choices[0].finish_reason, "stop", model);
      const body = sent();
      if (model === "chat-claude") assert.deepEqual(body.tool_choice, { type: "none" });
      if (model.startsWith("chat-bedrock") || model === "chat-nova") {
        assert.equal((body.toolConfig as { toolChoice?: unknown }).toolChoice, undefined, model);
      }
      // Gemini takes function calls and results without tools: none are declared.
      if (model === "chat-gem") assert.equal(body.tools, undefined);
    }
  });
});

Deno.test("translated e2e: Gemini 3 answers a replayed tool call the gateway did not mint (another vendor's)", async () => {
  await withGateway(async (_gw, fakes, client) => {
    // The session started on Claude (its tool-call ids) and goes on with Gemini 3: a fallback, a weighted
    // alias, or a coding agent switching models.
    const completion = await client.chat.completions.create({
      model: "chat-gem3",
      tools: [{ type: "function", function: { name: "bash", parameters: { type: "object" } } }],
      messages: [
        { role: "user", content: "list files" },
        {
          role: "assistant",
          content: "Listing them.",
          tool_calls: [
            { id: "toolu_01ABC", type: "function", function: { name: "bash", arguments: '{"cmd":"ls"}' } },
            { id: "toolu_02DEF", type: "function", function: { name: "bash", arguments: '{"cmd":"pwd"}' } },
          ],
        },
        { role: "tool", tool_call_id: "toolu_01ABC", content: "a.txt b.txt" },
        { role: "tool", tool_call_id: "toolu_02DEF", content: "/home" },
      ],
    });
    assert.equal(completion.choices[0].message.content, GEMINI_ANSWER);
    const contents = fakes.gemini.requests.at(-1)!.body.contents as { parts: Record<string, unknown>[] }[];
    assert.deepEqual(contents[1].parts.map((p) => p.thoughtSignature), [
      undefined,
      "skip_thought_signature_validator",
      undefined,
    ]);
  });
});

Deno.test("translated e2e: a request of a system message only is answered by every vendor", async () => {
  await withGateway(async (_gw, fakes, client) => {
    for (const role of ["system", "developer"] as const) {
      for (const [model, answer, sent] of targets(fakes)) {
        const completion = await client.chat.completions.create({
          model,
          messages: [{ role, content: "Write a haiku about the sea." }],
        });
        assert.equal(completion.choices[0].message.content, answer, `${model} ${role}`);
        // The instructions reach the model once, as the user's turn.
        const text = JSON.stringify(sent());
        assert.equal(text.split("Write a haiku about the sea.").length, 2, `${model}: ${text}`);
      }
    }
  });
});

Deno.test("translated e2e: a conversation that opens with the assistant's greeting is answered by every vendor", async () => {
  await withGateway(async (_gw, fakes, client) => {
    for (const [model, answer, sent] of targets(fakes)) {
      // A chat UI's greeting: Converse refuses a first turn that is not the user's; OpenAI answers it.
      const completion = await client.chat.completions.create({
        model,
        messages: [
          { role: "system", content: "Be brief." },
          { role: "assistant", content: "Hi! How can I help?" },
          { role: "user", content: "What is 2+2?" },
        ],
      });
      assert.equal(completion.choices[0].message.content, answer, model);
      const body = sent();
      if (model === "chat-nova" || model === "chat-bedrock-claude") {
        const turns = body.messages as { role: string; content: unknown[] }[];
        assert.deepEqual(turns.map((t) => t.role), ["user", "assistant", "user"], model);
        assert.deepEqual(turns[0].content, [{ text: "." }], model);
      }
    }
  });
});

Deno.test("translated e2e: values that change nothing are served by Gemini and Bedrock, not refused", async () => {
  await withGateway(async (_gw, fakes, client) => {
    const bash = { type: "function" as const, function: { name: "bash", parameters: { type: "object" } } };
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "hi" }];
    const harmless: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming>[] = [
      // A client's setting of every request, tools or not.
      { parallel_tool_calls: false },
      { parallel_tool_calls: false, tools: [bash], tool_choice: "none" },
      { logprobs: false, top_logprobs: 0 },
    ];
    for (const [model, answer] of targets(fakes).filter(([m]) => m !== "chat-claude")) {
      for (const extra of harmless) {
        const { data, response } = await client.chat.completions.create({ model, messages, ...extra })
          .withResponse();
        assert.equal(data.choices[0].message.content, answer, `${model} ${JSON.stringify(extra)}`);
        assert.equal(response.headers.get("x-gateway-dropped"), null);
      }
      // Beside tools the model may call, it could change the answer: still refused, by name.
      const before = fakes.gemini.requests.length + fakes.bedrock.requests.length;
      await assert.rejects(
        client.chat.completions.create({ model, messages, tools: [bash], parallel_tool_calls: false }),
        (err: unknown) => err instanceof OpenAI.BadRequestError && err.param === "parallel_tool_calls",
      );
      assert.equal(fakes.gemini.requests.length + fakes.bedrock.requests.length, before);
    }
  });
});

Deno.test("translated e2e: a temperature above Claude's 1 is served by an alias's target that takes it, else a 400 naming it", async () => {
  await withGateway(async (_gw, fakes, client) => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "a poem" }];
    const claudeCalls = () => fakes.anthropic.requests.length + fakes.bedrock.requests.length;
    const before = claudeCalls();
    for (const model of ["mixed-claude", "mixed-bedrock-claude"]) {
      const { data, response } = await client.chat.completions.create({ model, messages, temperature: 1.5 })
        .withResponse();
      assert.equal(data.choices[0].message.content, FAKE_ANSWER, model);
      assert.equal(response.headers.get("x-gateway-provider"), "oai", model);
      assert.equal(fakes.openai.requests.at(-1)!.body.temperature, 1.5, model);
    }
    // No target of the alias takes it: OpenAI's 400 shape, naming the parameter, before any upstream call.
    for (const model of ["chat-claude", "chat-bedrock-claude"]) {
      await assert.rejects(
        client.chat.completions.create({ model, messages, temperature: 1.5 }),
        (err: unknown) =>
          err instanceof OpenAI.BadRequestError && err.param === "temperature" &&
          err.code === "unsupported_parameter" && /above 1/.test(err.message),
        model,
      );
    }
    assert.equal(claudeCalls(), before);
    // Within Claude's range, Claude answers as before.
    const warm = await client.chat.completions.create({ model: "mixed-claude", messages, temperature: 1 });
    assert.equal(warm.choices[0].message.content, FAKE_CLAUDE_ANSWER);
    assert.equal(fakes.anthropic.requests.at(-1)!.body.temperature, 1);
  });
});

Deno.test("translated e2e: participant names (messages[].name) a vendor has no field for are named as dropped", async () => {
  await withGateway(async (gw, fakes, client) => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: "user", name: "alice", content: "My favourite colour is red." },
      { role: "user", name: "bob", content: "What is my favourite colour?" },
    ];
    for (const [model, answer] of targets(fakes)) {
      const { data, response } = await client.chat.completions.create({ model, messages }).withResponse();
      assert.equal(data.choices[0].message.content, answer, model);
      assert.equal(response.headers.get("x-gateway-dropped"), "messages[0].name,messages[1].name", model);
      const line = await waitForLog(
        gw,
        (l) => l.msg === "request" && l.request_id === response.headers.get("x-request-id"),
      );
      assert.equal(line.dropped, "messages[0].name,messages[1].name", model);
    }
    // A strict alias refuses the drop: its target that takes names (OpenAI-compatible) answers, with them.
    const { data, response } = await client.chat.completions.create({
      model: "strict-mixed-claude",
      messages,
    })
      .withResponse();
    assert.equal(data.choices[0].message.content, FAKE_ANSWER);
    assert.equal(response.headers.get("x-gateway-dropped"), null);
    assert.deepEqual(fakes.openai.requests.at(-1)!.body.messages, messages);
  });
});

Deno.test("translated e2e: a blank stop sequence (Claude refuses it) is served by an alias's target that takes it, else a 400 naming stop", async () => {
  await withGateway(async (_gw, fakes, client) => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "one line" }];
    const claudeCalls = () => fakes.anthropic.requests.length + fakes.bedrock.requests.length;
    const before = claudeCalls();
    for (const model of ["mixed-claude", "mixed-bedrock-claude"]) {
      const { data, response } = await client.chat.completions.create({ model, messages, stop: ["\n"] })
        .withResponse();
      assert.equal(data.choices[0].message.content, FAKE_ANSWER, model);
      assert.equal(response.headers.get("x-gateway-provider"), "oai", model);
      assert.deepEqual(fakes.openai.requests.at(-1)!.body.stop, ["\n"], model);
    }
    // No target of the alias takes it: OpenAI's 400 shape naming `stop` (not Anthropic's `stop_sequences`),
    // before any upstream call.
    for (const model of ["chat-claude", "chat-bedrock-claude"]) {
      await assert.rejects(
        client.chat.completions.create({ model, messages, stop: " " }),
        (err: unknown) =>
          err instanceof OpenAI.BadRequestError && err.param === "stop" &&
          err.code === "unsupported_parameter" && /whitespace-only/.test(err.message),
        model,
      );
    }
    assert.equal(claudeCalls(), before);
    // A sequence with something besides whitespace reaches Claude as sent.
    const { data } = await client.chat.completions.create({
      model: "mixed-claude",
      messages,
      stop: ["\nEND"],
    })
      .withResponse();
    assert.equal(data.choices[0].message.content, FAKE_CLAUDE_ANSWER);
    assert.deepEqual(fakes.anthropic.requests.at(-1)!.body.stop_sequences, ["\nEND"]);
  });
});

Deno.test("translated e2e: Claude gets temperature alone beside top_p (it refuses both), top_p named as dropped", async () => {
  await withGateway(async (gw, fakes, client) => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "a poem" }];
    const claude: [string, string, () => Record<string, unknown>][] = [
      ["chat-claude", FAKE_CLAUDE_ANSWER, () => fakes.anthropic.requests.at(-1)!.body],
      [
        "chat-bedrock-claude",
        FAKE_BEDROCK_ANSWER,
        () => fakes.bedrock.requests.at(-1)!.body.inferenceConfig as Record<string, unknown>,
      ],
    ];
    for (const stream of [false, true]) {
      for (const [model, answer, sampling] of claude) {
        const { data, response } = await client.chat.completions.create({
          model,
          messages,
          temperature: 0.7,
          top_p: 0.9,
          stream,
        }).withResponse();
        let text = "";
        if (stream) {
          for await (const chunk of data as AsyncIterable<OpenAI.ChatCompletionChunk>) {
            text += chunk.choices[0]?.delta.content ?? "";
          }
        } else text = (data as OpenAI.ChatCompletion).choices[0].message.content ?? "";
        assert.equal(text, answer, `${model} stream=${stream}`);
        assert.equal(response.headers.get("x-gateway-dropped"), "top_p", model);
        assert.equal(sampling().temperature, 0.7, model);
        assert.equal(sampling().top_p ?? sampling().topP, undefined, model);
        const line = await waitForLog(
          gw,
          (l) => l.msg === "request" && l.request_id === response.headers.get("x-request-id"),
        );
        assert.equal(line.dropped, "top_p", model);
      }
    }
    // Either one alone reaches Claude as sent, and names nothing.
    for (const sampling of [{ temperature: 0.7 }, { top_p: 0.9 }]) {
      const { response } = await client.chat.completions.create({
        model: "chat-claude",
        messages,
        ...sampling,
      })
        .withResponse();
      assert.equal(response.headers.get("x-gateway-dropped"), null);
      const sent = fakes.anthropic.requests.at(-1)!.body;
      assert.deepEqual([sent.temperature, sent.top_p], [sampling.temperature, sampling.top_p]);
    }
    // Other Bedrock models take both.
    const { response } = await client.chat.completions.create({
      model: "chat-nova",
      messages,
      temperature: 0.7,
      top_p: 0.9,
    }).withResponse();
    assert.equal(response.headers.get("x-gateway-dropped"), null);
    assert.deepEqual(fakes.bedrock.requests.at(-1)!.body.inferenceConfig, { temperature: 0.7, topP: 0.9 });
  });
});

/**
 * Files to a model on Bedrock, end to end over a real socket to the fake Bedrock runtime (which refuses a
 * document as AWS does: a name of characters it does not take, two of one name, one without a text block
 * beside it): a chat `file` part (a PDF, a plain-text file) reaches Converse as a `document` block, as the
 * Anthropic target gets it as a `document`, so an alias that falls back from Anthropic to Claude on Bedrock
 * serves the request instead of answering 400, and a Messages request's documents reach a Bedrock model served
 * over the chat form. A file by id stays a 400 in OpenAI's error shape.
 */
import assert from "node:assert/strict";
import type OpenAI from "openai";
import type Anthropic from "@anthropic-ai/sdk";
import { FAKE_AWS, FAKE_BEDROCK_ANSWER, FAKE_REGION, startFakeBedrock } from "../helpers/fake_bedrock.ts";
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { startFakes } from "../helpers/fakes.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { anthropicClient, openaiClient, withTestGateway } from "../helpers/with_gateway.ts";
import { encodeUtf8Base64 } from "../../lib/encoding/utf8_base64.ts";

const CLAUDE = "anthropic.claude-3-5-sonnet-20240620-v1:0";
const NOVA = "amazon.nova-pro-v1:0";
const PDF = "JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PD4+CmVuZG9iagp0cmFpbGVyCjw8Pj4KJSVFT0YK";
const NOTES = "The meeting moved to noon, café on the corner.";

type Fakes = {
  anthropic: ReturnType<typeof startFakeAnthropic>;
  bedrock: ReturnType<typeof startFakeBedrock>;
};

function configFor(f: Fakes): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  claude: { type: anthropic, base_url: "${f.anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  aws:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${f.bedrock.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
models:
  chat-docs:
    type: chat
    targets: [{ provider: claude, model: claude-529, retries: 0 }, { provider: aws, model: "${CLAUDE}" }]
  chat-claude: { type: chat, targets: [{ provider: aws, model: "${CLAUDE}" }] }
  chat-nova: { type: chat, targets: [{ provider: aws, model: "${NOVA}" }] }
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: TestGateway, fakes: Fakes) => Promise<void>) {
  return withTestGateway(() => {
    const fakes = startFakes({ anthropic: startFakeAnthropic, bedrock: startFakeBedrock });
    return { fakes, config: configFor(fakes) };
  }, fn);
}

const FILES = [
  {
    type: "file",
    file: { filename: "Q3 report_final.pdf", file_data: `data:application/pdf;base64,${PDF}` },
  },
  {
    type: "file",
    file: { filename: "notes.txt", file_data: `data:text/plain;base64,${encodeUtf8Base64(NOTES)}` },
  },
] as OpenAI.Chat.ChatCompletionContentPart[];

const DOCUMENTS = [
  { document: { format: "pdf", name: "Q3 report final", source: { bytes: PDF } } },
  { document: { format: "txt", name: "notes", source: { bytes: encodeUtf8Base64(NOTES) } } },
];

Deno.test("bedrock documents e2e: an alias falling back from Anthropic to Claude on Bedrock serves a PDF and a text file", async () => {
  await withGateway(async (gw, { anthropic, bedrock }) => {
    const completion = await openaiClient(gw).chat.completions.create({
      model: "chat-docs",
      messages: [{ role: "user", content: [...FILES, { type: "text", text: "Summarize both." }] }],
    });
    assert.equal(completion.choices[0].message.content, FAKE_BEDROCK_ANSWER);
    const tried = anthropic.requests.at(-1)!.body.messages as { content: { type: string }[] }[];
    assert.deepEqual(
      tried[0].content.map((b) => b.type),
      ["document", "document", "text"],
      "Anthropic's form",
    );
    const [sent] = bedrock.requests;
    assert.equal(sent.action, "converse");
    assert.deepEqual(sent.body.messages, [{
      role: "user",
      content: [...DOCUMENTS, { text: "Summarize both." }],
    }]);
  });
});

Deno.test("bedrock documents e2e: files sent alone, streamed, get the text Converse requires beside them", async () => {
  await withGateway(async (gw, { bedrock }) => {
    const stream = await openaiClient(gw).chat.completions.create({
      model: "chat-claude",
      messages: [{ role: "user", content: FILES }],
      stream: true,
    });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    assert.equal(text, FAKE_BEDROCK_ANSWER);
    const [sent] = bedrock.requests;
    assert.equal(sent.action, "converse-stream");
    assert.deepEqual(sent.body.messages, [{ role: "user", content: [{ text: "." }, ...DOCUMENTS] }]);
  });
});

Deno.test("bedrock documents e2e: a Messages request's documents reach a Bedrock model served over the chat form", async () => {
  await withGateway(async (gw, { bedrock }) => {
    const content: Anthropic.ContentBlockParam[] = [
      {
        type: "document",
        title: "spec.pdf",
        source: { type: "base64", media_type: "application/pdf", data: PDF },
      },
      { type: "document", source: { type: "text", media_type: "text/plain", data: NOTES } },
      { type: "text", text: "Compare them." },
    ];
    const message = await anthropicClient(gw).messages.create({
      model: "chat-nova",
      max_tokens: 200,
      messages: [{ role: "user", content }],
    });
    assert.deepEqual(message.content, [{ type: "text", text: FAKE_BEDROCK_ANSWER }]);
    const [sent] = bedrock.requests;
    assert.equal(sent.modelId, NOVA);
    assert.deepEqual((sent.body.messages as { content: unknown[] }[])[0].content, [
      { document: { format: "pdf", name: "spec", source: { bytes: PDF } } },
      // The Messages API names an untitled document `document`.
      { document: { format: "txt", name: "document", source: { bytes: encodeUtf8Base64(NOTES) } } },
      { text: "Compare them." },
    ]);
  });
});

Deno.test("bedrock documents e2e: a file by id is a 400 in OpenAI's shape, and nothing is sent", async () => {
  await withGateway(async (gw, { bedrock }) => {
    const response = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "chat-claude",
        messages: [{ role: "user", content: [{ type: "file", file: { file_id: "file-abc" } }] }],
      }),
    });
    assert.equal(response.status, 400);
    const body = await response.json();
    assert.equal(body.error.type, "invalid_request_error");
    assert.equal(body.error.param, "messages[0].content[0].file");
    assert.equal(body.error.code, "unsupported_parameter");
    assert.match(body.error.message, /file_data/);
    assert.equal(bedrock.requests.length, 0);
  });
});

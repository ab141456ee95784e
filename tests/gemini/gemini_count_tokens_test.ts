/**
 * The Gemini API's `:countTokens`, routed as `:generateContent` routes the request it counts (Gemini CLI sizes
 * its context window by this count): a Gemini target counts the body it would get, as Google's
 * `{"generateContentRequest": …}`, so a file by Google's URI and `cachedContent` count too; what only a Gemini
 * target serves sends the count to one, and without one is Google's 400 as `generateContent` answers it; any
 * other count is of the chat form and names what it left out in `x-gateway-dropped` and the usage record; a
 * `strict` alias counts only where nothing is dropped. Each count leaves one usage record.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import type { InProcessGateway } from "../helpers/in_process.ts";
import { json } from "../helpers/mixed_vendors.ts";
import { type RawStep, type RawUpstream, startRawUpstream } from "../helpers/raw_upstream.ts";
import { withInProcessGateway } from "../helpers/with_gateway.ts";

const FILE = {
  mimeType: "application/pdf",
  fileUri: "https://generativelanguage.googleapis.com/v1beta/files/abc",
};
const WITH_FILE = {
  contents: [{ role: "user", parts: [{ text: "Sum this up" }, { fileData: FILE }] }],
};
const PLAIN = { contents: [{ role: "user", parts: [{ text: "hi" }] }] };

function configFor(up: RawUpstream): string {
  const target = (provider: string, model: string) =>
    `{ provider: ${provider}, model: "${model}", retries: 0 }`;
  const nova = target("aws", "us.amazon.nova-pro-v1:0");
  const gemini = target("gemini", "gemini-2.5-flash");
  const claude = target("anthropic", "claude-sonnet-4-5");
  return `
providers:
  openai: { type: openai, base_url: "${up.url}/oai/v1", api_key: "sk-upstream-key-abcdef0123456789" }
  anthropic: { type: anthropic, base_url: "${up.url}", api_key: "sk-ant-key-abcdef0123456789" }
  gemini: { type: gemini, base_url: "${up.url}/v1beta", api_key: "AIzaSy-gem-key-abcdef0123456789" }
  aws:
    type: bedrock
    region: us-east-1
    base_url: "${up.url}"
    access_key_id: AKIAQ7EXAMPLEW3RT6YU
    secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY
models:
  chat-gemini: { type: chat, targets: [${gemini}] }
  chat-nova: { type: chat, targets: [${nova}] }
  chat-openai: { type: chat, targets: [${target("openai", "gpt-4o")}] }
  chat-nova-then-gemini: { type: chat, targets: [${nova}, ${gemini}] }
  chat-strict-nova-claude: { type: chat, strict: true, targets: [${nova}, ${claude}] }
${TEST_TOKENS_YAML}`;
}

/** Each vendor's counting endpoint answers in its own shape. */
function countAnswer(request: { path: string }): RawStep {
  if (request.path.endsWith(":countTokens")) return json({ totalTokens: 42 });
  if (request.path.endsWith("/count-tokens")) return json({ inputTokens: 43 });
  if (request.path.endsWith("/v1/messages/count_tokens")) return json({ input_tokens: 44 });
  return { status: 500, chunks: ["not a counting endpoint"] };
}

async function count(gw: InProcessGateway, alias: string, body: unknown) {
  const before = gw.records.length;
  const response = await gw.fetch(`/v1beta/models/${alias}:countTokens`, {
    method: "POST",
    headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  assert.equal(gw.records.length, before + 1, `${alias}: one usage record per count`);
  return { status: response.status, dropped: response.headers.get("x-gateway-dropped"), answer };
}

function withGateway(fn: (gw: InProcessGateway, up: RawUpstream) => Promise<void>) {
  return withInProcessGateway(() => {
    const up = startRawUpstream();
    up.stepFor = countAnswer;
    return { fakes: up, config: configFor(up) };
  }, fn);
}

Deno.test("gemini countTokens: a Gemini target counts the body it would get, file and cachedContent included", async () => {
  await withGateway(async (gw, up) => {
    const cached = { cachedContent: "cachedContents/xyz", ...WITH_FILE };
    // As `contents` with the request's fields, and as Google's own `generateContentRequest` wrapper.
    for (const body of [cached, { generateContentRequest: { model: "models/chat-gemini", ...cached } }]) {
      const counted = await count(gw, "chat-gemini", body);
      assert.equal(counted.status, 200, JSON.stringify(counted.answer));
      assert.deepEqual(counted.answer, { totalTokens: 42 });
      assert.equal(counted.dropped, null);
      const sent = up.requests.at(-1)!;
      assert.match(sent.path, /\/models\/gemini-2\.5-flash:countTokens$/);
      assert.deepEqual(JSON.parse(sent.body), {
        generateContentRequest: { model: "models/gemini-2.5-flash", ...cached },
      });
      assert.equal(gw.records.at(-1)!.dropped ?? null, null);
    }
    // An alias whose first target is not Gemini sends a count of a Google file to its Gemini one.
    const preferred = await count(gw, "chat-nova-then-gemini", WITH_FILE);
    assert.equal(preferred.status, 200, JSON.stringify(preferred.answer));
    assert.deepEqual(preferred.answer, { totalTokens: 42 });
    assert.ok(up.requests.at(-1)!.body.includes(FILE.fileUri));
  });
});

Deno.test("gemini countTokens: without a Gemini target, a Google file or cachedContent is Google's 400, as for generateContent", async () => {
  await withGateway(async (gw, up) => {
    for (const body of [WITH_FILE, { cachedContent: "cachedContents/xyz", ...PLAIN }]) {
      const sent = up.requests.length;
      const refused = await count(gw, "chat-nova", body);
      assert.equal(refused.status, 400, JSON.stringify(refused.answer));
      assert.equal(refused.answer.error.status, "INVALID_ARGUMENT");
      assert.match(refused.answer.error.message, /served only by Gemini targets/);
      assert.equal(up.requests.length, sent, "no upstream counted it");
    }
  });
});

Deno.test("gemini countTokens: a count of the chat form names what it left out, exact or estimated", async () => {
  await withGateway(async (gw, up) => {
    const safety = { safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }] };
    // Bedrock's Nova counts the chat form: without the safety settings, nor the topK it takes none of.
    const nova = await count(gw, "chat-nova", { ...PLAIN, ...safety, generationConfig: { topK: 64 } });
    assert.equal(nova.status, 200, JSON.stringify(nova.answer));
    assert.deepEqual(nova.answer, { totalTokens: 43 });
    assert.equal(nova.dropped, "safetySettings,generationConfig.topK");
    assert.equal(gw.records.at(-1)!.dropped, "safetySettings,generationConfig.topK");
    // No counting vendor: the gateway's estimate of the chat form, which went without them too.
    const estimated = await count(gw, "chat-openai", { ...PLAIN, ...safety });
    assert.equal(estimated.status, 200);
    assert.equal(estimated.answer.estimated, true);
    assert.equal(estimated.dropped, "safetySettings");
    assert.equal(gw.records.at(-1)!.dropped, "safetySettings");
    // Google's count failed: the gateway's estimate, of the chat form, says it left the file out.
    up.stepFor = () => ({ status: 503, headers: { "content-type": "application/json" }, chunks: ["{}"] });
    const fallback = await count(gw, "chat-gemini", WITH_FILE);
    assert.equal(fallback.status, 200, JSON.stringify(fallback.answer));
    assert.equal(fallback.answer.estimated, true);
    assert.equal(fallback.dropped, "contents[0].parts[1].fileData");
  });
});

Deno.test("gemini countTokens: a strict alias counts on the target that drops nothing", async () => {
  await withGateway(async (gw, up) => {
    // Nova would go without topK: Claude, which takes it, counts instead.
    const counted = await count(gw, "chat-strict-nova-claude", { ...PLAIN, generationConfig: { topK: 5 } });
    assert.equal(counted.status, 200, JSON.stringify(counted.answer));
    assert.deepEqual(counted.answer, { totalTokens: 44 });
    assert.equal(counted.dropped, null);
    assert.match(up.requests.at(-1)!.path, /\/v1\/messages\/count_tokens$/);
  });
});

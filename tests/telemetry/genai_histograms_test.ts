/**
 * The Prometheus GenAI histograms (`gen_ai_client_operation_duration_seconds`, `gen_ai_client_token_usage`,
 * `gen_ai_server_time_to_first_token_seconds`) count every generation and embedding under its operation, on
 * every client API (chat completions, Responses, its compaction and WebSocket messages, Messages, Gemini), the
 * refused and failed ones too; a token count, a prewarm, a model listing or a stored response asks no model to
 * answer and is none. Gemini's one route serves all three kinds, so the route's endpoint cannot tell them apart.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";

const LIMITED = "gw-genai-rpm-token-0123456789abcdef";

const CONFIG = `
server: { host: 127.0.0.1, port: 0, public_metrics: true }
providers:
  local: { type: builtin }
models:
  echo: { type: chat, targets: [{ provider: local, model: echo }] }
  embed: { type: embedding, targets: [{ provider: local, model: hash }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
  - { name: limited, sha256: ${hashToken(LIMITED)}, models: ["*"], limits: { rpm: 1 } }
`;

function headers(token = TEST_TOKEN): Record<string, string> {
  return {
    authorization: `Bearer ${token}`,
    "x-api-key": token,
    "x-goog-api-key": token,
    "anthropic-version": "2023-06-01",
    "content-type": "application/json",
  };
}

type Operation = "chat" | "generate_content" | "embeddings";

/** The samples of `metric` whose labels include `labels`, added up. */
async function sum(gw: TestGateway, metric: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${metric}{`)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

const durations = (gw: TestGateway, labels: Record<string, string>) =>
  sum(gw, "gen_ai_client_operation_duration_seconds_count", labels);

async function counts(gw: TestGateway): Promise<Record<Operation, number>> {
  return {
    chat: await durations(gw, { gen_ai_operation_name: "chat" }),
    generate_content: await durations(gw, { gen_ai_operation_name: "generate_content" }),
    embeddings: await durations(gw, { gen_ai_operation_name: "embeddings" }),
  };
}

/**
 * Runs `send` and asserts the duration histogram counted it once under `expected`, or not at all for null. A
 * stream is counted when its body has ended, a moment after the client read it: waited for.
 */
async function step(
  gw: TestGateway,
  label: string,
  expected: Operation | null,
  send: () => Promise<Response>,
): Promise<void> {
  const before = await counts(gw);
  const res = await send();
  await res.text();
  const want = { ...before };
  if (expected !== null) want[expected]++;
  let after = await counts(gw);
  for (let i = 0; i < 100 && JSON.stringify(after) !== JSON.stringify(want); i++) {
    await new Promise((r) => setTimeout(r, 20));
    after = await counts(gw);
  }
  assert.deepEqual(after, want, `${label} (status ${res.status}) is ${expected ?? "no operation"}`);
}

function post(gw: TestGateway, path: string, body: unknown, token = TEST_TOKEN): Promise<Response> {
  return fetch(`${gw.url}${path}`, { method: "POST", headers: headers(token), body: JSON.stringify(body) });
}

function get(gw: TestGateway, path: string): Promise<Response> {
  return fetch(`${gw.url}${path}`, { headers: headers() });
}

const messages = [{ role: "user", content: "hello there" }];
const contents = [{ role: "user", parts: [{ text: "hello there" }] }];

Deno.test("gen_ai histograms: each API's generations and embeddings count, token counts and listings do not", async () => {
  const gw = await startGateway(CONFIG);
  try {
    await step(
      gw,
      "chat completion",
      "chat",
      () => post(gw, "/v1/chat/completions", { model: "echo", messages }),
    );
    let responseId = "";
    await step(gw, "Responses create", "chat", async () => {
      const res = await post(gw, "/v1/responses", { model: "echo", input: "hello there" });
      responseId = (await res.clone().json()).id;
      return res;
    });
    await step(
      gw,
      "Responses compact",
      "chat",
      () => post(gw, "/v1/responses/compact", { model: "echo", input: "hi" }),
    );
    await step(
      gw,
      "Messages create",
      "chat",
      () => post(gw, "/v1/messages", { model: "echo", max_tokens: 50, messages }),
    );
    await step(
      gw,
      "Gemini generateContent",
      "generate_content",
      () => post(gw, "/v1beta/models/echo:generateContent", { contents }),
    );
    await step(
      gw,
      "Gemini streamGenerateContent",
      "generate_content",
      () => post(gw, "/v1beta/models/echo:streamGenerateContent?alt=sse", { contents }),
    );
    await step(
      gw,
      "embeddings",
      "embeddings",
      () => post(gw, "/v1/embeddings", { model: "embed", input: "hi" }),
    );
    await step(
      gw,
      "Gemini embedContent",
      "embeddings",
      () => post(gw, "/v1beta/models/embed:embedContent", { content: { parts: [{ text: "hi" }] } }),
    );
    await step(
      gw,
      "Gemini batchEmbedContents",
      "embeddings",
      () =>
        post(gw, "/v1beta/models/embed:batchEmbedContents", {
          requests: [{ model: "models/embed", content: { parts: [{ text: "hi" }] } }],
        }),
    );

    await step(
      gw,
      "Responses input_tokens",
      null,
      () => post(gw, "/v1/responses/input_tokens", { model: "echo", input: "hi" }),
    );
    await step(
      gw,
      "Messages count_tokens",
      null,
      () => post(gw, "/v1/messages/count_tokens", { model: "echo", messages }),
    );
    await step(
      gw,
      "Gemini countTokens",
      null,
      () => post(gw, "/v1beta/models/echo:countTokens", { contents }),
    );
    await step(gw, "a stored response", null, () => get(gw, `/v1/responses/${responseId}`));
    await step(gw, "the model list", null, () => get(gw, "/v1/models"));
    await step(gw, "Gemini's model list", null, () => get(gw, "/v1beta/models"));
    await step(gw, "a Gemini model", null, () => get(gw, "/v1beta/models/echo"));

    // The token usage and the stream's time to first token are counted under the same operations.
    const usage = (op: Operation) =>
      sum(gw, "gen_ai_client_token_usage_count", { gen_ai_operation_name: op, gen_ai_token_type: "input" });
    assert.equal(await usage("chat"), 4, "every generation reported its input tokens");
    assert.equal(
      await usage("generate_content"),
      2,
      "Gemini's generations, under the conventions' name for them",
    );
    assert.equal(await usage("embeddings"), 3);
    assert.equal(await sum(gw, "gen_ai_server_time_to_first_token_seconds_count", {}), 1, "the one stream");
  } finally {
    await gw.stop();
  }
});

Deno.test("gen_ai histograms: a refused or failed Messages or Gemini request counts, with its error", async () => {
  const gw = await startGateway(CONFIG);
  try {
    const body = { model: "echo", max_tokens: 50, messages };
    await step(
      gw,
      "Messages with a bad key",
      "chat",
      () => post(gw, "/v1/messages", body, "gw-not-a-token-0123456789"),
    );
    await step(gw, "Messages within the limit", "chat", () => post(gw, "/v1/messages", body, LIMITED));
    await step(gw, "Messages over the limit", "chat", () => post(gw, "/v1/messages", body, LIMITED));
    await step(
      gw,
      "Gemini of no such model",
      "generate_content",
      () => post(gw, "/v1beta/models/nope:generateContent", { contents }),
    );
    await step(
      gw,
      "Gemini embedding of a chat model",
      "embeddings",
      () => post(gw, "/v1beta/models/echo:embedContent", { content: { parts: [{ text: "hi" }] } }),
    );
    const errors = async (type: string) => await durations(gw, { error_type: type });
    assert.equal(await errors("invalid_api_key"), 1);
    assert.equal(await errors("rate_limit_exceeded"), 1);
    assert.equal(await errors(""), 1, "the one answered");
  } finally {
    await gw.stop();
  }
});

Deno.test("gen_ai histograms: a WebSocket message that generates counts, a prewarm does not", async () => {
  const gw = await startGateway(CONFIG);
  try {
    const url = gw.url.replace(/^http/, "ws") + "/v1/responses";
    // Deno's WebSocket takes handshake headers as an extension of the standard constructor.
    const ws = new WebSocket(
      url,
      { headers: { authorization: `Bearer ${TEST_TOKEN}` } } as unknown as string[],
    );
    const received: Record<string, unknown>[] = [];
    ws.onmessage = (e) => received.push(JSON.parse(String(e.data)));
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => resolve();
      ws.onerror = () => reject(new Error("handshake failed"));
    });
    try {
      const completed = () => received.filter((e) => e.type === "response.completed").length;
      const send = (generate: boolean) =>
        ws.send(JSON.stringify({ type: "response.create", model: "echo", input: "hi", generate }));
      // Messages are answered in turn: the prewarm's request is over before the generation's starts.
      send(false);
      send(true);
      for (let i = 0; i < 250 && (completed() < 2 || (await counts(gw)).chat < 1); i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(completed(), 2);
      assert.deepEqual(
        await counts(gw),
        { chat: 1, generate_content: 0, embeddings: 0 },
        "the generation, not the prewarm",
      );
    } finally {
      ws.close();
    }
  } finally {
    await gw.stop();
  }
});

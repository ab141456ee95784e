/**
 * The gateway the masked-native guardrail tests drive (guardrails_masked_native_test.ts, and the token counts
 * and compaction in guardrails_masked_counts_test.ts): an alias on each target that speaks its client API
 * natively (Responses to an OpenAI target with `native_responses`, also serving chat completions, Messages to
 * Claude, the Gemini API to Gemini) under a fake webhook guardrail that replaces {@linkcode MASK}, and the
 * built-in masker of e-mail addresses; every fake records the bodies it was sent.
 */
import Anthropic from "@anthropic-ai/sdk";
import { type FakeWebhook, startFakeWebhook } from "../helpers/fake_guardrails.ts";
import {
  type FakeNativeUpstream,
  NATIVE_KEY,
  startFakeNativeResponses,
} from "../helpers/fake_openai_responses.ts";
import { FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { FAKE_ANTHROPIC_KEY, type FakeAnthropic, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { FAKE_GEMINI_KEY, type FakeGemini, startFakeGemini } from "../helpers/fake_gemini.ts";
import { startFakes } from "../helpers/fakes.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { fetchThrough, type InProcessGateway } from "../helpers/in_process.ts";
import { withInProcessGateway } from "../helpers/with_gateway.ts";
import { decodeUtf8Base64, encodeUtf8Base64 } from "../../lib/encoding/utf8_base64.ts";

export const MASK = "MASKMARK";
export const MASKED = "[GONE]";

/**
 * One OpenAI upstream that speaks both forms, as OpenAI does: `/v1/responses` (and `/v1/responses/compact`)
 * answered by the native fake, the chat completions a request served over the chat form sends by the chat fake
 * (`chat`: any OpenAI-compatible chat upstream, sent {@linkcode FAKE_KEY}).
 */
export function startOpenAIBoth(native: FakeNativeUpstream, chat: { baseURL: string }) {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (request) => {
    const path = new URL(request.url).pathname;
    const [base, key] = path.startsWith("/v1/responses")
      ? [native.baseURL, NATIVE_KEY]
      : [chat.baseURL, FAKE_KEY];
    return await fetch(`${base}${path.slice("/v1".length)}`, {
      method: request.method,
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: await request.text(),
    });
  });
  return { baseURL: `http://127.0.0.1:${server.addr.port}/v1`, stop: () => server.shutdown() };
}

export interface Fakes {
  hook: FakeWebhook;
  responses: FakeNativeUpstream;
  chat: FakeUpstream;
  claude: FakeAnthropic;
  gemini: FakeGemini;
}

export function setup() {
  const fakes = startFakes({
    hook: startFakeWebhook,
    responses: startFakeNativeResponses,
    chat: startFakeOpenAI,
    claude: startFakeAnthropic,
    gemini: startFakeGemini,
  });
  const both = startOpenAIBoth(fakes.responses, fakes.chat);
  fakes.hook.answer = (body: unknown) => {
    const texts = (body as { texts: string[] }).texts;
    if (!texts.some((t) => t.includes(MASK))) return { action: "allow" };
    return { action: "replace", texts: texts.map((t) => t.replaceAll(MASK, MASKED)), categories: ["mark"] };
  };
  return {
    fakes,
    stop: async () => {
      await both.stop();
      await fakes.stop();
    },
    config: `
providers:
  native: { type: openai, base_url: "${both.baseURL}", api_key: "any-key-0123456789", native_responses: true }
  claude: { type: anthropic, base_url: "${fakes.claude.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  gem: { type: gemini, base_url: "${fakes.gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
guardrails:
  hook: { type: webhook, url: "${fakes.hook.url}/check" }
  contacts: { type: pii, entities: [EMAIL], action: mask }
  contacts-back: { type: pii, entities: [EMAIL], action: mask, reverse: true }
  answers: { type: pii, entities: [CREDIT_CARD], action: deny, phase: output }
models:
  chat-resp: { type: chat, targets: [{ provider: native, model: resp-ok }], guardrails: [hook] }
  chat-claude: { type: chat, targets: [{ provider: claude, model: claude-ok }], guardrails: [hook] }
  chat-claude-pii: { type: chat, targets: [{ provider: claude, model: claude-ok }], guardrails: [contacts] }
  chat-gem: { type: chat, targets: [{ provider: gem, model: gem-ok }], guardrails: [hook] }
  chat-claude-back: { type: chat, targets: [{ provider: claude, model: claude-ok }], guardrails: [contacts-back] }
  chat-gem-out: { type: chat, targets: [{ provider: gem, model: gem-ok }], guardrails: [answers] }
${TEST_TOKENS_YAML}`,
  };
}

export function withGateway(fn: (gw: InProcessGateway, fakes: Fakes) => Promise<void>): Promise<void> {
  return withInProcessGateway(setup, fn);
}

/** A body as JSON text with its plain-text files decoded, so a test reads what the model reads. */
export function decoded(body: unknown): string {
  return JSON.stringify(body, (key, value) => {
    if (typeof value !== "string") return value;
    const url = /^data:text\/plain;base64,(.*)$/.exec(value);
    if (url) return decodeUtf8Base64(url[1]) ?? value;
    return key === "data" ? decodeUtf8Base64(value) ?? value : value;
  });
}

export const textFile = (text: string) => `data:text/plain;base64,${encodeUtf8Base64(text)}`;
export const contentDocument = (text: string) => ({
  type: "document" as const,
  source: { type: "content" as const, content: [{ type: "text" as const, text }] },
});
export const LOOKUP = { name: "lookup", input_schema: { type: "object" as const, properties: {} } };

export function postResponses(gw: InProcessGateway, input: unknown[]): Promise<Response> {
  return gw.fetch("/v1/responses", {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat-resp", input }),
  });
}

export function postGemini(gw: InProcessGateway, contents: unknown[]): Promise<Response> {
  return gw.fetch("/v1beta/models/chat-gem:generateContent", {
    method: "POST",
    headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
    body: JSON.stringify({ contents }),
  });
}

export function anthropic(gw: InProcessGateway): Anthropic {
  return new Anthropic({
    apiKey: TEST_TOKEN,
    baseURL: "http://gateway.test",
    maxRetries: 0,
    fetch: fetchThrough(gw),
  });
}

/** The paths `x-gateway-dropped` names. */
export function droppedOf(res: Response): string[] {
  return (res.headers.get("x-gateway-dropped") ?? "").split(",").filter((p) => p !== "");
}

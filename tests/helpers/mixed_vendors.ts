/**
 * A gateway whose aliases mix vendors behind one raw upstream (tests/helpers/raw_upstream.ts), for the tests
 * of what a client API translated to the chat form does with a parameter one vendor refuses and another takes:
 * fallback and weighted aliases of a refusing target and an OpenAI one, one that no target serves, targets
 * that drop (`unsupported_params: drop`), and strict ones. The upstream answers every target with the step the
 * test sets, in the answering vendor's shape ({@linkcode OPENAI_OK}, {@linkcode GEMINI_OK},
 * {@linkcode ANTHROPIC_OK}).
 *
 * @module
 */
import { TEST_TOKENS_YAML, type TestGateway } from "./gateway.ts";
import { type RawStep, type RawUpstream, startRawUpstream } from "./raw_upstream.ts";
import { withTestGateway } from "./with_gateway.ts";

/**
 * The config: `provider` names a vendor (`anthropic`, `gemini`, `bedrock`: a model that is not Claude) and
 * `<vendor>drop` the same with `unsupported_params: drop`. Aliases: `chat-mixed-<vendor>` (the vendor first, then
 * `openai`, fallback), `chat-weighted-<vendor>` (the two weighted), `chat-only-<vendor>`, `chat-strict-<vendor>drop` (the
 * dropping vendor first, then `openai`, strict) and `chat-translated` (anthropic, then bedrock: no OpenAI target).
 */
function configFor(url: string): string {
  const target = (provider: string) => `{ provider: ${provider}, model: m-${provider}, retries: 0 }`;
  const vendors = ["anthropic", "gemini", "bedrock", "anthropicdrop", "geminidrop"];
  const aliases = vendors.map((v) =>
    `  chat-mixed-${v}: { type: chat, targets: [${target(v)}, ${target("openai")}] }
  chat-weighted-${v}: { type: chat, strategy: weighted, targets: [${target(v)}, ${target("openai")}] }
  chat-only-${v}: { type: chat, targets: [${target(v)}] }
  chat-strict-${v}: { type: chat, strict: true, targets: [${target(v)}, ${target("openai")}] }`
  ).join("\n");
  const bedrock = (name: string) =>
    `  ${name}:
    type: bedrock
    region: us-east-1
    base_url: "${url}"
    access_key_id: AKIAQ7EXAMPLEW3RT6YU
    secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY`;
  return `
routing: { backoff_base: 5ms, backoff_max: 10ms }
providers:
  openai: { type: openai, base_url: "${url}/oai/v1", api_key: "sk-upstream-key-abcdef0123456789" }
  anthropic: { type: anthropic, base_url: "${url}", api_key: "sk-ant-key-abcdef0123456789" }
  anthropicdrop: { type: anthropic, base_url: "${url}", api_key: "sk-ant-key-abcdef0123456789", unsupported_params: drop }
  gemini: { type: gemini, base_url: "${url}/v1beta", api_key: "AIzaSy-gem-key-abcdef0123456789" }
  geminidrop: { type: gemini, base_url: "${url}/v1beta", api_key: "AIzaSy-gem-key-abcdef0123456789", unsupported_params: drop }
${bedrock("bedrock")}
models:
${aliases}
  chat-translated: { type: chat, targets: [${target("anthropic")}, ${target("bedrock")}] }
${TEST_TOKENS_YAML}`;
}

/** A chat completion, as an OpenAI target answers. */
export const OPENAI_OK = {
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model: "m",
  choices: [{
    index: 0,
    message: { role: "assistant", content: "hi" },
    finish_reason: "stop",
    logprobs: null,
  }],
  usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
};

/** A GenerateContentResponse, as a Gemini target answers. */
export const GEMINI_OK = {
  candidates: [{ content: { role: "model", parts: [{ text: "hi" }] }, finishReason: "STOP", index: 0 }],
  usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 },
};

/** A Message, as an Anthropic target answers. */
export const ANTHROPIC_OK = {
  id: "msg_1",
  type: "message",
  role: "assistant",
  model: "m",
  content: [{ type: "text", text: "hi" }],
  stop_reason: "end_turn",
  stop_sequence: null,
  usage: { input_tokens: 3, output_tokens: 1 },
};

/** The upstream's step: `body` as a JSON answer. */
export function json(body: unknown): RawStep {
  return { status: 200, headers: { "content-type": "application/json" }, chunks: [JSON.stringify(body)] };
}

/**
 * Runs `fn` against a gateway with the mixed aliases (or the aliases `config` makes for the upstream's URL) over
 * a fresh raw upstream, and stops both.
 */
export function withMixedVendors(
  fn: (gw: TestGateway, up: RawUpstream) => Promise<void>,
  config: (url: string) => string = configFor,
): Promise<void> {
  return withTestGateway(() => {
    const up = startRawUpstream();
    return { fakes: up, config: config(up.url), graceMs: 1000 };
  }, fn);
}

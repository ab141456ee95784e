/**
 * The gateway the answer-echo tests drive: one alias per way an answer reaches a client (an OpenAI-compatible
 * target translated, the same passed through as native Responses, an Anthropic and a Gemini target), all on
 * one raw upstream that quotes `key`, the provider key the gateway holds, wherever the test puts it.
 */
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway } from "../helpers/gateway.ts";

/** A gateway with the aliases `oa`, `native`, `claude` and `gem` on `upstreamUrl`, for the client `token`. */
export function startEchoGateway(
  upstreamUrl: string,
  key: string,
  token: string,
): ReturnType<typeof startGateway> {
  return startGateway(`
providers:
  oa: { type: openai, base_url: "${upstreamUrl}/v1", api_key: ${key} }
  native: { type: openai, base_url: "${upstreamUrl}/v1", api_key: ${key}, native_responses: true }
  claude: { type: anthropic, base_url: "${upstreamUrl}/v1", api_key: ${key} }
  gem: { type: gemini, base_url: "${upstreamUrl}/v1beta", api_key: ${key} }
models:
  oa: { type: chat, targets: [ { provider: oa, model: m, retries: 0 } ] }
  native: { type: chat, targets: [ { provider: native, model: m, retries: 0 } ] }
  claude: { type: chat, targets: [ { provider: claude, model: claude-x, retries: 0 } ] }
  gem: { type: chat, targets: [ { provider: gem, model: gem-x, retries: 0 } ] }
tokens:
  - { name: app, sha256: ${hashToken(token)}, models: ["*"] }
`);
}

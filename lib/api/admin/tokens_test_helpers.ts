/** Helpers shared by the `/admin/tokens` and `/admin/audit` tests: a gateway over the memory token store. */
import assert from "node:assert/strict";
import { hashToken } from "../../auth/authenticate.ts";
import { parseConfigText } from "../../config/load.ts";
import { createMemoryLogger } from "../../log.ts";
import { createProviders } from "../../providers/registry.ts";
import { createGateway } from "../../server.ts";
import { createTokenDirectory } from "../../tokens/directory.ts";
import { createMemoryTokenStore } from "../../tokens/store_memory.ts";
import type { GatewayState } from "../../http/context.ts";

export const ADMIN = "gw-admin-ops-0123456789abcdef";
export const OTHER_ADMIN = "gw-admin-sec-0123456789abcdef";
export const FILE_TOKEN = "gw-file-token-0123456789abcdef";

export const CONFIG = `
providers:
  local: { type: builtin }
models:
  chat-a:
    type: chat
    targets: [ { provider: local, model: echo, price: { input: 1, output: 1 } } ]
  chat-b: { type: chat, targets: [ { provider: local, model: echo } ] }
  embed: { type: embedding, targets: [ { provider: local, model: hash } ] }
tokens:
  - { name: from-file, environment: prod, sha256: ${
  hashToken(FILE_TOKEN)
}, models: ["chat-*"], limits: { rpm: 5 } }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
  - { name: security, sha256: ${hashToken(OTHER_ADMIN)} }
`;

export type Json = Record<string, unknown>;

/**
 * A gateway with the memory store; `raw` keeps the text of every admin answer, to search for secrets. `config`
 * is the YAML it serves ({@linkcode CONFIG} by default).
 */
export function setup(withStore = true, config = CONFIG) {
  const result = parseConfigText(config, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  const state: GatewayState = { config: result.config, providers: createProviders(result.config.providers) };
  const logger = createMemoryLogger();
  const tokens = withStore
    ? createTokenDirectory({ store: createMemoryTokenStore(), logger, pollMs: 60_000 })
    : null;
  const handler = createGateway({ state: () => state, logger, services: { tokens } });
  const raw: string[] = [];
  const admin = async (method: string, path: string, body?: unknown, token = ADMIN) => {
    const response = await handler(
      new Request(`http://gateway.test${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      }),
    );
    const text = await response.text();
    raw.push(text);
    return { status: response.status, body: JSON.parse(text) as Json, headers: response.headers };
  };
  const chat = async (secret: string, model = "chat-a", content = "hi") => {
    const response = await handler(
      new Request("http://gateway.test/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content }] }),
      }),
    );
    const body = await response.json() as Json;
    return { status: response.status, code: (body.error as Json | undefined)?.code ?? null };
  };
  return { admin, chat, raw, logger, close: () => tokens?.close() ?? Promise.resolve() };
}

export function errorOf(body: Json): Json {
  assert.ok(body.error && typeof body.error === "object", JSON.stringify(body));
  return body.error as Json;
}

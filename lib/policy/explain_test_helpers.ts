/** Shared by the explain tests: the test config, and an engine and a health registry over a counter store. */
import assert from "node:assert/strict";
import { parseConfigText } from "../config/load.ts";
import type { ResolvedConfig, ResolvedToken } from "../config/types.ts";
import { HealthRegistry } from "../routing/health.ts";
import type { CounterStore } from "./counter_store.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import { createPolicyEngine, type PolicyEngine } from "./engine.ts";
import { explain } from "./explain.ts";
import type { Explanation, ModelEndpoint } from "./explanation.ts";

/** 2026-11-24T12:00:00Z: the budget period is "2026-11". */
export const T0 = Date.UTC(2026, 10, 24, 12);

const CONFIG = `
providers:
  local: { type: builtin }
  spare: { type: builtin }
routing: { eject_after: 1, eject_cooldown: 30s }
models:
  chat-main:
    type: chat
    limits: { rpm: 100 }
    content_rules:
      - { name: pii, pattern: "\\\\d{3}-\\\\d{2}-\\\\d{4}", action: redact }
      - { name: secrets, pattern: "password", flags: "", action: deny, message: "no passwords" }
    targets:
      - { provider: local, model: echo, price: { input: 1, output: 4 } }
      - { provider: spare, model: echo, weight: 2, price: { input: 0.5, output: 2 } }
  chat-other: { type: chat, targets: [ { provider: local, model: echo } ] }
  embed-main: { type: embedding, targets: [ { provider: local, model: hash } ] }
tokens:
  - name: ci-bot
    environment: staging
    sha256: ${"a".repeat(64)}
    models: ["chat-main", "embed-*"]
    endpoints: [chat, embeddings]
    limits: { rpm: 3, tpm: 1000, concurrent: 2 }
    budget: { tokens: 500, period: month }
    max_tokens: 256
  - name: spender
    sha256: ${"b".repeat(64)}
    models: ["chat-main"]
    budget: { cost: 0.01, period: day, stop_streams: true }
  - name: off
    sha256: ${"c".repeat(64)}
    models: ["*"]
    disabled: true
  - name: old
    sha256: ${"d".repeat(64)}
    models: ["*"]
    expires_at: 2020-01-01
`;

function loadConfig(): ResolvedConfig {
  const result = parseConfigText(CONFIG, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(`test config invalid: ${JSON.stringify(result.issues)}`);
  return result.config;
}

function tokenNamed(config: ResolvedConfig, name: string): ResolvedToken {
  const token = [...config.tokens.values()].find((t) => t.name === name);
  if (!token) throw new Error(`no token ${name}`);
  return token;
}

export interface Setup {
  config: ResolvedConfig;
  engine: PolicyEngine;
  health: HealthRegistry;
  store: CounterStore;
  /** Explains `token` for `alias` with the engine's counters and clock. */
  explainFor(token: string, alias: string, endpoint?: ModelEndpoint): Promise<Explanation>;
  /** Admits a chat request of `tokens` estimated tokens for `token` on `alias`. */
  admit(token: string, alias: string, tokens?: number): ReturnType<PolicyEngine["admit"]>;
}

export function setup(store: CounterStore = createMemoryCounterStore(() => T0)): Setup {
  const config = loadConfig();
  const engine = createPolicyEngine(store, { now: () => T0 });
  const health = new HealthRegistry(() => T0);
  return {
    config,
    engine,
    health,
    store,
    async explainFor(token, alias, endpoint) {
      const model = config.models.get(alias)!;
      const explanation = await explain({
        token: tokenNamed(config, token),
        alias,
        endpoint: endpoint ?? (model.type === "embedding" ? "embeddings" : "chat"),
        config,
        counters: engine.counters,
        health,
        now: engine.now!(),
      });
      assert.ok(explanation);
      return explanation;
    },
    admit(token, alias, tokens = 10) {
      return engine.admit({
        identity: tokenNamed(config, token),
        endpoint: "chat",
        model: config.models.get(alias),
        body: { model: alias, messages: [{ role: "user", content: "hi" }] },
        estimatedTokens: tokens,
      });
    },
  };
}

export function limit(e: Explanation, rule: string) {
  const found = e.limits.find((l) => l.rule === rule);
  assert.ok(found, `no limit ${rule}`);
  return found;
}

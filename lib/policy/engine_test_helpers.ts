/** Helpers shared by the policy engine tests. */
import type { BudgetConfig, LimitsConfig } from "../config/schema.ts";
import type { ResolvedModel, ResolvedToken } from "../config/types.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import { createPolicyEngine, PolicyDenied } from "./engine.ts";
import type { Admission, PolicyRequest } from "./types.ts";

export function clock(start = Date.UTC(2026, 10, 22, 12)) {
  let t = start;
  return { now: () => t, advance: (ms: number) => t += ms, set: (ms: number) => t = ms };
}

export function token(over: Partial<ResolvedToken> = {}): ResolvedToken {
  return {
    name: "web-prod",
    environment: "production",
    sha256: "0".repeat(64),
    patterns: ["*"],
    aliases: new Set(["chat-default"]),
    expiresAt: null,
    disabled: false,
    limits: null,
    budget: null,
    endpoints: null,
    maxTokens: null,
    id: "cfg_web-prod",
    ...over,
  };
}

export function model(over: Partial<ResolvedModel> = {}): ResolvedModel {
  return {
    alias: "chat-default",
    type: "chat",
    strategy: "fallback",
    targets: [],
    ownedBy: "me",
    created: 0,
    limits: null,
    contentRules: [],
    strict: false,
    ...over,
  };
}

/** A chat request of `identity` on the default alias, estimated at `estimatedTokens`. */
export function chatRequest(identity: ResolvedToken, estimatedTokens: number): PolicyRequest {
  return {
    identity,
    endpoint: "chat",
    model: model(),
    body: { model: "chat-default", messages: [{ role: "user", content: "hi" }] },
    estimatedTokens,
  };
}

export function setup(
  opts: { limits?: LimitsConfig; aliasLimits?: LimitsConfig; budget?: BudgetConfig } = {},
) {
  const c = clock();
  const store = createMemoryCounterStore(c.now);
  const engine = createPolicyEngine(store, { now: c.now });
  const identity = token({ limits: opts.limits ?? null, budget: opts.budget ?? null });
  const alias = model({ limits: opts.aliasLimits ?? null });
  const req = (over: Partial<PolicyRequest> = {}): PolicyRequest => ({
    identity,
    endpoint: "chat",
    model: alias,
    body: { model: "chat-default", messages: [{ role: "user", content: "hi" }], max_tokens: 10 },
    estimatedTokens: 1,
    ...over,
  });
  return { c, store, engine, identity, alias, req };
}

export interface Outcome {
  admitted: Admission[];
  denied: PolicyDenied[];
}

export async function fire(n: number, admit: () => Promise<Admission>): Promise<Outcome> {
  const results = await Promise.allSettled(Array.from({ length: n }, admit));
  const out: Outcome = { admitted: [], denied: [] };
  for (const r of results) {
    if (r.status === "fulfilled") out.admitted.push(r.value);
    else if (r.reason instanceof PolicyDenied) out.denied.push(r.reason);
    else throw r.reason;
  }
  return out;
}

export function header(err: PolicyDenied, name: string): string | null {
  return new Headers(err.headers).get(name);
}

export async function denial(p: Promise<unknown>): Promise<PolicyDenied> {
  try {
    await p;
  } catch (err) {
    if (err instanceof PolicyDenied) return err;
    throw err;
  }
  throw new Error("expected a PolicyDenied");
}

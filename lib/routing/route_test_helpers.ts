/** Helpers shared by the routing tests: targets, aliases, deterministic surroundings and scripted attempts. */
import type { RoutingConfig, Strategy } from "../config/schema.ts";
import type { ResolvedModel, RoutedTarget } from "../config/types.ts";
import { GatewayError } from "../errors.ts";
import { HealthRegistry } from "./health.ts";
import { seededRandom } from "./plan.ts";
import type { RouteDeps } from "./route.ts";

export const SETTINGS: RoutingConfig = {
  backoff_base: 100,
  backoff_max: 2_000,
  retry_after_max: 5_000,
  eject_after: 3,
  eject_cooldown: 30_000,
};

export function target(name: string, extra: Partial<RoutedTarget> = {}): RoutedTarget {
  return {
    provider: name,
    providerConfig: { type: "builtin" },
    model: `${name}-model`,
    timeouts: { firstByteMs: 1000, idleMs: 1000, totalMs: 1000 },
    key: `${name}-key`,
    weight: 1,
    maxInFlight: null,
    retries: 1,
    price: null,
    ...extra,
  };
}

export function alias(strategy: Strategy, targets: RoutedTarget[]): ResolvedModel {
  return {
    alias: "chat-x",
    type: "chat",
    strategy,
    targets,
    ownedBy: "t",
    created: 0,
    limits: null,
    contentRules: [],
    strict: false,
  };
}

/** Deterministic surroundings: a seeded random source, a clock the test moves, sleeps that only record. */
export function deps(seed = 1) {
  const clock = { now: 1_000_000 };
  const sleeps: number[] = [];
  const d: RouteDeps = {
    health: new HealthRegistry(() => clock.now),
    random: seededRandom(seed),
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
    now: () => clock.now,
  };
  return { deps: d, clock, sleeps };
}

export const upstream = (status: number, headers?: HeadersInit) =>
  new GatewayError(status === 500 ? 502 : status, `upstream ${status}`, { code: `u${status}`, headers });

/** An attempt function scripted per provider: each call takes the next outcome ("ok" or an error). */
export function scripted(script: Record<string, (string | GatewayError)[]>) {
  const calls: string[] = [];
  const attempt = (t: RoutedTarget) => {
    calls.push(t.provider);
    const next = script[t.provider]?.shift() ?? "ok";
    return next === "ok" ? Promise.resolve(`${t.provider} answered`) : Promise.reject(next);
  };
  return { calls, attempt };
}

export const signal = new AbortController().signal;

/**
 * The order in which a request tries an alias's targets, by the alias's strategy. Pure apart from the random
 * source, which tests seed so that every decision can be replayed.
 *
 * @module
 */
import type { ResolvedModel, RoutedTarget } from "../config/types.ts";

/** A source of uniform numbers in [0, 1). */
export type Random = () => number;

/** Recent latency of a target (ms), or null when it has none yet. */
export type LatencyOf = (target: RoutedTarget) => number | null;

/** Picks by weight without replacement: the first is chosen with probability weight / total, and so on. */
function weightedOrder(targets: readonly RoutedTarget[], random: Random): RoutedTarget[] {
  const pool = [...targets];
  const out: RoutedTarget[] = [];
  while (pool.length > 0) {
    const total = pool.reduce((sum, t) => sum + t.weight, 0);
    let point = random() * total;
    let index = pool.length - 1;
    for (let i = 0; i < pool.length; i++) {
      point -= pool[i].weight;
      if (point < 0) {
        index = i;
        break;
      }
    }
    out.push(pool.splice(index, 1)[0]);
  }
  return out;
}

/**
 * Power of two choices: two targets drawn by weight, the one with the lower recent latency first (a target
 * with no latency yet wins, so new targets get explored); the rest follow by latency as fallbacks.
 */
function latencyOrder(targets: readonly RoutedTarget[], random: Random, latency: LatencyOf): RoutedTarget[] {
  const cost = (t: RoutedTarget) => latency(t) ?? -1;
  const [a, b, ...rest] = weightedOrder(targets, random);
  if (b === undefined) return [a];
  const pair = cost(b) < cost(a) ? [b, a] : [a, b];
  return [...pair, ...rest.sort((x, y) => cost(x) - cost(y))];
}

/** `targets` in the order the strategy tries them. */
function strategyOrder(
  strategy: ResolvedModel["strategy"],
  targets: readonly RoutedTarget[],
  random: Random,
  latency: LatencyOf,
): RoutedTarget[] {
  if (targets.length === 1) return [targets[0]];
  switch (strategy) {
    case "fallback":
      return [...targets];
    case "weighted":
      return weightedOrder(targets, random);
    case "latency":
      return latencyOrder(targets, random, latency);
  }
}

/**
 * Every target of `model`, in the order this request should try them: by the alias's strategy, the targets
 * marked {@linkcode RoutedTarget.fallbackOnly} after all the others (so a weight or a latency never puts one
 * of them first).
 */
export function orderTargets(model: ResolvedModel, random: Random, latency: LatencyOf): RoutedTarget[] {
  const targets = model.targets;
  if (targets.length === 1) return [targets[0]];
  if (!targets.some((t) => t.fallbackOnly === true)) {
    return strategyOrder(model.strategy, targets, random, latency);
  }
  const first = targets.filter((t) => t.fallbackOnly !== true);
  const then = targets.filter((t) => t.fallbackOnly === true);
  return [
    ...(first.length === 0 ? [] : strategyOrder(model.strategy, first, random, latency)),
    ...strategyOrder(model.strategy, then, random, latency),
  ];
}

/** A small, fast, seedable generator (mulberry32), for tests and reproducible runs. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

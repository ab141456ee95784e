/**
 * Runs one request against an alias's targets: in strategy order, skipping ejected and saturated targets,
 * retrying transient failures with backoff (or the upstream's `Retry-After`; none when it says
 * `x-should-retry: false`), then falling back to the next target. An attempt counts as answered once its first byte is in hand (for streams, once the stream commits:
 * its first chunk that shows the client something, lib/answer/stream_start.ts), so a fallback never happens
 * after anything has reached the client.
 *
 * @module
 */
import type { RoutingConfig } from "../config/schema.ts";
import type { ResolvedModel, RoutedTarget } from "../config/types.ts";
import { ClientGoneError, GatewayError, printable } from "../errors.ts";
import type { HealthRegistry, Lease } from "./health.ts";
import { orderTargets, type Random } from "./plan.ts";
import { classifyFailure, countsAgainstTarget, retryDelay, upstreamForbidsRetry } from "./retry.ts";

/** What routing needs from its surroundings; tests pass a seeded random source and a fake clock. */
export interface RouteDeps {
  readonly health: HealthRegistry;
  readonly random: Random;
  /** Waits `ms`, rejecting with the signal's reason if it aborts first. */
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Epoch ms, for Retry-After on a 503 of ejected targets. */
  readonly now: () => number;
}

/** One attempt, as recorded with the request (a type alias, so it is a plain JSON record for the log). */
export type AttemptRecord = {
  provider: string;
  model: string;
  /** "ok", or the error code (or status) of the failure. */
  outcome: string;
  latency_ms: number;
};

/** The attempt that answered. */
export interface Routed<T> {
  value: T;
  target: RoutedTarget;
  /** Release when the answer is over; call `failed()` first if a stream broke after it started. */
  lease: Lease;
}

/**
 * Thrown by an attempt that asks its target nothing: the target routing picked cannot do what the request
 * needs (a token count on a vendor without a counting endpoint), so the caller answers without an upstream.
 * Routing ends there, but it is no attempt: nothing is recorded, and the target's health learns nothing from
 * it. Health counts only what an upstream did: an answer made on the gateway would otherwise end an
 * ejection (take the half-open probe), clear a failing target's streak and feed its latency a ~0 ms sample.
 */
export class NoUpstreamCall extends Error {
  constructor() {
    super("The attempt made no upstream call.");
    this.name = "NoUpstreamCall";
  }
}

function outcomeOf(err: unknown): string {
  if (err instanceof GatewayError) return err.code ?? String(err.status);
  return "internal_error";
}

/** A sleep that ends early, rejecting, when `signal` aborts. */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new ClientGoneError());
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ClientGoneError());
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

function unavailableError(model: ResolvedModel, deps: RouteDeps): GatewayError {
  const now = deps.now();
  const ends = model.targets.map((t) => deps.health.ejectedUntil(t)).filter((until) => until > now);
  const seconds = ends.length === model.targets.length
    ? Math.max(1, Math.ceil((Math.min(...ends) - now) / 1000))
    : 1;
  return new GatewayError(
    503,
    `Every target of the model \`${
      printable(model.alias)
    }\` is at capacity or temporarily failing; retry later.`,
    { type: "server_error", code: "no_target_available", headers: { "retry-after": String(seconds) } },
  );
}

/**
 * Tries `attempt` on the alias's targets until one answers. `attempts` is filled as it goes, so the caller
 * can log every attempt even when all fail. Throws the last failure, or a 503 with `Retry-After` when no
 * target could even be tried; an attempt's {@linkcode NoUpstreamCall} is thrown on at once, unrecorded.
 */
export async function route<T>(
  model: ResolvedModel,
  settings: RoutingConfig,
  deps: RouteDeps,
  signal: AbortSignal,
  attempts: AttemptRecord[],
  attempt: (target: RoutedTarget) => Promise<T>,
): Promise<Routed<T>> {
  const order = orderTargets(model, deps.random, (t) => deps.health.latency(t));
  let lastError: unknown = undefined;
  for (const target of order) {
    for (let retry = 0;; retry++) {
      const lease = deps.health.acquire(target, settings);
      if (typeof lease === "string") break;
      const started = performance.now();
      try {
        const value = await attempt(target);
        const latency = performance.now() - started;
        lease.succeeded(latency);
        attempts.push({
          provider: target.provider,
          model: target.model,
          outcome: "ok",
          latency_ms: round(latency),
        });
        return { value, target, lease };
      } catch (err) {
        if (err instanceof NoUpstreamCall) {
          // Neither a success nor a failure (nor, half-open, the probe): the slot is given back untouched.
          lease.release();
          throw err;
        }
        const latency = performance.now() - started;
        attempts.push({
          provider: target.provider,
          model: target.model,
          outcome: outcomeOf(err),
          latency_ms: round(latency),
        });
        const kind = signal.aborted ? "final" : classifyFailure(err);
        if (kind === "final") {
          lease.release();
          throw err;
        }
        if (countsAgainstTarget(err)) lease.failed();
        lease.release();
        lastError = err;
        if (kind === "next" || retry >= target.retries || upstreamForbidsRetry(err)) break;
        const delay = retryDelay(err, retry, settings, deps.random);
        if (delay === null) break;
        await deps.sleep(delay, signal);
      }
    }
  }
  throw lastError ?? unavailableError(model, deps);
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

/**
 * Per-target health: in-flight count, recent latency, consecutive failures and outlier ejection.
 *
 * A target that fails `eject_after` times in a row is skipped for `eject_cooldown`; after that exactly one
 * request probes it, and its outcome decides between healthy and another cooldown. State is keyed by
 * {@linkcode RoutedTarget.key}, so it survives a config reload for targets that still exist.
 *
 * @module
 */
import type { RoutedTarget } from "../config/types.ts";
import type { RoutingConfig } from "../config/schema.ts";

/** Why a target cannot take a request right now. */
export type Unavailable = "ejected" | "saturated";

/** What `/admin/targets` shows for one target. */
export interface TargetHealthSnapshot {
  key: string;
  provider: string;
  model: string;
  /** `half_open`: the cooldown is over and the next request will probe the target. */
  state: "healthy" | "ejected" | "half_open" | "probing";
  in_flight: number;
  consecutive_failures: number;
  /** ISO time the cooldown ends, while ejected. */
  ejected_until: string | null;
  /** Exponential moving average of time to first byte of successful attempts, in ms. */
  latency_ewma_ms: number | null;
  successes: number;
  failures: number;
}

interface TargetState {
  provider: string;
  model: string;
  inFlight: number;
  consecutiveFailures: number;
  ejectedUntil: number;
  probing: boolean;
  latencyEwma: number | null;
  successes: number;
  failures: number;
}

/** A target's cooldown set (`until`, epoch ms) or ended (`until` 0). */
export interface CooldownChange {
  readonly key: string;
  readonly provider: string;
  readonly model: string;
  readonly until: number;
}

/** Weight of the newest sample in the latency average: recent enough to react, smooth enough not to flap. */
const EWMA_ALPHA = 0.3;

/**
 * A granted slot on a target. Report how the attempt went (`succeeded` when the answer started, `failed`
 * when the target failed, possibly after a success if a stream broke later), and `release` the slot when the
 * answer is over. Each call takes effect once.
 */
export interface Lease {
  /** Whether this attempt is the probe of an ejected target. */
  readonly probe: boolean;
  succeeded(latencyMs: number): void;
  failed(): void;
  release(): void;
}

/** Health of every target this gateway process has sent traffic to. */
export class HealthRegistry {
  readonly #states = new Map<string, TargetState>();
  readonly #now: () => number;
  /** Told of each ejection (a healthy target put in cooldown), e.g. to alert; must not throw or block. */
  onEjected?: (event: { target: string; provider: string; until: string; failures: number }) => void;
  /**
   * Told when a target's cooldown is set or ended by this registry's own traffic (the workers of one gateway
   * pass it on, so a target ejected by one is ejected by all); must not throw or block.
   */
  onCooldown?: (change: CooldownChange) => void;
  /**
   * Where `max_in_flight` is counted when several workers serve one gateway (`lib/workers/shared_in_flight.ts`):
   * the places are taken across all of them. Absent in a single process, which counts its own.
   */
  sharedInFlight?: {
    take(key: string, max: number): boolean;
    give(key: string): void;
    taken(key: string): number;
  };

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  #state(target: Pick<RoutedTarget, "key" | "provider" | "model">): TargetState {
    let state = this.#states.get(target.key);
    if (state === undefined) {
      state = {
        provider: target.provider,
        model: target.model,
        inFlight: 0,
        consecutiveFailures: 0,
        ejectedUntil: 0,
        probing: false,
        latencyEwma: null,
        successes: 0,
        failures: 0,
      };
      this.#states.set(target.key, state);
    }
    return state;
  }

  /** Recent latency of a target, or null before its first success. */
  latency(target: RoutedTarget): number | null {
    return this.#states.get(target.key)?.latencyEwma ?? null;
  }

  /**
   * The places `target` has taken now: across every worker when they share its `max_in_flight`, else this
   * process's (a snapshot's `in_flight` is always this process's own).
   */
  inFlight(target: Pick<RoutedTarget, "key" | "maxInFlight">): number {
    const shared = target.maxInFlight === null ? undefined : this.sharedInFlight;
    return shared?.taken(target.key) ?? this.#states.get(target.key)?.inFlight ?? 0;
  }

  /** When an ejected target's cooldown ends (epoch ms), or 0. */
  ejectedUntil(target: RoutedTarget): number {
    return this.#states.get(target.key)?.ejectedUntil ?? 0;
  }

  /**
   * Takes a slot on `target`, or says why it cannot take one: its in-flight limit is reached, or it is
   * ejected (during the cooldown, or after it while another request is already probing it).
   */
  acquire(target: RoutedTarget, settings: RoutingConfig): Lease | Unavailable {
    const state = this.#state(target);
    const now = this.#now();
    let probe = false;
    if (state.ejectedUntil > 0) {
      if (now < state.ejectedUntil || state.probing) return "ejected";
      probe = true;
    }
    const max = target.maxInFlight;
    const shared = max === null ? undefined : this.sharedInFlight;
    if (max !== null && (shared ? !shared.take(target.key, max) : state.inFlight >= max)) return "saturated";
    state.inFlight++;
    if (probe) state.probing = true;
    let released = false;
    let succeeded = false;
    let failed = false;
    return {
      probe,
      succeeded: (latencyMs) => {
        if (succeeded || failed) return;
        succeeded = true;
        state.successes++;
        state.consecutiveFailures = 0;
        if (state.ejectedUntil !== 0) {
          this.onCooldown?.({ key: target.key, provider: target.provider, model: target.model, until: 0 });
        }
        state.ejectedUntil = 0;
        state.latencyEwma = state.latencyEwma === null
          ? latencyMs
          : EWMA_ALPHA * latencyMs + (1 - EWMA_ALPHA) * state.latencyEwma;
      },
      failed: () => {
        if (failed) return;
        failed = true;
        state.failures++;
        state.consecutiveFailures++;
        if ((probe && !succeeded) || state.consecutiveFailures >= settings.eject_after) {
          const now = this.#now();
          const wasServing = state.ejectedUntil <= now || probe;
          state.ejectedUntil = now + settings.eject_cooldown;
          this.onCooldown?.({
            key: target.key,
            provider: target.provider,
            model: target.model,
            until: state.ejectedUntil,
          });
          if (wasServing && this.onEjected) {
            this.onEjected({
              target: `${state.provider}/${state.model}`,
              provider: state.provider,
              until: new Date(state.ejectedUntil).toISOString(),
              failures: state.consecutiveFailures,
            });
          }
        }
      },
      release: () => {
        if (released) return;
        released = true;
        state.inFlight--;
        shared?.give(target.key);
        if (probe) state.probing = false;
      },
    };
  }

  /**
   * Applies a cooldown another registry set or ended (`until` 0): the target is ejected, or serving again, here
   * too. Told by the primary; never calls `onCooldown` or `onEjected` (the registry that decided did).
   */
  applyCooldown(change: CooldownChange): void {
    const state = this.#state(change);
    state.ejectedUntil = change.until;
    if (change.until === 0) state.consecutiveFailures = 0;
  }

  /** Every known target's state, for the admin endpoint. */
  snapshot(): TargetHealthSnapshot[] {
    const now = this.#now();
    return [...this.#states.entries()].map(([key, s]) => ({
      key,
      provider: s.provider,
      model: s.model,
      state: s.probing
        ? "probing"
        : s.ejectedUntil > now
        ? "ejected"
        : s.ejectedUntil > 0
        ? "half_open"
        : "healthy",
      in_flight: s.inFlight,
      consecutive_failures: s.consecutiveFailures,
      ejected_until: s.ejectedUntil > now ? new Date(s.ejectedUntil).toISOString() : null,
      latency_ewma_ms: s.latencyEwma === null ? null : Math.round(s.latencyEwma * 100) / 100,
      successes: s.successes,
      failures: s.failures,
    }));
  }

  /** Forgets targets no longer configured (after a reload), keeping those whose key is still in use. */
  retain(keys: ReadonlySet<string>): void {
    for (const [key, state] of this.#states) {
      if (!keys.has(key) && state.inFlight === 0) this.#states.delete(key);
    }
  }
}

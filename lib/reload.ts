/**
 * Zero-downtime config reload. A new config is loaded and validated completely (schema, cross-checks,
 * provider setup) before anything changes; if it is invalid, the gateway keeps serving the old one and says
 * so in the log and on `/readyz`. A valid one replaces the old in one assignment: requests that already
 * started keep the state they took, new requests get the new one. Keys taken only at start that it changes
 * are named (`restart_required`), in the log and on `/readyz`; one that `check` and the next start would refuse (a
 * usage file that cannot be written where it says) refuses the reload, so a reload that says ok means the next
 * restart works (`start_checks.ts`).
 *
 * Reading, parsing and validating the file is the slow part (seconds for a multi-megabyte file), so the
 * server hands it to `validate`, which runs it in a worker thread; only the resolution of the validated data,
 * a quick linear step, and the provider setup run on the serving thread. The workers of `serve --workers N`
 * take a reload in two phases ({@linkcode StagedReloader}), so that it is swapped in by all of them or by none.
 *
 * @module
 */
import { validateConfigFile } from "./config/config_worker_client.ts";
import { resolveValidated, type ValidationResult } from "./config/load.ts";
import { ConfigSetupError } from "./config/setup_error.ts";
import { restartRequired } from "./config/start_only.ts";
import { EMBEDDED_CONFIG_SOURCE } from "./config/default_config.ts";
import type { ConfigIssue, LoadResult, ResolvedConfig } from "./config/types.ts";
import type { GatewayState } from "./http/context.ts";
import type { Logger } from "./log.ts";
import { createProviders, type Env, ProviderSetupError } from "./providers/registry.ts";
import type { HealthRegistry } from "./routing/health.ts";
import { startOnlyIssues } from "./start_checks.ts";

/** The outcome of the latest reload attempt, shown on `/readyz` and `/admin/reload`. */
export interface ReloadStatus {
  ok: boolean;
  /** ISO time of the attempt. */
  at: string;
  /** What triggered it: "signal", "file", "admin". */
  trigger: string;
  /** Every problem found, when it failed (messages never contain secrets). */
  issues: readonly ConfigIssue[];
  /**
   * Keys taken only at start whose value in the live config differs from the one the gateway started with
   * (`config/start_only.ts`): in the file, not in effect until a restart. Empty when none, or when it failed.
   */
  restart_required: readonly string[];
}

/** Holds the live state and swaps it on a successful reload. */
export interface Reloader {
  /** The state new requests use. */
  current(): GatewayState;
  /** The latest reload attempt, or null if none happened yet. */
  status(): ReloadStatus | null;
  /** Loads the config file again; concurrent calls run one after another. */
  reload(trigger: string): Promise<ReloadStatus>;
}

/** Options for {@linkcode createReloader}. */
export interface ReloaderOptions {
  path: string;
  env: () => Env;
  logger: Logger;
  initial: GatewayState;
  /** Health of targets; forgets targets that are gone, keeps those still configured. */
  health?: HealthRegistry;
  /**
   * Reads and validates the file (default: on this thread). The server passes a worker-backed one so that
   * validation never stalls requests; it must resolve, never reject.
   */
  validate?: (path: string, env: Env) => Promise<ValidationResult>;
  /** Runs after a new state is swapped in (to prepare per-config state such as budget counters). */
  onReload?: (state: GatewayState) => Promise<void> | void;
  /**
   * What the new config must agree with beyond the file: the tokens and teams made through the admin API (their
   * money budgets need prices, `tokens/stored_budget_prices.ts`). Issues refuse the reload as the file's would.
   * Must resolve, never reject.
   */
  checkStored?: (config: ResolvedConfig) => Promise<readonly ConfigIssue[]>;
  /**
   * Runs the start checks of the start-only keys a reload changes (`start_checks.ts`: a usage file that cannot be
   * written where it says) against the config the gateway started with (default true). A worker of
   * `serve --workers N` does not: the primary ran them before asking it.
   */
  startChecks?: boolean;
  /**
   * Logs each outcome (`config_reloaded`, `config_reload_failed`; default true). A worker of `serve --workers N`
   * does not: the primary logs the one outcome of every worker's reload, once.
   */
  logOutcome?: boolean;
}

/** A resolved config set up to serve, or the issues of what could not be set up. */
export type SetUpResult =
  | { readonly ok: true; readonly state: GatewayState }
  | { readonly ok: false; readonly issues: readonly ConfigIssue[] };

/**
 * Sets up the providers of a resolved config. A provider that cannot be (no credentials anywhere) is an issue at
 * `providers.<name>`, as a guardrail's service is one at `guardrails.<name>` when the config resolves: what
 * `check`, `serve` and a reload report, never a throw.
 */
export function setUpState(config: ResolvedConfig, env: Env): SetUpResult {
  try {
    return { ok: true, state: { config, providers: createProviders(config.providers, env) } };
  } catch (err) {
    if (err instanceof ProviderSetupError) {
      return { ok: false, issues: [{ path: `providers.${err.provider}`, message: err.message }] };
    }
    if (err instanceof ConfigSetupError) {
      return { ok: false, issues: [{ path: err.path, message: err.message }] };
    }
    throw err;
  }
}

/**
 * Resolves a validated config and sets it up. Whatever throws on the way is a failed reload with one issue,
 * never a rejection: the reload must end in `config_reload_failed` and show on `/readyz` whatever went wrong.
 */
function resolveAndSetUp(validated: ValidationResult, source: string, env: Env): SetUpResult {
  if (!validated.ok) return validated;
  try {
    const result: LoadResult = resolveValidated(validated.validated, { source, env });
    return result.ok ? setUpState(result.config, env) : result;
  } catch (err) {
    const reason = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    return { ok: false, issues: [{ path: "", message: `the config could not be set up (${reason})` }] };
  }
}

/** The keys of every target `config` routes to (a target's health and places are kept by its key). */
export function targetKeys(config: ResolvedConfig): string[] {
  return [...config.models.values()].flatMap((m) => m.targets.map((t) => t.key));
}

/** Logs a reload's outcome: `config_reloaded`, or `config_reload_failed` with every issue. */
export function logReloadOutcome(
  logger: Logger,
  path: string,
  status: ReloadStatus,
  live: ResolvedConfig,
): void {
  if (status.ok) {
    logger.info("config_reloaded", {
      config: path,
      trigger: status.trigger,
      models: live.models.size,
      restart_required: status.restart_required,
    });
  } else {
    logger.error("config_reload_failed", {
      config: path,
      trigger: status.trigger,
      kept: "previous config",
      issues: status.issues.map((i) => ({ path: i.path, line: i.line ?? null, message: i.message })),
    });
  }
}

/**
 * A reload asked of the compiled-in default config (a single binary started without `--config` or
 * `$GATEWAY_CONFIG`): there is no file to read again, so nothing changes and nothing was found wrong. Logged as
 * `config_reload_skipped` (when `logger` is given), not kept as the latest reload (`/readyz` shows no failure for
 * a config that is still the one serving), and answered to `POST /admin/reload` as not swapped in, saying why.
 */
export function embeddedReloadSkipped(logger: Logger | undefined, trigger: string): ReloadStatus {
  const reason =
    "the compiled-in default config has no file to read again; start with --config FILE to reload";
  logger?.warn("config_reload_skipped", {
    config: EMBEDDED_CONFIG_SOURCE,
    trigger,
    reason,
    kept: "current config",
  });
  return {
    ok: false,
    at: new Date().toISOString(),
    trigger,
    issues: [{ path: "", message: reason }],
    restart_required: [],
  };
}

/**
 * A reloader whose reload can also be taken in two phases, as the workers of `serve --workers N` take one together
 * (`workers/pool_reload.ts`): {@linkcode StagedReloader.prepare} sets a validated config up beside the live one,
 * which may fail; {@linkcode StagedReloader.commit} swaps it in, which cannot; {@linkcode StagedReloader.discard}
 * forgets it. So a reload that one worker cannot set up is swapped in by none.
 */
export interface StagedReloader extends Reloader {
  /**
   * Resolves `validation` and sets it up (its providers, and the checks this reloader runs), keeping the result
   * without swapping it in: the status says whether it can be committed. One prepared reload at a time (a new one
   * replaces it); in turn with `reload`.
   */
  prepare(trigger: string, validation: ValidationResult): Promise<ReloadStatus>;
  /**
   * Swaps the prepared state in as a successful `reload` does (the live state, the health of targets gone, the
   * latest status), without `onReload` and the outcome's log line: whoever runs the two phases does what follows
   * the swap. Nothing in it can fail; false when nothing is prepared.
   */
  commit(): boolean;
  /** Forgets the prepared state, if any. */
  discard(): void;
}

/** A config set up and checked, ready to be swapped in, or the failed status of one that is not. */
type SetUp =
  | { readonly status: ReloadStatus & { ok: true }; readonly state: GatewayState }
  | { readonly status: ReloadStatus; readonly state?: undefined };

/** Creates the reloader for a config file. */
export function createReloader(options: ReloaderOptions): StagedReloader {
  let state = options.initial;
  /** What the gateway started with: what a start-only key's change is told against. */
  const started = options.initial.config;
  let last: ReloadStatus | null = null;
  let queue: Promise<unknown> = Promise.resolve();
  const validate = options.validate ?? validateConfigFile;
  /** The reload {@linkcode StagedReloader.prepare} set up, until it is committed or discarded. */
  let prepared: SetUp | undefined;

  function inTurn<T>(fn: () => Promise<T>): Promise<T> {
    const next = queue.then(fn);
    queue = next.catch(() => {});
    return next;
  }

  /** Sets `validated` up and runs the checks; nothing is swapped in. */
  async function setUp(trigger: string, at: string, validated: ValidationResult, env: Env): Promise<SetUp> {
    let result = resolveAndSetUp(validated, options.path, env);
    if (result.ok && options.checkStored) {
      const stored = await options.checkStored(result.state.config);
      if (stored.length > 0) result = { ok: false, issues: stored };
    }
    if (result.ok && options.startChecks !== false) {
      const refused = await startOnlyIssues(started, result.state.config, env);
      if (refused.length > 0) result = { ok: false, issues: refused };
    }
    if (!result.ok) {
      return { status: { ok: false, at, trigger, issues: result.issues, restart_required: [] } };
    }
    const restart = restartRequired(started, result.state.config);
    return { status: { ok: true, at, trigger, issues: [], restart_required: restart }, state: result.state };
  }

  /** Makes `set` the outcome: its state swapped in when it has one, its status the latest. */
  function take(set: SetUp): void {
    if (set.state !== undefined) {
      state = set.state;
      options.health?.retain(new Set(targetKeys(state.config)));
    }
    last = set.status;
  }

  async function attempt(trigger: string): Promise<ReloadStatus> {
    if (options.path === EMBEDDED_CONFIG_SOURCE) {
      return embeddedReloadSkipped(options.logOutcome === false ? undefined : options.logger, trigger);
    }
    const at = new Date().toISOString();
    const env = options.env();
    const set = await setUp(trigger, at, await validate(options.path, env), env);
    take(set);
    if (set.status.ok) await options.onReload?.(state);
    if (options.logOutcome !== false) {
      logReloadOutcome(options.logger, options.path, set.status, state.config);
    }
    return set.status;
  }

  return {
    current: () => state,
    status: () => last,
    reload: (trigger) => inTurn(() => attempt(trigger)),
    prepare: (trigger, validation) =>
      inTurn(async () => {
        prepared = undefined;
        const set = await setUp(trigger, new Date().toISOString(), validation, options.env());
        if (set.state !== undefined) prepared = set;
        else take(set);
        return set.status;
      }),
    commit() {
      if (prepared === undefined) return false;
      take(prepared);
      prepared = undefined;
      return true;
    },
    discard() {
      prepared = undefined;
    },
  };
}

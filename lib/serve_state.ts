/**
 * What a running gateway keeps once, however many threads serve it, and what each serving thread builds for
 * itself. One process serving from one thread owns both; with `serve --workers N` the primary owns the
 * shared state (counters, usage pipeline and database, stored responses, token store) and each worker builds
 * its services around proxies of it (`lib/workers/`), so limits, budgets and records stay exact.
 *
 * @module
 */
import { createAlerts } from "./alerts/alerts.ts";
import { alertHooks, alertSeeding } from "./alerts/policy_hooks.ts";
import { createConfiguredCache } from "./cache/create.ts";
import type { PostgresConfig } from "./config/schema.ts";
import type { ResolvedConfig } from "./config/types.ts";
import type {
  CountersStatus,
  GatewayServices,
  StoresStatus,
  UsageQueryable,
  UsageSink,
} from "./http/context.ts";
import type { Logger } from "./log.ts";
import type { GatewayMetrics } from "./metrics/gateway_metrics.ts";
import { createMemoryCounterStore } from "./policy/memory_counter_store.ts";
import { type CounterStore, createPolicyEngine } from "./policy/engine.ts";
import { createResilientCounterStore } from "./policy/resilient_counter_store.ts";
import { type BudgetSeeder, createBudgetSeeder } from "./policy/budget_seeder.ts";
import { seedStoredTeamBudgets, seedTokenBudgets } from "./policy/seed_budgets.ts";
import { gatewayServices } from "./server.ts";
import { awaitStartSeeds } from "./start_seeds.ts";
import { reasonOf, StartError } from "./start_error.ts";
import { configuredTelemetry } from "./telemetry/configured.ts";
import { createTokenDirectory, type TokenDirectory } from "./tokens/directory.ts";
import { observeInserts } from "./usage/observed_store.ts";
import { createUsagePipeline, type UsagePipeline } from "./usage/pipeline.ts";
import { openPostgresStore } from "./usage/postgres_store.ts";
import type { ResponsesStore } from "./usage/responses_store.ts";
import { createMemoryResponsesStore } from "./usage/responses_store_memory.ts";
import { startResponsesRetention } from "./usage/retention.ts";
import { openSqliteWorkerStore } from "./usage/sqlite_worker_store.ts";
import type { UsageDatabase } from "./usage/store.ts";

/**
 * How long the usage pipeline's close gives the database in all (the batch in flight, then the final inserts)
 * before it spills what the database has not confirmed. A share of the time a platform allows a shutdown after
 * the drain (Docker kills 10 s after SIGTERM by default): a hung database must cost the records a trip through
 * the spill file, never the records themselves. A batch that commits after all is stored once: the replay's
 * copy has the same `uid`, which the database ignores.
 */
export const USAGE_CLOSE_MS = 1_500;

/** The state a gateway keeps once: the serving thread's in one process, the primary's with workers. */
export interface SharedState {
  readonly counters: CounterStore;
  readonly store: UsageDatabase | null;
  readonly pipeline: UsagePipeline | null;
  /** Stored responses: the usage database's, else in memory (lost at restart). */
  readonly responses: ResponsesStore;
  readonly tokens: TokenDirectory | null;
  /**
   * Seeds budgets from the usage store: call `seed` at start and on reload; it seeds again by itself when a
   * spill file's records reach the store.
   */
  readonly budgets: BudgetSeeder;
  /**
   * Before listening: the stored tokens' first load, then `config`'s seed, waited for one call's time of the
   * shared stores at most (`start_seeds.ts`); what is not over then goes on in the background.
   */
  seedAtStart(config: ResolvedConfig): Promise<void>;
  /** What `/readyz` says about the counters and the usage database, from the state their components keep. */
  stores(): StoresStatus;
  /**
   * Stops retention, the budget seeds and the token directory, flushes the pipeline (within
   * {@linkcode USAGE_CLOSE_MS}, then spills), closes the store and the counters. Bounded whatever the database
   * does: what still waits on it once the records are safe is ended with the store.
   */
  close(): Promise<void>;
}

/** What a serving thread's services are built around: the shared state, or proxies of it. */
export interface SharedView {
  readonly counters: CounterStore;
  readonly usage: UsageSink | null;
  readonly usageStore: UsageQueryable | null;
  readonly responses: ResponsesStore;
  readonly tokens: TokenDirectory | null;
  /** The shared stores' state for `/readyz`; absent in a worker, whose primary owns them. */
  readonly stores?: () => StoresStatus;
}

/** Opens the counters, the usage database and pipeline, the stored responses and the token directory. */
export async function openSharedState(
  config: ResolvedConfig,
  logger: Logger,
  metrics: GatewayMetrics,
  usageWorker?: URL,
  /** What tests shorten: the pipeline's share of the shutdown ({@linkcode USAGE_CLOSE_MS}). */
  limits: { readonly usageCloseMs?: number } = {},
): Promise<SharedState> {
  const { counters, closeCounters, countersStatus } = await createCounters(config, logger, metrics);
  const usage = config.usage;
  let store: UsageDatabase | null = null;
  if (config.postgres !== null) {
    const up = metrics.registry.gauge(
      "gateway_usage_store_up",
      "1 while the shared usage database (PostgreSQL) takes records, 0 while they queue and spill.",
      [],
    );
    up.set([], 1);
    store = observeInserts(
      await openPostgresUsage(config.postgres, logger, () => up.set([], 0)),
      (ok) => up.set([], ok ? 1 : 0),
    );
  } else if (usage.sqlite !== "none") {
    try {
      store = await openSqliteWorkerStore(usage.sqlite, { workerUrl: usageWorker });
    } catch (err) {
      await closeCounters();
      throw new StartError(`cannot open the usage database ${usage.sqlite}: ${reasonOf(err)}`);
    }
  }
  // Bound to the token directory below; the pipeline may replay a spill file before that, and reseeds then.
  let tokens: TokenDirectory | null = null;
  // Budget alerts start their settled spend from what was recorded (the receivers are read at start, too).
  const seeded = alertSeeding(config.alerts ?? [], counters);
  let pipeline: UsagePipeline | null = null;
  const budgets = createBudgetSeeder({
    store,
    counters,
    logger,
    config,
    stored: () => tokens,
    seeded,
    flush: async () => await pipeline?.flush(),
  });
  if (store !== null || usage.jsonl !== undefined) {
    pipeline = createUsagePipeline({
      store,
      jsonlPath: usage.jsonl,
      spillPath: usage.spill,
      queueSize: usage.queue_size,
      batchSize: usage.batch_size,
      flushIntervalMs: usage.flush_interval,
      retentionMs: usage.retention,
      closeTimeoutMs: limits.usageCloseMs ?? USAGE_CLOSE_MS,
      logger,
      onSpillReplayed: () => budgets.reseed(),
    });
  }
  const responses = store?.responses ?? createMemoryResponsesStore();
  const stopResponsesRetention = startResponsesRetention({
    store: responses,
    retentionMs: config.responses.retention,
    now: Date.now,
    logger,
  });
  // Tokens issued through the admin API live in the same database (none without one), loaded before serving
  // (within the start's bound: `seedAtStart`).
  const database = store;
  tokens = database === null ? null : createTokenDirectory({
    store: database.tokens,
    logger,
    metrics,
    seedBudgets: (fresh) => seedTokenBudgets(fresh, database, counters, logger, seeded),
    seedTeamBudgets: (fresh) => seedStoredTeamBudgets(fresh, database, counters, logger, seeded),
  });
  const loading = tokens?.refresh() ?? Promise.resolve();
  return {
    counters,
    store,
    pipeline,
    responses,
    tokens,
    budgets,
    seedAtStart: (config) => awaitStartSeeds(loading.then(() => budgets.seed(config)), config, logger),
    stores: () => {
      const health = pipeline?.health();
      return {
        counters: countersStatus(),
        // The store's kind, never its URL or path (`/readyz` answers anyone who reaches the port).
        usage: store === null || health === undefined ? null : {
          store: config.postgres !== null ? "postgres" : "sqlite",
          ...health,
        },
      };
    },
    async close() {
      stopResponsesRetention();
      // Independent of each other, so none waits out a hung database's call behind another: the seeds and the
      // token directory stop while the pipeline flushes. They only read; the records are what must be safe.
      const seeds = budgets.close();
      const directory = tokens?.close().catch(() => {});
      await pipeline?.close().catch(() => {});
      // Stored or spilled by now: the store ends the calls still waiting on the database (a seed, a token
      // check) after a short grace, which lets the seeds and the directory finish.
      await store?.close().catch(() => {});
      await Promise.all([seeds, directory]);
      await closeCounters();
    },
  };
}

/** The view of the shared state a thread serving in the same process as it uses. */
export function localView(shared: SharedState): SharedView {
  const { pipeline, store } = shared;
  return {
    counters: shared.counters,
    usage: pipeline,
    usageStore: pipeline !== null && store !== null
      ? {
        flush: () => pipeline.flush(),
        query: (q) => store.query(q),
        listRecords: (q) => store.listRecords(q),
      }
      : null,
    responses: shared.responses,
    tokens: shared.tokens,
    stores: () => shared.stores(),
  };
}

/** A serving thread's services, and what must be closed before the shared state. */
export interface ThreadServices {
  readonly services: GatewayServices;
  /** Closes the cache, exports what telemetry holds (within `graceMs`) and sends the alerts already claimed. */
  close(graceMs: number): Promise<void>;
}

/**
 * Policy, alerts, the response cache and telemetry of one serving thread, around `view`. Alerts are claimed
 * in the counters (once per fleet, once per set of workers); the cache and telemetry are the thread's own.
 */
export async function threadServices(
  config: ResolvedConfig,
  logger: Logger,
  outside: { env: Readonly<Record<string, string | undefined>> },
  view: SharedView,
  metrics: GatewayMetrics,
): Promise<ThreadServices> {
  const counters = view.counters;
  const policyError = (err: unknown) =>
    logger.error("policy_store_error", { error: err instanceof Error ? err.message : String(err) });
  // Read at start, like telemetry: a reload keeps the receivers this process started with.
  const alertsConfig = config.alerts ?? [];
  const alerts = alertsConfig.length === 0 ? null : createAlerts(alertsConfig, counters, {
    onError: (err) => logger.warn("alert_error", { error: err.message }),
  });
  const services = gatewayServices({
    policy: createPolicyEngine(counters, {
      onError: policyError,
      ...(alerts ? alertHooks(alerts, alertsConfig, counters, policyError) : {}),
    }),
    alerts,
    usage: view.usage,
    usageStore: view.usageStore,
    responses: view.responses,
    metrics,
    tokens: view.tokens,
    ...(view.stores === undefined ? {} : { stores: view.stores }),
    // Built at start whatever the aliases say, so a reload that caches an alias finds the store ready.
    cache: await createConfiguredCache(config, logger, metrics.cache),
    telemetry: await configuredTelemetry(config, outside, metrics, logger),
  });
  return {
    services,
    async close(graceMs) {
      await services.cache?.close().catch(() => {});
      // What the last requests traced goes out within the grace; the rest is dropped (counted), not waited for.
      await services.telemetry?.shutdown(graceMs);
      // Alerts already claimed go out within their own bounded wait, before the counters they claim in close.
      await services.alerts?.close();
    },
  };
}

/**
 * The usage store of a fleet, in PostgreSQL (`postgres:` configured; SQLite is then not used). A database
 * that is down at start does not keep the gateway from serving: records queue and spill meanwhile, and the
 * schema is migrated on the first call that reaches it. A schema newer than this code's stops the start, and
 * so does a migration the database refuses (a privilege the gateway's role lacks): no retry would help.
 */
async function openPostgresUsage(
  pg: PostgresConfig,
  logger: Logger,
  onUnreachable: () => void,
): Promise<UsageDatabase> {
  try {
    return await openPostgresStore({
      url: pg.url,
      schema: pg.schema,
      poolSize: pg.pool_size,
      timeoutMs: pg.timeout,
      onUnreachable: (err) => {
        onUnreachable();
        logger.warn("usage_database_unreachable_at_start", {
          schema: pg.schema,
          error: err instanceof Error ? err.message : String(err),
        });
      },
    });
  } catch (err) {
    throw new Error(`usage database (postgres): ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** How long start-up waits for Redis before serving anyway (and deciding by `on_failure` until it answers). */
const REDIS_CONNECT_WAIT_MS = 2_000;

/**
 * The counters of limits and budgets: in Redis when `redis` is configured (shared by every replica, with
 * `on_failure` deciding what a Redis failure means), otherwise in this process's memory.
 */
async function createCounters(config: ResolvedConfig, logger: Logger, metrics: GatewayMetrics) {
  const redis = config.redis;
  if (redis === null) {
    const memory: CountersStatus = { store: "memory", ok: true };
    return {
      counters: createMemoryCounterStore() as CounterStore,
      closeCounters: async () => {},
      countersStatus: () => memory,
    };
  }
  // Loaded only here: ioredis costs the Bun binary 6–10 ms of start-up, and a gateway without Redis none.
  const { createRedisCounterStore } = await import("./policy/redis_counter_store.ts");
  const shared = createRedisCounterStore({
    url: redis.url,
    keyPrefix: redis.key_prefix,
    timeoutMs: redis.timeout,
  });
  const ready = await shared.whenReady(REDIS_CONNECT_WAIT_MS);
  const counters = createResilientCounterStore(shared, {
    onFailure: redis.on_failure,
    expectedReplicas: redis.expected_replicas,
    logger,
    metrics: {
      up: metrics.registry.gauge(
        "gateway_rate_limit_store_up",
        "1 while the shared counter store (Redis) answers, 0 while limits are decided by redis.on_failure.",
        [],
      ),
      fallbacks: metrics.registry.counter(
        "gateway_rate_limit_store_fallbacks_total",
        "Requests decided without the shared counter store (503 in fail_closed, local limiter in fail_open).",
        ["mode"],
      ),
    },
  });
  if (!ready) {
    logger.warn("rate_limit_store_unreachable_at_start", {
      on_failure: redis.on_failure,
      waited_ms: REDIS_CONNECT_WAIT_MS,
    });
  }
  return {
    counters: counters as CounterStore,
    closeCounters: () => shared.close(),
    // Whether the last call reached Redis, as the resilient store already tracks it (no probe of its own).
    countersStatus: (): CountersStatus => ({
      store: "redis",
      ok: counters.isUp(),
      on_failure: redis.on_failure,
    }),
  };
}

/**
 * The composition root of a running gateway: config state, reloader and file watching, routing health,
 * policy engine, usage pipeline and metrics, wired to the fetch handler and served by the runtime edge.
 *
 * @module
 */
import { createAlerts } from "./alerts/alerts.ts";
import { alertHooks } from "./alerts/policy_hooks.ts";
import { createConfiguredCache } from "./cache/create.ts";
import { configuredTelemetry } from "./telemetry/configured.ts";
import type { PostgresConfig } from "./config/schema.ts";
import type { ResolvedConfig } from "./config/types.ts";
import type { GatewayState } from "./http/context.ts";
import { InFlightRequests, serverShuttingDown } from "./http/in_flight.ts";
import { createJsonLogger, type Logger } from "./log.ts";
import { createMemoryCounterStore } from "./policy/counter_store.ts";
import { createRedisCounterStore } from "./policy/redis_counter_store.ts";
import { createResilientCounterStore } from "./policy/resilient_counter_store.ts";
import { GatewayMetrics } from "./metrics/gateway_metrics.ts";
import { type CounterStore, createPolicyEngine } from "./policy/engine.ts";
import { seedBudgets, seedStoredTeamBudgets, seedTokenBudgets } from "./policy/seed_budgets.ts";
import { validateConfigFileInWorker } from "./config/config_worker_client.ts";
import { createReloader, type Reloader } from "./reload.ts";
import { HealthRegistry } from "./routing/health.ts";
import type { RunningServer, Runtime } from "./runtime/types.ts";
import { createGateway, gatewayServices } from "./server.ts";
import { createUsagePipeline, type UsagePipeline } from "./usage/pipeline.ts";
import { openSqliteWorkerStore } from "./usage/sqlite_worker_store.ts";
import { openPostgresStore } from "./usage/postgres_store.ts";
import { observeInserts } from "./usage/observed_store.ts";
import { createMemoryResponsesStore } from "./usage/responses_store_memory.ts";
import { startResponsesRetention } from "./usage/retention.ts";
import type { UsageDatabase } from "./usage/store.ts";
import { createTokenDirectory } from "./tokens/directory.ts";

/** The gateway's version, printed by `version` and logged at start. */
export const VERSION = "0.1.0";

/**
 * How long requests ended at the close of the shutdown grace period get to finish their way out (send the error
 * event, count their tokens, write their records) before the runtime closes their connections.
 */
const SHUTDOWN_CUT_MS = 2_000;

/** Everything a running `serve` exposes to its caller (tests drive and stop it through this). */
export interface ServeHandle {
  server: RunningServer;
  reloader: Reloader;
  /** Stops watching the config file and shuts the server down gracefully. */
  stop(graceMs: number): Promise<void>;
}

/** Options for {@linkcode startServer}. */
export interface StartOptions {
  port?: number;
  host?: string;
  /** The config file to reload on SIGHUP and when it changes; without it, reloads re-read nothing. */
  configPath?: string;
  /** Write each log line at once instead of in 10 ms bursts (tests that read the log right after a request). */
  unbufferedLogs?: boolean;
  /** The usage store's worker module (`usage/sqlite_worker.ts`), when it must be found from the entry point. */
  usageWorker?: URL;
  /** The reload validation worker (`config/config_worker.ts`), when it must be found from the entry point. */
  configWorker?: URL;
}

/** Starts serving `state`; resolves once listening. */
export async function startServer(
  runtime: Runtime,
  state: GatewayState,
  options: StartOptions = {},
): Promise<ServeHandle> {
  const config = state.config;
  const logger = createJsonLogger((text) => runtime.writeStdout(text), {
    buffered: !options.unbufferedLogs,
    scrubber: () => state.config.scrubber,
  });
  const health = new HealthRegistry();
  // The live config's scrubber: a reload may bring new secrets, and spans must mask those too.
  const scrub = (text: string) => state.config.scrubber.scrub(text);
  const created = await createServices(config, logger, { env: runtime.env(), scrub }, options.usageWorker);
  const alerts = created.services.alerts;
  if (alerts) health.onEjected = (event) => alerts.ejected(event);
  try {
    return await listen(runtime, state, options, logger, health, created);
  } catch (err) {
    // Not serving after all (the port is taken, say): stop the usage worker, so nothing keeps running.
    created.stopResponsesRetention();
    await created.services.tokens?.close().catch(() => {});
    await created.services.cache?.close().catch(() => {});
    await created.services.telemetry?.shutdown(0);
    await created.services.alerts?.close();
    await created.pipeline?.close().catch(() => {});
    await created.store?.close().catch(() => {});
    await created.closeCounters();
    throw err;
  }
}

/** The rest of {@linkcode startServer}, once the services exist. */
async function listen(
  runtime: Runtime,
  state: GatewayState,
  options: StartOptions,
  logger: Logger,
  health: HealthRegistry,
  { services, pipeline, counters, store, stopResponsesRetention, closeCounters }: Awaited<
    ReturnType<typeof createServices>
  >,
): Promise<ServeHandle> {
  const config = state.config;
  await seedBudgets(config, store, counters, logger, services.tokens?.tokens() ?? []);
  const reloader = createReloader({
    path: options.configPath ?? config.source,
    env: () => runtime.env(),
    logger,
    initial: state,
    health,
    onReload: (next) => seedBudgets(next.config, store, counters, logger, services.tokens?.tokens() ?? []),
    // Validation runs in a worker, so a large or hostile file never stalls serving.
    validate: (path, env) =>
      validateConfigFileInWorker(path, env, {
        workerUrl: options.configWorker,
        onFallback: (reason) => logger.warn("config_worker_unavailable", { reason, validating: "in-thread" }),
      }),
  });
  logger.scrubWith?.(() => reloader.current().config.scrubber);
  let unwatch = () => {};
  if (options.configPath !== undefined) {
    const path = options.configPath;
    // A reload that throws (a bug, not an invalid file: that is reported) must not become an unhandled rejection.
    const reload = (trigger: string) =>
      reloader.reload(trigger).catch((err) =>
        logger.error("config_reload_crashed", {
          trigger,
          error: err instanceof Error ? err.message : String(err),
        })
      );
    runtime.onReloadSignal(() => void reload("signal"));
    unwatch = runtime.watchFile(path, () => void reload("file"));
  }
  const inFlight = new InFlightRequests();
  const handler = createGateway({
    state: reloader.current,
    logger,
    reloader,
    routing: { health },
    services,
    inFlight,
  });
  let server: RunningServer;
  try {
    server = await runtime.serve({
      hostname: options.host ?? config.server.host,
      port: options.port ?? config.server.port,
      handler,
      limits: {
        headerTimeoutMs: config.server.connections.header_timeout,
        bodyTimeoutMs: config.server.connections.body_timeout,
        keepAliveTimeoutMs: config.server.connections.keep_alive_timeout,
        maxConnections: config.server.connections.max_connections,
      },
    });
  } catch (err) {
    unwatch();
    throw err;
  }
  logger.info("listening", {
    url: `http://${server.hostname}:${server.port}`,
    config: config.source,
    version: VERSION,
    runtime: `${runtime.name} ${runtime.version}`,
  });
  return {
    server,
    reloader,
    async stop(graceMs) {
      unwatch();
      // The runtime stops accepting and waits for open requests; the gateway ends those still open when the
      // grace period is over, itself, so each is reported, and the runtime gets a moment more to send their
      // endings before it closes whatever is left.
      const closed = server.shutdown(graceMs + SHUTDOWN_CUT_MS);
      if (!await inFlight.whenIdle(graceMs)) {
        const count = inFlight.abortAll(serverShuttingDown());
        logger.warn("shutdown_cut_requests", { count, grace_ms: graceMs });
        if (!await inFlight.whenIdle(SHUTDOWN_CUT_MS)) {
          logger.error("shutdown_unreported_requests", { count: inFlight.size });
        }
      }
      await closed;
      // Every request is over: flush their usage records before the process goes.
      stopResponsesRetention();
      await services.tokens?.close();
      await services.cache?.close().catch(() => {});
      // What the last requests traced goes out within the grace; the rest is dropped (counted), not waited for.
      await services.telemetry?.shutdown(graceMs);
      // Alerts already claimed go out within their own bounded wait; then the counters they claim in close.
      await services.alerts?.close();
      await pipeline?.close();
      await store?.close();
      await closeCounters();
      logger.flush?.();
    },
  };
}

/** Policy, usage and metrics for a config: what `createGateway` needs, and what shutdown must close. */
async function createServices(
  config: ResolvedConfig,
  logger: Logger,
  outside: { env: Readonly<Record<string, string | undefined>>; scrub: (text: string) => string },
  usageWorker?: URL,
) {
  const metrics = new GatewayMetrics();
  const { counters, closeCounters } = await createCounters(config, logger, metrics);
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
      throw new Error(`usage database ${usage.sqlite}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  let pipeline: UsagePipeline | null = null;
  if (store !== null || usage.jsonl !== undefined) {
    pipeline = createUsagePipeline({
      store,
      jsonlPath: usage.jsonl,
      spillPath: usage.spill,
      queueSize: usage.queue_size,
      batchSize: usage.batch_size,
      flushIntervalMs: usage.flush_interval,
      retentionMs: usage.retention,
      logger,
    });
  }
  // Stored responses live in the usage database; without one, in memory (lost at restart).
  const responses = store?.responses ?? createMemoryResponsesStore();
  const stopResponsesRetention = startResponsesRetention({
    store: responses,
    retentionMs: config.responses.retention,
    now: Date.now,
    logger,
  });
  // Tokens issued through the admin API live in the same database (none without one), loaded before serving.
  const database = store;
  const tokens = database === null ? null : createTokenDirectory({
    store: database.tokens,
    logger,
    metrics,
    seedBudgets: (fresh) => seedTokenBudgets(fresh, database, counters, logger),
    seedTeamBudgets: (fresh, stored) => seedStoredTeamBudgets(fresh, stored, database, counters, logger),
  });
  await tokens?.refresh();
  const policyError = (err: unknown) =>
    logger.error("policy_store_error", { error: err instanceof Error ? err.message : String(err) });
  // Read at start, like telemetry: a reload keeps the receivers this process started with.
  const alertsConfig = config.alerts ?? [];
  const alerts = alertsConfig.length === 0 ? null : createAlerts(alertsConfig, counters, {
    onError: (err) => logger.warn("alert_error", { error: err.message }),
  });
  // The production parts; `gatewayServices` builds the rest, as it does for tests.
  const services = gatewayServices({
    policy: createPolicyEngine(counters, {
      onError: policyError,
      ...(alerts ? alertHooks(alerts, alertsConfig, counters, policyError) : {}),
    }),
    alerts,
    usage: pipeline,
    usageStore: pipeline !== null && store !== null
      ? {
        flush: () => pipeline!.flush(),
        query: (q) => store.query(q),
        listRecords: (q) => store.listRecords(q),
      }
      : null,
    responses,
    metrics,
    tokens,
    // Built at start whatever the aliases say, so a reload that caches an alias finds the store ready.
    cache: await createConfiguredCache(config, logger, metrics.cache),
    telemetry: configuredTelemetry(config, outside, metrics, logger),
  });
  return { services, pipeline, counters, store, stopResponsesRetention, closeCounters };
}

/**
 * The usage store of a fleet, in PostgreSQL (`postgres:` configured; SQLite is then not used). A database
 * that is down at start does not keep the gateway from serving: records queue and spill meanwhile, and the
 * schema is migrated on the first call that reaches it. A schema newer than this code's stops the start.
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
    return { counters: createMemoryCounterStore() as CounterStore, closeCounters: async () => {} };
  }
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
  return { counters: counters as CounterStore, closeCounters: () => shared.close() };
}

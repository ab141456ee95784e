/**
 * A serving worker of `serve --workers N`: a thread of its own that listens on the gateway's port beside
 * the other workers (`SO_REUSEPORT`), with its own copy of the config, routing state, policy engine, cache
 * and metrics, around proxies of what the primary owns (counters, usage, stored responses, tokens). Started
 * and answered by `primary.ts`; an entry point of the build beside the SQLite and config workers.
 *
 * @module
 */
import { alertSeeding } from "../alerts/policy_hooks.ts";
import { resolveValidated, type ValidatedConfig, type ValidationResult } from "../config/load.ts";
import type { GatewayState } from "../http/context.ts";
import { GatewayMetrics } from "../metrics/gateway_metrics.ts";
import { seedStoredTeamBudgets, seedTokenBudgets } from "../policy/seed_budgets.ts";
import { createProviders } from "../providers/registry.ts";
import { createReloader, type ReloadStatus, type StagedReloader } from "../reload.ts";
import { type CooldownChange, HealthRegistry } from "../routing/health.ts";
import { currentRuntime } from "../runtime/mod.ts";
import type { ServingThread } from "../serve.ts";
import { gatewayLogger, serveThread } from "../serve.ts";
import { type SharedView, type ThreadServices, threadServices } from "../serve_state.ts";
import { createTokenDirectory } from "../tokens/directory.ts";
import { Channel, type MessagePortLike } from "./channel.ts";
import { remoteCounterStore, remoteResponses, remoteUsageDatabase } from "./remote_stores.ts";
import { ReportingInFlight, ReportOutbox } from "./report.ts";
import { ReportRing } from "./report_ring.ts";
import { SharedInFlight } from "./shared_in_flight.ts";
import type { WorkerInit } from "./protocol.ts";
import { lineWriter } from "./protocol.ts";

const channel = new Channel(globalThis as unknown as MessagePortLike);

let serving: ServingThread | undefined;
let thread: ThreadServices | undefined;
let reloader: StagedReloader | undefined;
let closeTokens = () => Promise.resolve();
let outbox: ReportOutbox | undefined;
let metrics: GatewayMetrics | undefined;
let health: HealthRegistry | undefined;
/** Cooldowns the primary passed on before this worker's registry existed (it was starting). */
const early: CooldownChange[] = [];
/**
 * The latest reload's outcome as the primary decided it, which `/readyz` shows: not this worker's reloader's, which
 * knows neither a reload the primary refused before asking any worker nor the gateway's start (a replacement).
 */
let reloadStatus: ReloadStatus | null = null;
let refreshTokens = (): Promise<void> => Promise.resolve();
/** Writes the log lines still buffered (the logger's short batching), before the primary ends this thread. */
let flushLogs = () => {};

async function init(params: WorkerInit): Promise<{ hostname: string; port: number }> {
  reloadStatus = params.reloadStatus;
  const runtime = await currentRuntime();
  const env = runtime.env();
  const resolved = resolveValidated(params.validated, { source: params.source, env });
  if (!resolved.ok) throw new Error(`worker ${params.index}: the config did not resolve`);
  const initial: GatewayState = {
    config: resolved.config,
    providers: createProviders(resolved.config.providers, env),
  };
  let live = () => initial;
  const logger = gatewayLogger(
    lineWriter((text) => runtime.writeStdout(text)),
    () => live(),
    params.unbufferedLogs,
  );
  flushLogs = () => logger.flush?.();
  health = new HealthRegistry();
  // What the other workers ejected before this one started, then what they told it while it was starting.
  for (const change of [...params.cooldowns, ...early.splice(0)]) health.applyCooldown(change);
  health.onCooldown = (change) => channel.note("health.cooldown", change);
  health.sharedInFlight = new SharedInFlight(params.inFlight, params.workers, params.index);
  outbox = new ReportOutbox(channel, new ReportRing(params.reports));
  const counters = remoteCounterStore(channel);
  const sent = outbox;
  const database = params.tokens === null
    ? null
    : remoteUsageDatabase(channel, params.tokens, () => channel.call("tokens.changed"));
  // Budget alerts start their settled spend from what was recorded, as the primary's seeds do.
  const seeded = alertSeeding(initial.config.alerts ?? [], counters);
  const tokens = database === null ? null : createTokenDirectory({
    store: database.tokens,
    logger,
    seedBudgets: (fresh) => seedTokenBudgets(fresh, database, counters, logger, seeded),
    seedTeamBudgets: (fresh) => seedStoredTeamBudgets(fresh, database, counters, logger, seeded),
  });
  await tokens?.refresh();
  if (tokens !== null) {
    refreshTokens = () => tokens.refresh();
    closeTokens = () => tokens.close();
  }
  const view: SharedView = {
    counters,
    usage: params.usage ? sent : null,
    usageStore: params.usageStore && database !== null
      ? {
        flush: async () => {
          sent.send();
          await channel.call("usage.flush");
        },
        query: (q) => database.query(q),
        listRecords: (q) => database.listRecords(q),
      }
      : null,
    responses: remoteResponses(channel),
    tokens,
  };
  metrics = new GatewayMetrics();
  thread = await threadServices(initial.config, logger, { env }, view, metrics);
  const alerts = thread.services.alerts;
  if (alerts) health.onEjected = (event) => alerts.ejected(event);
  const local = createReloader({
    path: params.source,
    env: () => runtime.env(),
    logger,
    initial,
    health,
    // The primary logs the outcome once for every worker, and ran the start-only checks before asking any.
    logOutcome: false,
    startChecks: false,
    // Never asked: the primary validates the file once and hands every worker the result, in two phases
    // (`reload.prepare`, then `reload.commit` or `reload.discard`: pool_reload.ts).
    validate: () => Promise.resolve({ ok: false, issues: [{ path: "", message: "no config sent" }] }),
  });
  reloader = local;
  live = local.current;
  // A replacement, after a reload: built as its siblings were (above, from the gateway's start), it takes the latest
  // reload as they did, through its reloader, before it serves a request.
  if (params.reloaded !== null) await catchUp(params.index, params.reloaded);
  const services = { ...thread.services, workerMetrics: () => channel.call<string>("metrics") };
  serving = await serveThread(runtime, {
    // `/admin/reload` on any worker reloads every worker, through the primary.
    reloader: {
      current: local.current,
      status: () => reloadStatus,
      reload: (trigger) => channel.call("reload", trigger),
    },
    logger,
    health,
    services,
    options: {
      host: params.host,
      port: params.port,
      tokenWorker: params.tokenWorker === undefined ? undefined : new URL(params.tokenWorker),
    },
    inFlight: new ReportingInFlight(sent),
    reusePort: true,
    maxConnections: params.maxConnections,
    started: initial.config,
    listening: { msg: "worker_listening", fields: { worker: params.index } },
  });
  return { hostname: serving.server.hostname, port: serving.server.port };
}

/** Applies `reloaded` as a reload; a worker that cannot does not start (it would serve a config no sibling does). */
async function catchUp(index: number, reloaded: ValidatedConfig): Promise<void> {
  const status = await reloader!.prepare("replacement", { ok: true, validated: reloaded });
  if (!status.ok || !reloader!.commit()) {
    const issues = status.issues.map((i) => `${i.path}: ${i.message}`).join("; ");
    throw new Error(`worker ${index}: the latest reloaded config did not apply (${issues})`);
  }
}

async function stop(graceMs: number): Promise<void> {
  await serving?.drain(graceMs);
  await closeTokens();
  await thread?.close(graceMs);
  outbox?.send();
  // As a single process does at its end: the last requests' access-log lines are still in the buffer.
  flushLogs();
}

channel.serve({
  init,
  stop,
  // A reload in two phases: every worker sets the config up, then all swap it in, or none does.
  "reload.prepare": (trigger: string, validation: ValidationResult) => reloader!.prepare(trigger, validation),
  "reload.commit": () => reloader!.commit(),
  "reload.discard": () => reloader!.discard(),
  "reload.status": (status: ReloadStatus) => {
    reloadStatus = status;
  },
  "metrics.render": () => metrics?.render() ?? "",
  "health.cooldown": (change: CooldownChange) => {
    if (health) health.applyCooldown(change);
    else early.push(change);
  },
  "tokens.changed": () => refreshTokens(),
  // Answered by this thread's event loop at once: the primary asks it of a worker slow to answer a call that waits
  // on the primary's stores, to tell a stuck thread from a slow store (`pool_timing.ts`).
  ping: () => true,
});

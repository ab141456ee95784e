/**
 * `serve --workers N`: the primary thread owns what must be one per gateway (the counters of limits and
 * budgets, the usage pipeline and database, stored responses, the token store, the config file and its
 * reloads) and starts N serving workers (`worker_main.ts`) that share the port. It answers their calls
 * (`primary_methods.ts`), passes a target's ejection from one to all, sums their metrics, reloads them with
 * one validated config, drains them all at shutdown, and replaces one that dies (`restarts.ts`), recording the
 * requests that were open in it as failed. Its calls to a worker are bounded (`pool_timing.ts`): one that does not
 * answer is stuck, and is ended and replaced as one that died.
 *
 * Threads, not processes: both runtimes run a worker with the parent's permissions and from the same single
 * binary, and a call to the counters is a message between threads, not a syscall round trip.
 *
 * @module
 */
import { EMBEDDED_CONFIG_SOURCE } from "../config/default_config.ts";
import { resolveValidated, type ValidatedConfig, type ValidationResult } from "../config/load.ts";
import { validateConfigFileInWorker } from "../config/config_worker_client.ts";
import type { GatewayState } from "../http/context.ts";
import { GatewayMetrics } from "../metrics/gateway_metrics.ts";
import { EndUserTracker } from "../policy/end_users.ts";
import {
  embeddedReloadSkipped,
  logReloadOutcome,
  type Reloader,
  type ReloadStatus,
  targetKeys,
} from "../reload.ts";
import { startOnlyIssues } from "../start_checks.ts";
import { restartRequired } from "../config/start_only.ts";
import type { CooldownChange } from "../routing/health.ts";
import type { Runtime } from "../runtime/types.ts";
import { gatewayLogger, type ServeHandle, type StartOptions, VERSION, watchConfig } from "../serve.ts";
import { openSharedState } from "../serve_state.ts";
import { storedBudgetCheck } from "../tokens/stored_budget_prices.ts";
import { Channel, type MessagePortLike, type Methods } from "./channel.ts";
import { onUnanswered, POOL_TIMING, type PoolTiming } from "./pool_timing.ts";
import { Restarts } from "./restarts.ts";
import { PoolMetrics } from "./pool_metrics.ts";
import { primaryMethods, settleDeadLedger, WorkerLedger } from "./primary_methods.ts";
import { finishInWorkers, prepareInWorkers, reloadOutcome, tellWorkers } from "./pool_reload.ts";
import { lineWriter, type WorkerInit } from "./protocol.ts";
import type { ReportBatch } from "./report.ts";
import { OpenRequestsWatch } from "./open_watch.ts";
import { createRingBuffer, ReportRing } from "./report_ring.ts";
import { createInFlightBuffer, SharedInFlight } from "./shared_in_flight.ts";
import { reasonOf, StartError } from "../start_error.ts";
import { warnFixedHeadDeadline } from "../head_deadline_warning.ts";

/** Options of {@linkcode startWorkers}. */
export interface WorkersOptions extends StartOptions {
  /** How many workers serve (2 or more). */
  readonly workers: number;
  /** The worker module (`worker_main.ts`), when it must be found from the entry point (a single binary). */
  readonly workerUrl?: URL;
  /** Bounds in place of {@linkcode POOL_TIMING}'s, for tests. */
  readonly timing?: Partial<PoolTiming>;
}

/** A running pool, for tests: the workers' count and a way to kill one as a crash would. */
export interface WorkersHandle extends ServeHandle {
  /** Workers started so far, replacements included. */
  started(): number;
  /** Ends worker `index` at once, as a crash does (no drain); it is replaced like a worker that died. */
  kill(index: number): void;
  /** The requests open on worker `index` as the primary knows them (their start notices read, not yet ended). */
  open(index: number): number;
}

interface Slot {
  worker: Worker;
  channel: Channel;
  ledger: WorkerLedger;
  /** The reports the worker writes into shared memory, read here. */
  ring: ReportRing;
  startedAt: number;
  /** It answered its start: it serves, and is replaced when it dies (one that fails to start is tried again). */
  ready: boolean;
}

/** Bytes of each worker's report ring: ample for what arrives between two reads. */
const REPORT_RING_BYTES = 1 << 21;
/** How often the report rings are read (records reach the pipeline within this, plus its own flush). */
const REPORT_READ_MS = 10;

/** Starts the primary and its workers; resolves once every worker listens. */
export async function startWorkers(
  runtime: Runtime,
  state: GatewayState,
  validated: ValidatedConfig,
  options: WorkersOptions,
): Promise<WorkersHandle> {
  let config = state.config;
  let current = validated;
  let primaryState = state;
  const logger = gatewayLogger(
    lineWriter((t) => runtime.writeStdout(t)),
    () => primaryState,
    options.unbufferedLogs,
  );
  const metrics = new GatewayMetrics();
  const shared = await openSharedState(config, logger, metrics, options.usageWorker);
  // Bounded: a database that hangs must not keep the workers from listening (the seed goes on meanwhile).
  await shared.seedAtStart(config);
  const workerUrl = options.workerUrl ?? new URL("./worker_main.ts", import.meta.url);
  const slots: (Slot | undefined)[] = [];
  let stopping = false;
  let started = 0;
  const timing: PoolTiming = { ...POOL_TIMING, ...options.timing };
  let port = options.port ?? config.server.port;

  const others = (index: number) => slots.filter((s, i): s is Slot => s !== undefined && i !== index);
  const live = () => slots.filter((s): s is Slot => s !== undefined);

  // The one list of recent end users, for the counters the primary holds (docs/spend_control.md#end-users).
  const endUsers = new EndUserTracker();
  /**
   * The cooldowns workers set and have not ended, by target (past ones too: the target is half-open, probed
   * once, on every worker): a replacement starts knowing them rather than sending traffic to an ejected target.
   */
  const cooldowns = new Map<string, CooldownChange>();
  /** The latest reload's outcome: a replacement worker's `/readyz` starts with it, as the others show it. */
  let lastStatus: ReloadStatus | null = null;
  const inFlight = createInFlightBuffer(options.workers);
  const places = new SharedInFlight(inFlight, options.workers, options.workers);
  // A worker is built from the config the gateway started with, then given the latest reload's as a reload: a
  // replacement ends in the state of its siblings, the keys read only at start (`config/start_only.ts`) as at the
  // start, the others as the reload left them.
  const initOf = (index: number, reports: SharedArrayBuffer): WorkerInit => ({
    index,
    validated,
    reloaded: current === validated ? null : current,
    source: state.config.source,
    host: options.host,
    port,
    maxConnections: Math.max(1, Math.ceil(state.config.server.connections.max_connections / options.workers)),
    unbufferedLogs: options.unbufferedLogs,
    usage: shared.pipeline !== null,
    usageStore: shared.pipeline !== null && shared.store !== null,
    tokens: shared.store?.tokens.kind ?? null,
    reports,
    inFlight,
    workers: options.workers,
    cooldowns: [...cooldowns.values()],
    reloadStatus: lastStatus,
    tokenWorker: options.tokenWorker?.href,
  });

  /** Reads what worker `slot` has reported, into the ledger and the pipeline. */
  const readReports = (slot: Slot) => {
    for (const frame of slot.ring.read()) {
      slot.ledger.apply(JSON.parse(frame) as ReportBatch, (r) => shared.pipeline?.write(r));
    }
  };
  const reloadWaits = new OpenRequestsWatch<Slot>();
  const reading = setInterval(() => {
    const slots = live();
    for (const slot of slots) readReports(slot);
    reloadWaits.check(slots);
  }, REPORT_READ_MS);

  async function spawn(index: number): Promise<void> {
    const worker = new Worker(workerUrl.href, { type: "module" });
    const channel: Channel = new Channel(worker as unknown as MessagePortLike, {
      answerMs: timing.answerMs,
      unanswered: (method) => onUnanswered(method, () => channel, () => died(index, slot, "unresponsive")),
    });
    const ledger = new WorkerLedger();
    const reports = createRingBuffer(REPORT_RING_BYTES);
    const slot: Slot = {
      worker,
      channel,
      ledger,
      ring: new ReportRing(reports),
      startedAt: Date.now(),
      ready: false,
    };
    started++;
    const methods: Methods = {
      ...primaryMethods(shared, ledger, endUsers, () => tokensChanged(index)),
      reload: (trigger: string) => reload(trigger),
      metrics: () => summedMetrics(),
      // Before `/admin/requests` or `/admin/usage` reads: what every worker has reported, not only the asking
      // one (whose reports are read first anyway), so a request another worker just answered is there.
      "usage.flush": () => {
        for (const other of others(index)) readReports(other);
        return shared.pipeline?.flush();
      },
      "health.cooldown": (change: CooldownChange) => {
        if (change.until === 0) cooldowns.delete(change.key);
        else cooldowns.set(change.key, change);
        for (const other of others(index)) other.channel.note("health.cooldown", change);
      },
    };
    // Whatever the worker asks, what it reported before asking is read first (a report sent as a message
    // when the ring was full comes after the frames written before it, a flush after the records it flushes).
    const served: Methods = {};
    for (const [name, method] of Object.entries(methods)) {
      const call = method as (...args: unknown[]) => unknown;
      served[name] = (...args: unknown[]) => {
        readReports(slot);
        return call(...args);
      };
    }
    channel.serve(served);
    worker.onerror = (event: ErrorEvent) => {
      // Handled here: a worker's uncaught error must not take the primary down with it.
      event.preventDefault();
      died(index, slot, event.message ?? "uncaught error");
    };
    slots[index] = slot;
    try {
      const init = initOf(index, reports);
      const listening = await channel.callWithin<{ port: number }>(timing.startMs, "init", init);
      port = listening.port;
      slot.ready = true;
      restarts.serving(live().length);
    } catch (err) {
      if (slots[index] === slot) slots[index] = undefined;
      worker.terminate();
      // The worker's own words name the stage (`cannot listen on …`).
      throw new StartError(`worker ${index} did not start: ${reasonOf(err)}`);
    }
  }

  /**
   * A worker changed a token or a team: every other worker (and the primary's own directory) loads the change
   * before the worker that made it answers its admin request, so a revoked token is refused on every worker from
   * the moment the revocation is answered. A worker that cannot answer (dying) is not waited for, nor one that has
   * not answered in time (`pool_timing.ts`: ended if its thread is stuck, and its replacement loads every token).
   */
  async function tokensChanged(from: number): Promise<void> {
    await Promise.all([
      ...others(from).map((other) => other.channel.call("tokens.changed").catch(() => {})),
      shared.tokens?.refresh(),
    ]);
  }

  function died(index: number, slot: Slot, reason: string): void {
    if (slots[index] !== slot) return;
    slots[index] = undefined;
    slot.worker.terminate();
    slot.channel.close(new Error(`worker ${index} died`));
    // What it counted stays in /metrics (as of the last scrape it answered), so no counter goes down.
    poolMetrics.retire(slot);
    // What it reported before it died is in the ring still: its records are written, its ends known.
    readReports(slot);
    // Its open requests are recorded as failed, its concurrency slots given back.
    const recorded = settleDeadLedger(slot.ledger, shared, metrics);
    places.release(index);
    logger.error("worker_died", { worker: index, reason, open_requests: slot.ledger.open.size, recorded });
    restarts.serving(live().length);
    // One still starting is tried again by whoever started it (a replacement's retries, or the gateway's start).
    if (!stopping && slot.ready) restarts.died(index, slot.startedAt);
  }

  const restarts = new Restarts({
    timing,
    logger,
    registry: metrics.registry,
    // In turn with reloads: a reload under way finishes first and the replacement starts on its result, and
    // a reload asked meanwhile waits for the replacement to serve, then reaches it too.
    start: (index) => inTurn(() => stopping ? Promise.resolve() : spawn(index)),
  });

  const poolMetrics = new PoolMetrics<Slot>();
  const summedMetrics = () =>
    poolMetrics.sum(live, (s) => s.channel.call<string>("metrics.render").catch(() => ""), metrics.render());

  /** Reloads and replacements, one at a time. */
  let queue: Promise<unknown> = Promise.resolve();
  function inTurn<T>(fn: () => Promise<T>): Promise<T> {
    const next = queue.then(fn);
    queue = next.catch(() => {});
    return next;
  }
  const path = options.configPath ?? config.source;

  const checkStored = storedBudgetCheck(shared.tokens);

  /**
   * Validates the file once, has every worker set the same result up and, once all did, swap it in (all or none:
   * pool_reload.ts), then tells each the outcome.
   */
  async function attempt(trigger: string): Promise<ReloadStatus> {
    // Asked of no worker, and not their latest reload: the config they serve is the one there is.
    if (path === EMBEDDED_CONFIG_SOURCE) return embeddedReloadSkipped(logger, trigger);
    const env = runtime.env();
    const validation: ValidationResult = await validateConfigFileInWorker(path, env, {
      workerUrl: options.configWorker,
    });
    // The stored tokens' and teams' money budgets (the primary holds the token directory) are checked before
    // any worker swaps the config in, as a single process does: one left without a price refuses the reload.
    // Resolved once here, for the stored budgets' check and, once every worker took it, the primary's own state.
    const resolved = validation.ok
      ? resolveValidated(validation.validated, { source: path, env })
      : undefined;
    const stored = resolved?.ok && checkStored ? await checkStored(resolved.config) : [];
    // What the next start would refuse of a start-only key it changes (a usage file's place), as a single process.
    const refused = stored.length > 0 || !resolved?.ok
      ? stored
      : await startOnlyIssues(state.config, resolved.config, env);
    // A reload that did not validate, or these refuse, is asked of no worker (none sets it up); each is told so below.
    const asked = validation.ok && refused.length === 0;
    const serving = (slot: Slot) => slots.includes(slot);
    const prepared = asked ? await prepareInWorkers(live(), serving, trigger, validation) : null;
    const issues = refused.length > 0 ? refused : validation.ok ? [] : validation.issues;
    let status: ReloadStatus = prepared ?? reloadOutcome(trigger, issues);
    // The workers resolved it; should the primary's own resolution fail, it is not the config either.
    if (status.ok && resolved?.ok === false) status = { ...status, ok: false, issues: resolved.issues };
    // Every worker set it up: all swap it in. Otherwise each forgets it, and every worker keeps the old config. A
    // worker whose swap did not answer while it serves is replaced, in the state decided here.
    const broken = (slot: Slot) => died(slots.indexOf(slot), slot, "reload_swap_failed");
    // A reload no worker swapped in (each died or stopped answering first) failed: replacements start on the old.
    if (asked) status = await finishInWorkers(live(), serving, status, broken);
    if (status.ok && validation.ok && resolved?.ok) {
      current = validation.validated;
      config = resolved.config;
      // Told against the gateway's start, which every worker (a replacement too) took the start-only keys from.
      status = { ...status, restart_required: restartRequired(state.config, config) };
      primaryState = { config, providers: primaryState.providers };
      // Every worker serves the new targets now: the places of those gone (a rotated key is a new target)
      // are freed for the next, once nobody holds them, and their cooldowns forgotten.
      const keys = targetKeys(config);
      places.retain(keys);
      const kept = new Set(keys);
      for (const key of cooldowns.keys()) if (!kept.has(key)) cooldowns.delete(key);
      // What the workers answered before the swap reaches the pipeline, and their open requests are known.
      for (const slot of live()) readReports(slot);
      await shared.budgets.reloaded(config, reloadWaits.whenOver(live()));
    }
    lastStatus = status;
    // Logged once here for every worker (theirs log no outcome), with the primary's view of it.
    logReloadOutcome(logger, path, status, config);
    await tellWorkers(live(), status);
    return status;
  }
  const reload = (trigger: string): Promise<ReloadStatus> => inTurn(() => attempt(trigger));
  const reloader: Reloader = { current: () => primaryState, status: () => lastStatus, reload };

  try {
    // The first worker binds the port (a free one, for port 0); the others join it. In turn, as a replacement
    // is: an `/admin/reload` the first worker is asked before the others serve waits for them.
    await inTurn(async () => {
      await spawn(0);
      await Promise.all(Array.from({ length: options.workers - 1 }, (_, i) => spawn(i + 1)));
    });
  } catch (err) {
    stopping = true;
    restarts.stop();
    clearInterval(reading);
    for (const slot of live()) slot.worker.terminate();
    await shared.close();
    throw err;
  }
  const host = options.host ?? config.server.host;
  logger.info("listening", {
    url: `http://${host}:${port}`,
    config: config.source,
    version: VERSION,
    runtime: `${runtime.name} ${runtime.version}`,
    workers: options.workers,
  });
  warnFixedHeadDeadline(runtime, config.server.connections.header_timeout, logger);
  const unwatch = watchConfig(runtime, options, reload, logger);

  async function stop(graceMs: number): Promise<void> {
    if (stopping) return;
    stopping = true;
    restarts.stop();
    unwatch();
    // Every worker drains at once; what each reports on its way out reaches the pipeline before it closes. One that
    // has not answered a while after its grace is stuck: it is ended as one that died (its open requests recorded).
    const bound = graceMs + timing.answerMs;
    await Promise.all(live().map((s) => s.channel.callWithin(bound, "stop", graceMs).catch(() => {})));
    clearInterval(reading);
    for (const slot of live()) {
      readReports(slot);
      slot.worker.terminate();
    }
    await shared.close();
    logger.flush?.();
  }

  return {
    server: { hostname: host, port, shutdown: stop },
    reloader,
    stop,
    started: () => started,
    kill(index) {
      const slot = slots[index];
      if (slot !== undefined) died(index, slot, "killed");
    },
    open: (index) => slots[index]?.ledger.open.size ?? 0,
  };
}

/**
 * The composition root of a running gateway: config state, reloader and file watching, routing health,
 * policy engine, usage pipeline and metrics, wired to the fetch handler and served by the runtime edge. With
 * `workers` above one, `lib/workers/primary.ts` runs instead and each worker serves through
 * {@linkcode serveThread}.
 *
 * @module
 */
import type { ConfigIssue, ResolvedConfig } from "./config/types.ts";
import type { GatewayServices, GatewayState } from "./http/context.ts";
import { InFlightRequests, serverShuttingDown } from "./http/in_flight.ts";
import { createJsonLogger, type Logger } from "./log.ts";
import { GatewayMetrics } from "./metrics/gateway_metrics.ts";
import { validateConfigFileInWorker } from "./config/config_worker_client.ts";
import { createReloader, type Reloader } from "./reload.ts";
import { HealthRegistry } from "./routing/health.ts";
import type { RunningServer, Runtime } from "./runtime/types.ts";
import { createGateway } from "./server.ts";
import { warnFixedHeadDeadline } from "./head_deadline_warning.ts";
import { localView, openSharedState, threadServices } from "./serve_state.ts";
import { reasonOf, StartError } from "./start_error.ts";
import { storedBudgetCheck } from "./tokens/stored_budget_prices.ts";
import { loadTokenizer } from "./usage/estimate.ts";
import { tokenCounter } from "./usage/token_counter.ts";

/** The gateway's version, printed by `version` and logged at start. */
export const VERSION = "0.1.0";

/**
 * How long requests ended at the close of the shutdown grace period get to finish their way out (send the error
 * event, count their tokens, write their records) before the runtime closes their connections.
 */
const SHUTDOWN_CUT_MS = 2_000;

/**
 * How long requests still open after the cut window get once their waiting token counts were given up (the rough
 * estimate, at once): enough for them to write their records, which is all that is left for them to do.
 */
const SHUTDOWN_SETTLE_MS = 500;

/**
 * How long before the end of the grace period a drain with requests still open has the token-count worker load
 * the tokenizer (see {@linkcode tokenizerBeforeCut}): more than its first load takes on a busy machine (about
 * 1 s alone, up to 3 s with several workers on few cores), so it is ready by the cut.
 */
const TOKENIZER_LEAD_MS = 3_000;

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
  /**
   * The config file to watch, and to reload on SIGHUP and when it changes; without it nothing is watched, and
   * SIGHUP and `POST /admin/reload` reload the config's `source` (skipped for the compiled-in default).
   */
  configPath?: string;
  /** Write each log line at once instead of in 10 ms bursts (tests that read the log right after a request). */
  unbufferedLogs?: boolean;
  /** The usage store's worker module (`usage/sqlite_worker.ts`), when it must be found from the entry point. */
  usageWorker?: URL;
  /** The reload validation worker (`config/config_worker.ts`), when it must be found from the entry point. */
  configWorker?: URL;
  /** The token-count worker (`usage/token_count_worker.ts`), when it must be found from the entry point. */
  tokenWorker?: URL;
  /**
   * Where the reloader takes its SIGHUPs, instead of installing its own handler: `serve` installs one before
   * anything starts and holds a signal that comes during the start (runtime/held_reload_signal.ts).
   */
  reloadSignal?: (handler: () => void) => void;
}

/** The logger of a serving process or thread: JSON lines, masked with the live config's secrets. */
export function gatewayLogger(
  write: (text: string) => void,
  state: () => GatewayState,
  unbuffered?: boolean,
): Logger {
  return createJsonLogger(write, { buffered: !unbuffered, scrubber: () => state().config.scrubber });
}

/** The reloader of a config file; validation runs in a worker so a large or hostile file never stalls serving. */
export function fileReloader(
  runtime: Runtime,
  initial: GatewayState,
  path: string,
  logger: Logger,
  health: HealthRegistry,
  configWorker: URL | undefined,
  onReload: (next: GatewayState) => Promise<void> | void,
  checkStored?: (config: ResolvedConfig) => Promise<readonly ConfigIssue[]>,
): Reloader {
  return createReloader({
    path,
    env: () => runtime.env(),
    logger,
    initial,
    health,
    onReload,
    checkStored,
    validate: (path, env) =>
      validateConfigFileInWorker(path, env, {
        workerUrl: configWorker,
        onFallback: (reason) => logger.warn("config_worker_unavailable", { reason, validating: "in-thread" }),
      }),
  });
}

/**
 * Reloads on SIGHUP and when the file at `path` changes; returns a function that stops watching. A reload
 * that throws (a bug, not an invalid file: that is reported) must not become an unhandled rejection.
 *
 * SIGHUP is handled whether or not there is a file (`path` undefined: the compiled-in default config): without a
 * handler its default action ends the process at once, with no drain and the usage records still queued lost.
 * The reload of the compiled-in config is then skipped, and says so. The signal is taken from
 * `options.reloadSignal` when given (`serve` heard it from before the start), else from the runtime.
 */
export function watchConfig(
  runtime: Runtime,
  options: Pick<StartOptions, "configPath" | "reloadSignal">,
  reload: (trigger: string) => Promise<unknown>,
  logger: Logger,
): () => void {
  const path = options.configPath;
  const run = (trigger: string) =>
    reload(trigger).catch((err) =>
      logger.error("config_reload_crashed", {
        trigger,
        error: err instanceof Error ? err.message : String(err),
      })
    );
  const onSignal = options.reloadSignal ?? ((handler: () => void) => runtime.onReloadSignal(handler));
  onSignal(() => void run("signal"));
  return path === undefined ? () => {} : runtime.watchFile(path, () => void run("file"));
}

/** Starts serving `state` from this thread; resolves once listening. */
export async function startServer(
  runtime: Runtime,
  state: GatewayState,
  options: StartOptions = {},
): Promise<ServeHandle> {
  const config = state.config;
  let live = () => state;
  const logger = gatewayLogger((text) => runtime.writeStdout(text), () => live(), options.unbufferedLogs);
  const health = new HealthRegistry();
  const metrics = new GatewayMetrics();
  const shared = await openSharedState(config, logger, metrics, options.usageWorker);
  let thread: Awaited<ReturnType<typeof threadServices>> | undefined;
  try {
    thread = await threadServices(config, logger, { env: runtime.env() }, localView(shared), metrics);
    const alerts = thread.services.alerts;
    if (alerts) health.onEjected = (event) => alerts.ejected(event);
    // Bounded: a database that hangs must not keep the port closed (the seed goes on in the background).
    await shared.seedAtStart(config);
    // Made here, before the reloader: a reload's seeds wait for the requests open at its swap.
    const inFlight = new InFlightRequests();
    // Merging the stored tokens once now says at start which stored money budgets the config gives no price.
    shared.tokens?.apply(state);
    const reloader = fileReloader(
      runtime,
      state,
      options.configPath ?? config.source,
      logger,
      health,
      options.configWorker,
      (next) => shared.budgets.reloaded(next.config, inFlight.whenOpenOver()),
      storedBudgetCheck(shared.tokens),
    );
    live = reloader.current;
    const unwatch = watchConfig(runtime, options, (trigger) => reloader.reload(trigger), logger);
    let serving: ServingThread;
    try {
      serving = await serveThread(runtime, {
        reloader,
        logger,
        health,
        services: thread.services,
        options,
        inFlight,
      });
      warnFixedHeadDeadline(runtime, config.server.connections.header_timeout, logger);
    } catch (err) {
      unwatch();
      throw err;
    }
    const closeThread = thread;
    return {
      server: serving.server,
      reloader,
      async stop(graceMs) {
        unwatch();
        await serving.drain(graceMs);
        // Every request is over: flush their usage records before the process goes.
        await closeThread.close(graceMs);
        await shared.close();
        logger.flush?.();
      },
    };
  } catch (err) {
    // Not serving after all (the port is taken, say): stop the usage worker, so nothing keeps running.
    await thread?.close(0);
    await shared.close();
    throw err;
  }
}

/** A thread serving requests. */
export interface ServingThread {
  readonly server: RunningServer;
  readonly inFlight: InFlightRequests;
  /**
   * Stops accepting and waits up to `graceMs` for open requests; ends those still open then, so each is
   * reported, and gives them a moment more to send their endings.
   */
  drain(graceMs: number): Promise<void>;
}

/** What {@linkcode serveThread} serves with. */
export interface ServeThreadParts {
  readonly reloader: Reloader;
  readonly logger: Logger;
  readonly health: HealthRegistry;
  readonly services: GatewayServices;
  readonly options: StartOptions;
  /** Where open requests are registered (workers report theirs to the primary). */
  readonly inFlight?: InFlightRequests;
  /** Share the port with the other workers. */
  readonly reusePort?: boolean;
  /** The connection cap of this thread (workers share `server.connections.max_connections`). */
  readonly maxConnections?: number;
  /**
   * The config the gateway started with, whose keys read only at start the listener takes (its address, its
   * connections' timeouts): a worker that replaces a dead one serves the latest reload's config but listens as its
   * siblings do. Default: the reloader's current config (a thread that starts with the gateway).
   */
  readonly started?: ResolvedConfig;
  /**
   * The log line said once listening (`listening`, with its URL); a worker says `worker_listening` with its
   * number, and the primary the one `listening` once every worker listens.
   */
  readonly listening?: { readonly msg: string; readonly fields: Record<string, string | number> };
}

/** Binds the fetch handler to the runtime's server; resolves once listening. */
export async function serveThread(runtime: Runtime, parts: ServeThreadParts): Promise<ServingThread> {
  const { reloader, logger, options } = parts;
  const config = parts.started ?? reloader.current().config;
  const inFlight = parts.inFlight ?? new InFlightRequests();
  const handler = createGateway({
    state: reloader.current,
    logger,
    reloader,
    routing: { health: parts.health },
    services: parts.services,
    inFlight,
  });
  const hostname = options.host ?? config.server.host;
  const port = options.port ?? config.server.port;
  let server: RunningServer;
  try {
    server = await runtime.serve({
      hostname,
      port,
      handler,
      reusePort: parts.reusePort,
      limits: {
        headerTimeoutMs: config.server.connections.header_timeout,
        bodyTimeoutMs: config.server.connections.body_timeout,
        keepAliveTimeoutMs: config.server.connections.keep_alive_timeout,
        sendTimeoutMs: config.server.connections.send_timeout,
        maxConnections: parts.maxConnections ?? config.server.connections.max_connections,
      },
    });
  } catch (err) {
    throw new StartError(`cannot listen on ${hostname}:${port}: ${reasonOf(err)}`);
  }
  logger.info(parts.listening?.msg ?? "listening", {
    url: `http://${server.hostname}:${server.port}`,
    config: config.source,
    version: VERSION,
    runtime: `${runtime.name} ${runtime.version}`,
    ...parts.listening?.fields,
  });
  // The thread's counts go through the token-count worker, started by the first of them and ended with the drain
  // (once no other gateway of this thread counts through it: tests run several in one process).
  const releaseCounter = tokenCounter.use({ workerUrl: options.tokenWorker, logger });
  return {
    server,
    inFlight,
    async drain(graceMs) {
      // The runtime stops accepting and waits for open requests; the gateway ends those still open when the
      // grace period is over, itself, so each is reported, and the runtime gets a moment more to send their
      // endings before it closes whatever is left. That moment counts from the cut, not from now: a thread held
      // past the grace period (by a long synchronous task on a busy machine, say) would otherwise find the
      // runtime's deadline already passed when it cuts, and the connections closed before the answers were
      // written.
      const started = performance.now();
      let closeRest!: () => void;
      const closed = server.shutdown(new Promise<void>((resolve) => closeRest = resolve));
      let deadline: ReturnType<typeof setTimeout>;
      const tokenizer = tokenizerBeforeCut(inFlight, graceMs);
      if (await inFlight.whenIdle(graceMs)) {
        // Nothing to cut; what is still being written gets the same moment as ever, from the start.
        deadline = setTimeout(
          closeRest,
          Math.max(0, graceMs + SHUTDOWN_CUT_MS - (performance.now() - started)),
        );
      } else {
        // Loaded by now unless the grace period was shorter than the load: the cut waits for it (bounded), so
        // that counting the cut requests never holds back their answers.
        await within(tokenizer, SHUTDOWN_CUT_MS);
        const count = inFlight.abortAll(serverShuttingDown());
        deadline = setTimeout(closeRest, SHUTDOWN_CUT_MS);
        logger.warn("shutdown_cut_requests", { count, grace_ms: graceMs });
        // Still open after the cut window: requests whose record waits on a count the token-count worker has not
        // answered (its tokenizer still loading, or busy). Released now, not once the connections are closed, the
        // counter ends the worker and those counts are the rough estimate at once, so each such request is
        // reported before the usage pipeline closes; a moment more lets them.
        if (!await inFlight.whenIdle(SHUTDOWN_CUT_MS)) {
          releaseCounter();
          if (!await inFlight.whenIdle(SHUTDOWN_SETTLE_MS)) {
            logger.error("shutdown_unreported_requests", { count: inFlight.size });
          }
        }
      }
      await closed;
      clearTimeout(deadline);
      // Every request is over, its tokens counted.
      releaseCounter();
    },
  };
}

/**
 * Loads the tokenizer while requests still drain, when a cut looks likely: requests still open
 * {@linkcode TOKENIZER_LEAD_MS} before the end of the grace period (at once, with a shorter one). Streams cut at
 * shutdown have no usage from their upstream, so their tokens are counted, and the tokenizer's first load takes
 * about a second (in the token-count worker; it blocked the serving thread when it was loaded there, and held
 * back the 503s of the requests cut with them until the runtime closed their connections, answerless): loaded
 * ahead, their records are written within the cut window. A drain that is over before then never loads it.
 */
async function tokenizerBeforeCut(inFlight: InFlightRequests, graceMs: number): Promise<void> {
  if (await inFlight.whenIdle(Math.max(0, graceMs - TOKENIZER_LEAD_MS))) return;
  await loadTokenizer();
}

/** Waits for `work`, but at most `ms`. */
async function within(work: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([work, new Promise<void>((resolve) => timer = setTimeout(resolve, ms))]);
  clearTimeout(timer);
}

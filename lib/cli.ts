/**
 * The command line: `serve` (default), `check`, `prices`, `token new`, `version`. Kept apart from `main.ts`
 * so the commands can be tested in-process with a fake runtime.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { stat } from "node:fs/promises";
import { parseArgs } from "node:util";
import { hashToken } from "./auth/authenticate.ts";
import { DEFAULT_CONFIG_TEXT, EMBEDDED_CONFIG_SOURCE } from "./config/default_config.ts";
import { validateConfigFile } from "./config/config_worker_client.ts";
import {
  formatIssues,
  loadConfigFile,
  parseConfigText,
  validateConfigText,
  type ValidatedConfig,
} from "./config/load.ts";
import { tokenSchema } from "./config/schema.ts";
import { StartError } from "./start_error.ts";
import { permissionNotes, startIssues, telemetryNotes } from "./start_checks.ts";
import { startWorkers } from "./workers/primary.ts";
import type { GatewayState } from "./http/context.ts";
import { checkConfiguredCatalog, runPricesCommand } from "./pricing/prices_command.ts";
import { setUpState } from "./reload.ts";
import type { Runtime } from "./runtime/types.ts";
import { holdReloadSignal } from "./runtime/held_reload_signal.ts";
import { hostOverride, portOverride, workerCount } from "./serve_flags.ts";
import { type ServeHandle, type StartOptions, startServer, VERSION } from "./serve.ts";

/**
 * The config shipped beside `main.ts`, used when neither `--config` nor `GATEWAY_CONFIG` is given. A single
 * binary has no such file; it serves the copy compiled into it (`DEFAULT_CONFIG_TEXT`) instead.
 */
export const DEFAULT_CONFIG = new URL("../config/gateway.yaml", import.meta.url);

const USAGE = `Usage: gateway [serve] [--config FILE] [--port N] [--host H] [--workers N|auto]
       gateway check [--config FILE] [--port N] [--host H] [--workers N|auto]
       gateway prices [--model MODEL_OR_ALIAS] [--config FILE]
       gateway token new [--name NAME] [--environment ENV]
       gateway version
Environment: GATEWAY_CONFIG (config file), PORT (listen port).
`;

const OPTIONS = {
  config: { type: "string" },
  port: { type: "string" },
  host: { type: "string" },
  workers: { type: "string" },
  name: { type: "string" },
  environment: { type: "string" },
  model: { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "v" },
} as const;

/**
 * The config to use: `--config`, `$GATEWAY_CONFIG`, `config/gateway.yaml` beside `main.ts`, or, when that
 * file does not exist (a compiled binary), `EMBEDDED_CONFIG_SOURCE` for the copy built into the program.
 */
async function configPath(
  flag: string | undefined,
  env: Record<string, string | undefined>,
): Promise<string> {
  if (flag) return flag;
  if (env.GATEWAY_CONFIG) return env.GATEWAY_CONFIG;
  const path = DEFAULT_CONFIG.protocol === "file:"
    ? decodeURIComponent(DEFAULT_CONFIG.pathname)
    : DEFAULT_CONFIG.href;
  try {
    await stat(path);
    return path;
  } catch (err) {
    const code = typeof err === "object" && err !== null && "code" in err ? err.code : undefined;
    // Any other failure (permissions, …) is reported by the loader against the real path.
    return code === "ENOENT" || code === "ENOTDIR" ? EMBEDDED_CONFIG_SOURCE : path;
  }
}

/**
 * Loads, validates and sets up a config: the schema and cross-checks, then each provider's own setup (credentials
 * found, …). {@linkcode prepare} adds the flags and the start checks (`start_checks.ts`).
 */
async function load(runtime: Runtime, path: string): Promise<GatewayState | null> {
  const env = runtime.env();
  const result = path === EMBEDDED_CONFIG_SOURCE
    ? parseConfigText(DEFAULT_CONFIG_TEXT, { source: path, env })
    : await loadConfigFile(path, env);
  if (!result.ok) {
    runtime.writeStderr(`Invalid config ${path}:\n${formatIssues(path, result.issues)}\n`);
    return null;
  }
  const setUp = setUpState(result.config, env);
  if (!setUp.ok) {
    runtime.writeStderr(`Invalid config ${path}:\n${formatIssues(path, setUp.issues)}\n`);
    return null;
  }
  return setUp.state;
}

/**
 * The config as the workers take it (validated, not resolved: plain data that crosses to a thread). Read
 * again after `load` found it valid; a file changed in between is checked again like any reload.
 */
async function validatedAgain(
  path: string,
  env: Record<string, string | undefined>,
): Promise<ValidatedConfig> {
  const result = path === EMBEDDED_CONFIG_SOURCE
    ? validateConfigText(DEFAULT_CONFIG_TEXT, env)
    : await validateConfigFile(path, env);
  if (!result.ok) throw new Error(`the config changed while starting: ${formatIssues(path, result.issues)}`);
  return result.validated;
}

/** What `check` and `serve` found before serving: the config set up, and the flags as `serve` takes them. */
interface Prepared {
  readonly path: string;
  readonly state: GatewayState;
  readonly port: number | undefined;
  readonly host: string | undefined;
  readonly workers: number;
}

/**
 * `check` and `serve` up to serving, one way: the flags (`--port` or `$PORT`, `--host`, `--workers`), the config
 * ({@linkcode load}), then the start checks (`start_checks.ts`: the OTLP endpoint variables, and the usage files'
 * places, a directory that is a file, a file that is a directory, a directory not writable), asked without writing
 * anything, so `check` refuses what `serve` would and `serve` refuses it before it listens instead of losing the
 * records; and, for `serve`, a usage file Deno's permissions leave out (`check` only notes it: it is often run
 * with other permissions than `serve`). What neither can see is a port already taken. The exit code when
 * refused: 1 for the config; for a flag, 1 for `check` and 2 for `serve`.
 */
async function prepare(
  runtime: Runtime,
  flags: { config?: string; port?: string; host?: string; workers?: string },
  command: "check" | "serve",
): Promise<Prepared | number> {
  // Every refusal is exit 1 for `check` (it says whether `serve` would start); `serve` exits 2 for a flag.
  const flagCode = command === "check" ? 1 : 2;
  const env = runtime.env();
  const port = portOverride(flags.port, env);
  if (!port.ok) {
    runtime.writeStderr(`${port.message}\n`);
    return flagCode;
  }
  const host = hostOverride(flags.host);
  if (!host.ok) {
    runtime.writeStderr(`${host.message}\n`);
    return flagCode;
  }
  const path = await configPath(flags.config, env);
  const state = await load(runtime, path);
  if (state === null) return 1;
  const workers = workerCount(flags.workers ?? state.config.server.workers);
  if (!workers.ok) {
    runtime.writeStderr(`${workers.message}\n`);
    return flagCode;
  }
  const checking = command === "check";
  const issues = await startIssues(state.config, env, undefined, !checking);
  if (issues.length > 0) {
    runtime.writeStderr(`Invalid config ${path}:\n${formatIssues(path, issues)}\n`);
    return 1;
  }
  const ignored = checking ? telemetryNotes(state.config, env) : [];
  if (ignored.length > 0) {
    runtime.writeStderr(`Note: serve will ignore these variables:\n${formatIssues(path, ignored)}\n`);
  }
  const notes = checking ? permissionNotes(state.config) : [];
  if (notes.length > 0) {
    runtime.writeStderr(
      `Note: serve run with this check's permissions would refuse to start:\n${formatIssues(path, notes)}\n`,
    );
  }
  return { path, state, port: port.value, host: host.value, workers: workers.value };
}

/** How many words each command takes, its name included: `token new` is two, every other one. */
const COMMAND_WORDS: Readonly<Record<string, number>> = {
  serve: 1,
  check: 1,
  prices: 1,
  token: 2,
  version: 1,
};

/** Commands that read a config file, so a stray word that looks like a path most likely meant `--config`. */
const CONFIG_COMMANDS: ReadonlySet<string> = new Set(["serve", "check", "prices"]);

/**
 * The line refusing a word the command does not take, or null. Every command reads its file from `--config`
 * only: `check my.yaml` (the way most linters take a file) must not check the shipped config instead and say
 * it is valid, nor `serve my.yaml` serve it; so a stray word is an error naming it, with the likely fix.
 */
function strayWord(command: string, positionals: readonly string[]): string | null {
  const takes = COMMAND_WORDS[command];
  if (takes === undefined || positionals.length <= takes) return null;
  const word = positionals[takes];
  const hint = CONFIG_COMMANDS.has(command) && looksLikeConfigPath(word)
    ? ` (did you mean --config ${word}?)`
    : "";
  return `Unexpected argument '${word}'${hint}`;
}

/** A word that names a file rather than a command: a YAML or JSON name, or a path. */
function looksLikeConfigPath(word: string): boolean {
  return /\.(ya?ml|json)$/i.test(word) || word.includes("/") || word.includes("\\");
}

/** Runs the command line; resolves to the exit code (`serve` resolves only after shutdown). */
export async function runCli(
  runtime: Runtime,
  argv: string[],
  options: Pick<StartOptions, "usageWorker" | "configWorker" | "tokenWorker"> & { serveWorker?: URL } = {},
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    runtime.writeStderr(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const env = runtime.env();
  const command = positionals[0] ?? "serve";
  if (values.help) {
    runtime.writeStdout(USAGE);
    return 0;
  }
  const stray = strayWord(command, positionals);
  if (stray !== null) {
    runtime.writeStderr(`${stray}\n${USAGE}`);
    return 2;
  }
  if (values.version || command === "version") {
    runtime.writeStdout(`gateway ${VERSION} (${runtime.name} ${runtime.version})\n`);
    return 0;
  }
  switch (command) {
    case "check": {
      // Every refusal is exit 1 here, the flags' too: `check` says whether `serve` would start.
      const prepared = await prepare(runtime, values, "check");
      if (typeof prepared === "number") return prepared;
      const { path, state: { config } } = prepared;
      // The operator's price catalog (`pricing.catalog`) is part of the config: a malformed one fails check.
      if (!(await checkConfiguredCatalog(runtime, config))) return 1;
      runtime.writeStdout(
        `Config ${path} is valid: ${config.providers.size} providers, ${config.models.size} models, ` +
          `${config.tokens.size} tokens.\n`,
      );
      return 0;
    }
    case "prices": {
      // The same config as check and serve (--config, $GATEWAY_CONFIG, the shipped file): its catalog and aliases.
      const path = await configPath(values.config, env);
      // The single binary's compiled-in copy has no file: its text is read instead, as `check` and `serve` do.
      const configText = path === EMBEDDED_CONFIG_SOURCE ? DEFAULT_CONFIG_TEXT : undefined;
      return await runPricesCommand(runtime, { model: values.model, configPath: path, configText, env });
    }
    case "token": {
      if (positionals[1] !== "new") break;
      const name = values.name ?? "my-app";
      const environment = values.environment ?? "development";
      // Held to the config's own token fields, so the line printed is one `check` accepts.
      for (
        const [flag, value, schema] of [
          ["--name", name, tokenSchema.shape.name],
          ["--environment", environment, tokenSchema.shape.environment],
        ] as const
      ) {
        const checked = schema.safeParse(value);
        if (!checked.success) {
          const why = checked.error.issues[0]?.code === "too_small"
            ? "must not be empty"
            : checked.error.issues[0]?.message;
          runtime.writeStderr(`Invalid ${flag} ${JSON.stringify(value)}: ${why}.\n`);
          return 2;
        }
      }
      const token = `gw-${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")}`;
      // Quoted (a JSON string is a YAML one), so no value can end the entry or start a comment.
      const entry = `{ name: ${JSON.stringify(name)}, environment: ${JSON.stringify(environment)}, ` +
        `sha256: ${hashToken(token)}, models: ["*"] }`;
      runtime.writeStdout(
        `Token (shown once; store it as a secret): ${token}\n\n` +
          `Add to the config's tokens list:\n  - ${entry}\n`,
      );
      return 0;
    }
    case "serve": {
      const prepared = await prepare(runtime, values, "serve");
      if (typeof prepared === "number") return prepared;
      const { path, state, port, host, workers } = prepared;
      // Installed before anything listens: a signal while the server or the workers start (worker 0 serves
      // before the others listen) must not meet the runtime's default action, which ends the process at once and
      // cuts what is in flight. It is remembered, and the drain runs once the start has resolved.
      let stopping = false;
      const stopAsked = new Promise<void>((asked) => {
        runtime.onShutdownSignal((signal) => {
          stopping = true;
          runtime.writeStdout(
            JSON.stringify({ time: new Date().toISOString(), level: "info", msg: "shutdown", signal }) + "\n",
          );
          asked();
        });
      });
      // SIGHUP alike (its default action ends the process too): held during the start, its reload runs once the
      // start is over.
      const reloadSignal = holdReloadSignal(runtime);
      let handle: ServeHandle;
      try {
        const start: StartOptions = {
          ...options,
          port,
          host,
          // The embedded copy cannot change: there is no file to watch or reload.
          configPath: path === EMBEDDED_CONFIG_SOURCE ? undefined : path,
          reloadSignal: reloadSignal.listen,
        };
        handle = workers === 1
          ? await startServer(runtime, state, start)
          : await startWorkers(runtime, state, await validatedAgain(path, env), {
            ...start,
            workers,
            workerUrl: options.serveWorker,
          });
      } catch (err) {
        // Said plainly, by the stage that failed (the port taken, the usage database's directory a file), never
        // as a stack trace.
        const said = err instanceof StartError
          ? `${err.message[0].toUpperCase()}${err.message.slice(1)}`
          : `Cannot start: ${err instanceof Error ? err.message : String(err)}`;
        runtime.writeStderr(`${said}\n`);
        return 1;
      }
      // A SIGHUP held during the start reloads now, unless a shutdown was asked meanwhile: that one goes first.
      if (stopping && reloadSignal.held()) {
        runtime.writeStdout(
          JSON.stringify({
            time: new Date().toISOString(),
            level: "info",
            msg: "config_reload_skipped",
            trigger: "signal",
            reason: "a shutdown was asked while the gateway started",
          }) + "\n",
        );
      }
      if (!stopping) reloadSignal.open();
      await stopAsked;
      try {
        // The grace period is the live config's, which a reload may have changed.
        await handle.stop(handle.reloader.current().config.server.shutdown_timeout);
        return 0;
      } catch (err) {
        runtime.writeStderr(`Shutdown failed: ${err instanceof Error ? err.message : String(err)}\n`);
        return 1;
      }
    }
  }
  // `gateway my.yaml`: a file where the command goes most likely meant `--config` (for `serve`, the default).
  const hint = looksLikeConfigPath(command) ? ` (did you mean --config ${command}?)` : "";
  runtime.writeStderr(`Unknown command: ${positionals.join(" ")}${hint}\n${USAGE}`);
  return 2;
}

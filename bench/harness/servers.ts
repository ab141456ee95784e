/**
 * The servers the bench starts: spawning one pinned to a core with its output in a log file, waiting until it
 * answers a real chat request, and the targets measured (bare proxies and gateways on each runtime).
 *
 * @module
 */
import { freePort, shq, sleep, TMP } from "./process.ts";
import { BENCH_DIR, BINARY, CHAT_BODY, PIN, ROOT, state, SUT_CPU, TOKEN } from "./settings.ts";
import { SHARED_ENV } from "./shared_state.ts";

/** A server process started by the bench. */
export interface Server {
  name: string;
  pid: number;
  base: string;
  logFile: string;
  exited: boolean;
  stop(): Promise<void>;
}

/** Starts `argv` as its own process (pinned to `cpu`), stdout and stderr into a log file; the pid is the server's. */
export function spawnServer(
  name: string,
  argv: string[],
  port: number,
  options: { cpu: string; env?: Record<string, string>; cwd?: string },
): Server {
  const logFile = `${TMP}/${name}.log`;
  const pin = PIN ? `taskset -c ${options.cpu} ` : "";
  const script = `ulimit -n $(ulimit -Hn) 2>/dev/null; exec ${pin}${argv.map(shq).join(" ")} >${
    shq(logFile)
  } 2>&1`;
  const child = new Deno.Command("sh", {
    args: ["-c", script],
    cwd: options.cwd ?? ROOT,
    env: options.env,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const server: Server = {
    name,
    pid: child.pid,
    base: `http://127.0.0.1:${port}`,
    logFile,
    exited: false,
    async stop() {
      if (server.exited) return;
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      const timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch { /* already gone */ }
      }, 5_000);
      await child.status;
      clearTimeout(timer);
    },
  };
  child.status.then(() => server.exited = true);
  return server;
}

export async function logTail(server: Server, lines = 6): Promise<string> {
  try {
    const text = await Deno.readTextFile(server.logFile);
    return text.trim().split("\n").slice(-lines).join(" | ").slice(0, 600);
  } catch {
    return "(no log)";
  }
}

export function chatInit(body = CHAT_BODY): RequestInit {
  return {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
    body,
  };
}

/** Waits until a chat request through `server` answers 200; throws with the log's tail if it never does. */
export async function waitReady(server: Server, timeoutMs = 60_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let last = "";
  while (performance.now() < deadline) {
    if (server.exited) throw new Error(`${server.name} exited: ${await logTail(server)}`);
    try {
      const response = await fetch(`${server.base}/v1/chat/completions`, chatInit());
      const text = await response.text();
      if (response.status === 200) return;
      last = `status ${response.status}: ${text.slice(0, 200)}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await sleep(50);
  }
  throw new Error(`${server.name} not ready after ${timeoutMs} ms (${last}): ${await logTail(server)}`);
}

// ---------------------------------------------------------------------------------------------- targets

/** Something to measure. */
export interface Target {
  key: string;
  label: string;
  runtime: "deno" | "bun";
  kind: "upstream" | "bare" | "gateway";
  /** Why it is not measured, when it is not. */
  unavailable?: string;
  /** Starts a fresh instance (not for `direct`). */
  start?: (name: string) => Promise<Server>;
  server?: Server;
  /** The phases it takes part in, when not all (a floor that answers no streams runs only the JSON ones). */
  phases?: readonly string[];
}
/**
 * Starts bench/bare_proxy.ts on `runtime`; `edge: "node"` (Deno) serves it through the gateway's own
 * `node:http` edge instead of `Deno.serve`.
 */
export async function startBare(
  runtime: "deno" | "bun",
  name: string,
  edge: "native" | "node" = "native",
): Promise<Server> {
  const port = freePort();
  const script = `${BENCH_DIR}/bare_proxy.ts`;
  const argv = runtime === "bun"
    ? [state.bun!, script, "--port", String(port), "--upstream", state.upstreamUrl]
    : ["deno", "run", "-A", script, "--port", String(port), "--upstream", state.upstreamUrl, "--edge", edge];
  // Bun's fetch queues requests beyond 256 in flight (BUN_CONFIG_MAX_HTTP_REQUESTS); the baseline must not.
  const env: Record<string, string> = runtime === "bun" ? { BUN_CONFIG_MAX_HTTP_REQUESTS: "65535" } : {};
  const server = spawnServer(name, argv, port, { cpu: SUT_CPU, env });
  await waitReady(server);
  return server;
}

/**
 * Starts bench/minimal_gateway.ts on Bun with every step (`--steps 5`): only what every gateway request must do,
 * the floor the Bun gateway's throughput reads against in the same run.
 */
export async function startMinimalGateway(name: string): Promise<Server> {
  const port = freePort();
  const argv = [
    state.bun!,
    `${BENCH_DIR}/minimal_gateway.ts`,
    "--port",
    String(port),
    "--upstream",
    state.upstreamUrl,
  ];
  const server = spawnServer(name, [...argv, "--steps", "5"], port, {
    cpu: SUT_CPU,
    env: { BUN_CONFIG_MAX_HTTP_REQUESTS: "65535" },
  });
  await waitReady(server);
  return server;
}

/** Extra `deno run` flags for the Deno gateway (e.g. `--v8-flags=…`), from `BENCH_DENO_FLAGS`. */
export const DENO_FLAGS = (Deno.env.get("BENCH_DENO_FLAGS") ?? "").split(" ").filter(Boolean);

/**
 * Starts the gateway with `configFile` (in bench/; default `config.yaml`, or BENCH_CONFIG, relative to the
 * gateway checkout, which replaces the default for every gateway row). The environment always carries the
 * shared-state settings `config_shared.yaml` reads; the other configs ignore them.
 */
export async function startGateway(
  runtime: "deno" | "bun",
  name: string,
  configFile?: string,
): Promise<Server> {
  const port = freePort();
  const dataDir = `${TMP}/${name}-data`;
  await Deno.mkdir(dataDir, { recursive: true });
  const chosen = Deno.env.get("BENCH_CONFIG");
  const config = configFile
    ? `${BENCH_DIR}/${configFile}`
    : chosen
    ? (chosen.startsWith("/") ? chosen : `${ROOT}/${chosen}`)
    : `${BENCH_DIR}/config.yaml`;
  const argv = runtime === "bun"
    ? [BINARY, "serve", "--config", config, "--port", String(port)]
    : ["deno", "run", "-A", ...DENO_FLAGS, "main.ts", "serve", "--config", config, "--port", String(port)];
  const server = spawnServer(name, argv, port, {
    cpu: SUT_CPU,
    env: {
      BENCH_UPSTREAM_URL: state.upstreamUrl,
      BENCH_DATA_DIR: dataDir,
      BENCH_TOKEN: TOKEN,
      ...SHARED_ENV,
      // As deployed (see the Dockerfile and docs/operations.md): Bun's fetch otherwise queues upstream calls past 256.
      ...(runtime === "bun" ? { BUN_CONFIG_MAX_HTTP_REQUESTS: "65535" } : {}),
    },
  });
  try {
    await waitReady(server);
  } catch (err) {
    await server.stop();
    throw err;
  }
  return server;
}

/** Runs `fn` with `t` as the server under test (for `direct`, the upstream moved onto the server core). */
export type AsSut = (t: Target, fn: () => Promise<void>) => Promise<void>;

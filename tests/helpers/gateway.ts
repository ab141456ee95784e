/**
 * Starts a gateway on a real socket for end-to-end tests: in-process on Deno by default, or as the
 * executable named by `GATEWAY_BIN` (the single binary), so one suite proves both.
 *
 * @module
 */
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startServer } from "../../lib/serve.ts";
import { loadConfigFile } from "../../lib/config/load.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { denoRuntime } from "../../lib/runtime/deno.ts";
import type { Runtime } from "../../lib/runtime/types.ts";

/** A token every test config grants, and one that grants only `chat-*` aliases. */
export const TEST_TOKEN = "gw-test-token-0123456789abcdef";
export const NARROW_TOKEN = "gw-narrow-token-0123456789abcdef";

/** A `tokens:` section for test configs. */
export const TEST_TOKENS_YAML = `tokens:
  - name: test-all
    environment: test
    sha256: ${hashToken(TEST_TOKEN)}
    models: ["*"]
  - name: test-narrow
    environment: test
    sha256: ${hashToken(NARROW_TOKEN)}
    models: ["chat-*"]
`;

/** A running gateway. */
export interface TestGateway {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** `url + "/v1"`, for SDK clients. */
  baseURL: string;
  /** Access-log and other JSON lines the gateway wrote to stdout. */
  logs: Record<string, unknown>[];
  /** The config file it serves; writing it reloads the gateway (see {@linkcode reloadWith}). */
  configFile: string;
  /**
   * The first log line matching `match` that the gateway writes after this call, as it arrives: a test waits
   * for the event itself, not for a clock. `failAfterMs` (default 60 s) only turns an event that never comes
   * into a failure rather than a hung suite; nothing healthy comes near it.
   */
  nextLog(
    match: (line: Record<string, unknown>) => boolean,
    failAfterMs?: number,
  ): Promise<Record<string, unknown>>;
  /**
   * Shuts the gateway down gracefully: in-process with `graceMs` (default 5 s) of grace, the binary by SIGTERM
   * (its config's `server.shutdown_timeout`).
   */
  stop(graceMs?: number): Promise<void>;
}

/** A gateway's log lines as they arrive, and the tests waiting for one of them ({@linkcode TestGateway.nextLog}). */
function logBook():
  & { lines: Record<string, unknown>[]; push(line: Record<string, unknown>): void }
  & Pick<
    TestGateway,
    "nextLog"
  > {
  const lines: Record<string, unknown>[] = [];
  const waiters = new Set<(line: Record<string, unknown>) => void>();
  return {
    lines,
    push(line) {
      lines.push(line);
      for (const waiter of [...waiters]) waiter(line);
    },
    nextLog(match, failAfterMs = 60_000) {
      const found = Promise.withResolvers<Record<string, unknown>>();
      const waiter = (line: Record<string, unknown>) => {
        if (!match(line)) return;
        waiters.delete(waiter);
        clearTimeout(backstop);
        found.resolve(line);
      };
      const backstop = setTimeout(() => {
        waiters.delete(waiter);
        found.reject(new Error(`no matching log line in ${failAfterMs} ms`));
      }, failAfterMs);
      waiters.add(waiter);
      return found.promise;
    },
  };
}

/**
 * Writes `yaml` to the gateway's config file and resolves once the reload that starts has been applied (its
 * `config_reloaded` line); a reload that fails rejects with its log line.
 */
export async function reloadWith(gw: TestGateway, yaml: string): Promise<void> {
  const outcome = gw.nextLog((l) => l.msg === "config_reloaded" || l.msg === "config_reload_failed");
  await Deno.writeTextFile(gw.configFile, yaml);
  const line = await outcome;
  if (line.msg !== "config_reloaded") throw new Error(`the reload failed: ${JSON.stringify(line)}`);
}

/** Keeps a test's usage database and spill file in its own temp dir unless the config says where. */
function withTempUsage(yaml: string, dir: string): string {
  if (/^usage:/m.test(yaml)) return yaml;
  return `${yaml}\nusage: { sqlite: "${dir}/usage.sqlite", spill: "${dir}/usage-spill.jsonl", flush_interval: 50ms }\n`;
}

/**
 * The `n`th log line (1-based) matching `match`: at once when it was written already, else as it arrives
 * ({@linkcode TestGateway.nextLog}, whose backstop only turns a line that never comes into a failure). For a line
 * that may come well after the response it describes: a stream's usage record is written once its usage is
 * known, which can wait for the token-count worker's first tokenizer load (seconds on a busy machine), and a
 * gateway binary writes its log in bursts. The lines written so far are read and the waiter registered in one
 * synchronous step, so no line falls between them.
 */
export function nthLog(
  gw: Pick<TestGateway, "logs" | "nextLog">,
  match: (line: Record<string, unknown>) => boolean,
  n: number,
): Promise<Record<string, unknown>> {
  let seen = 0;
  for (const line of gw.logs) {
    if (match(line) && ++seen === n) return Promise.resolve(line);
  }
  return gw.nextLog((line) => match(line) && ++seen === n);
}

/**
 * The first log line matching `match`: at once when it was written already, else as it arrives (a gateway binary
 * writes its log in short bursts, so a line may come a moment after the response it describes, and a stream's
 * usage line after its usage is counted). `ms` only turns a line that never comes into a failure
 * ({@linkcode TestGateway.nextLog}'s backstop): it used to be a polling deadline of 5 s, which a busy machine
 * (the first tokenizer load, a suite on 2 cores) overran with the line still on its way.
 */
export async function waitForLog(
  gw: TestGateway,
  match: (line: Record<string, unknown>) => boolean,
  ms = 60_000,
): Promise<Record<string, unknown>> {
  return (await waitForLogCount(gw, match, 1, ms))[0];
}

/**
 * Waits until at least `count` log lines match `match` and returns them all, as {@linkcode waitForLog} waits for
 * one: the lines written so far are read and the wait for the rest registered in one synchronous step
 * ({@linkcode nthLog}), so none falls between. A caller that asserts an exact count reads what arrived by then.
 */
export async function waitForLogCount(
  gw: TestGateway,
  match: (line: Record<string, unknown>) => boolean,
  count: number,
  ms = 60_000,
): Promise<Record<string, unknown>[]> {
  const have = gw.logs.filter(match);
  if (have.length < count) {
    let seen = have.length;
    await gw.nextLog((line) => match(line) && ++seen === count, ms).catch(() => {
      throw new Error(`${gw.logs.filter(match).length} matching log lines of ${count} in ${ms} ms`);
    });
  }
  return gw.logs.filter(match);
}

/**
 * Asks `gw` for a small `chat-echo` completion with `secret` (the answer's body discarded) until one is 200 or
 * `ms` pass; the last status. For a token whose one concurrent slot a stalled request holds: 200 once the
 * gateway gave that slot back.
 */
export async function untilAdmitted(gw: TestGateway, secret: string, ms = 20_000): Promise<number> {
  const ask = async () => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content: "hi" }] }),
    });
    await res.body?.cancel();
    return res.status;
  };
  const deadline = performance.now() + ms;
  let status = await ask();
  while (status !== 200 && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    status = await ask();
  }
  return status;
}

/** A fake upstream a test starts and must stop again. */
export interface Stoppable {
  stop(): Promise<void>;
}

/**
 * Writes a test's config (`yaml`) under the gateway's temp dir `dir` and returns the path the gateway is started
 * with: a plain `dir/gateway.yaml` unless a test lays it out otherwise (behind symbolic links, say).
 */
export type ConfigLayout = (dir: string, yaml: string) => Promise<string>;

const plainConfigFile: ConfigLayout = async (dir, yaml) => {
  await Deno.writeTextFile(`${dir}/gateway.yaml`, yaml);
  return `${dir}/gateway.yaml`;
};

/** Starts a gateway with `yaml` (a whole config file) on a free port. */
export async function startGateway(
  yaml: string,
  env: Record<string, string> = {},
  layout: ConfigLayout = plainConfigFile,
): Promise<TestGateway> {
  const bin = Deno.env.get("GATEWAY_BIN");
  return bin ? await startBinary(bin, yaml, env, layout) : await startInProcess(yaml, env, layout);
}

async function startInProcess(
  yaml: string,
  env: Record<string, string>,
  layout: ConfigLayout,
): Promise<TestGateway> {
  const dir = await Deno.makeTempDir();
  const configFile = await layout(dir, withTempUsage(yaml, dir));
  const result = await loadConfigFile(configFile, env);
  if (!result.ok) throw new Error(`test config invalid: ${JSON.stringify(result.issues)}`);
  const book = logBook();
  const runtime: Runtime = {
    ...denoRuntime,
    env: () => env,
    // Several gateways share this test process: reload them through their files, not a process signal.
    onReloadSignal: () => {},
    writeStdout: (text) => {
      for (const line of text.split("\n")) if (line.trim()) book.push(JSON.parse(line));
    },
  };
  const state = { config: result.config, providers: createProviders(result.config.providers, env) };
  const handle = await startServer(runtime, state, {
    port: 0,
    host: "127.0.0.1",
    configPath: configFile,
    unbufferedLogs: true,
  });
  const url = `http://127.0.0.1:${handle.server.port}`;
  return {
    url,
    baseURL: `${url}/v1`,
    logs: book.lines,
    nextLog: book.nextLog,
    configFile,
    async stop(graceMs = 5_000) {
      await handle.stop(graceMs);
      await Deno.remove(dir, { recursive: true });
    },
  };
}

async function startBinary(
  bin: string,
  yaml: string,
  env: Record<string, string>,
  layout: ConfigLayout,
): Promise<TestGateway> {
  const dir = await Deno.makeTempDir();
  const configFile = await layout(dir, withTempUsage(yaml, dir));
  const child = new Deno.Command(bin, {
    args: ["serve", "--config", configFile, "--port", "0", "--host", "127.0.0.1"],
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const book = logBook();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  let url: string | undefined;
  const pump = (async () => {
    while (true) {
      const { done, value } = await lines.read();
      if (done) return;
      buffered += value;
      let nl;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (!line.trim()) continue;
        const record = JSON.parse(line);
        book.push(record);
        if (record.msg === "listening") url = String(record.url);
      }
    }
  })();
  // A backstop only: the binary's start waits for nothing slow, but a loaded machine can hold it for seconds.
  const deadline = Date.now() + 60_000;
  while (url === undefined) {
    if (Date.now() > deadline) throw new Error("gateway binary did not start listening in 60 s");
    await new Promise((r) => setTimeout(r, 10));
  }
  return {
    url,
    baseURL: `${url}/v1`,
    logs: book.lines,
    nextLog: book.nextLog,
    configFile,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
      await pump;
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/**
 * The cross-gateway benchmark's targets other than the npm/PyPI peers (bench/cross_gateway/peers.ts): what a
 * target is, the request every target gets, the readiness check that also proves a full stream passes, the
 * mock upstream, Bun, the `dist/gateway` binary and this gateway's rows on Deno and on Bun.
 *
 * @module
 */
import { freePort, logTail, run, type Server, spawnServer } from "./plumbing.ts";
import {
  BENCH_DIR,
  BUN_VERSION,
  log,
  MOCK_CHUNKS,
  MOCK_DELAY_MS,
  ROOT,
  sleep,
  tmpDir,
  TOKEN,
} from "./settings.ts";

/** How to talk to a target: its base URL, headers and the model name it routes to the mock. */
export interface Client {
  headers: Record<string, string>;
  model: string;
}

export interface Target {
  key: string;
  label: string;
  /** Why it was not run, when it was not. */
  notRun?: string;
  start?: () => Promise<{ server: Server; client: Client }>;
}

/** This gateway, as bench/config.yaml sets it up: its token and its alias for the mock's model. */
export const gatewayClient: Client = {
  headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
  model: "bench-chat",
};

/** The mock upstream, talked to directly. */
export const mockClient: Client = {
  headers: { "content-type": "application/json", authorization: "Bearer sk-bench" },
  model: "bench-model",
};

/** The chat completion request every target gets (the same bytes in the readiness check and under wrk). */
export function body(client: Client, stream: boolean): string {
  return JSON.stringify({
    model: client.model,
    messages: [{ role: "user", content: "Hello, gateway! This is a benchmark request." }],
    ...(stream ? { stream: true } : {}),
  });
}

/** Throws unless `server` answers a chat completion and a full stream correctly within `timeoutMs`. */
export async function waitReady(server: Server, client: Client, timeoutMs = 60_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let last = "";
  while (performance.now() < deadline) {
    if (server.exited) throw new Error(`exited: ${await logTail(server)}`);
    try {
      const response = await fetch(`${server.base}/v1/chat/completions`, {
        method: "POST",
        headers: client.headers,
        body: body(client, false),
      });
      const text = await response.text();
      if (response.status === 200 && text.includes("chat.completion")) break;
      last = `status ${response.status}: ${text.slice(0, 200)}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await sleep(100);
  }
  if (performance.now() >= deadline) throw new Error(`not ready after ${timeoutMs} ms (${last})`);
  const response = await fetch(`${server.base}/v1/chat/completions`, {
    method: "POST",
    headers: client.headers,
    body: body(client, true),
  });
  const text = await response.text();
  const contents = text.match(/"content":"c\d+\|/g)?.length ?? 0;
  if (response.status !== 200 || !text.includes("data: [DONE]") || contents !== MOCK_CHUNKS) {
    throw new Error(
      `stream check failed: status ${response.status}, ${contents} of ${MOCK_CHUNKS} content events, ` +
        `${text.includes("[DONE]") ? "" : "no "}[DONE]: ${text.slice(0, 200)}`,
    );
  }
}

/** The pinned Bun's executable (fetched by npx), or undefined when it cannot be had. */
export async function findBun(): Promise<string | undefined> {
  const out = await run(["npx", "-y", `bun@${BUN_VERSION}`, "-e", "console.log(process.execPath)"], {
    timeoutMs: 180_000,
  });
  const path = out.stdout.trim().split("\n").pop() ?? "";
  return out.code === 0 && path.startsWith("/") ? path : undefined;
}

async function newestMtime(dir: string): Promise<number> {
  let newest = 0;
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) newest = Math.max(newest, await newestMtime(path));
    else newest = Math.max(newest, (await Deno.stat(path)).mtime?.getTime() ?? 0);
  }
  return newest;
}

/** `dist/gateway`, built with `deno task compile:bun` when missing or older than main.ts and lib/; or why not. */
export async function ensureBinary(bun: string | undefined): Promise<string | undefined> {
  if (!bun) return `Bun ${BUN_VERSION} unavailable via npx`;
  const binary = `${ROOT}/dist/gateway`;
  const sources = Math.max(
    await newestMtime(`${ROOT}/lib`),
    (await Deno.stat(`${ROOT}/main.ts`)).mtime?.getTime() ?? 0,
  );
  const built = await Deno.stat(binary).then((s) => s.mtime?.getTime() ?? 0, () => 0);
  const version = await run([binary, "version"], { timeoutMs: 10_000 });
  if (built > sources && version.code === 0 && version.stdout.includes("bun")) return undefined;
  log("building dist/gateway: deno task compile:bun");
  const out = await run(["deno", "task", "compile:bun"], { cwd: ROOT, timeoutMs: 300_000 });
  if (out.code !== 0) {
    const lines = (out.stderr + out.stdout).trim().split("\n");
    return `deno task compile:bun failed: ${
      (lines.filter((l) => /error/i.test(l)).slice(0, 2).join("; ") || lines.slice(-2).join("; ")).slice(
        0,
        300,
      )
    }`;
  }
  return undefined;
}

/** Starts the mock upstream (bench/fake_upstream.ts, on Bun when there is one) and waits until it answers. */
export async function startMock(bun: string | undefined): Promise<Server> {
  const mockPort = freePort();
  const mockArgv = [
    "bench/fake_upstream.ts",
    "--port",
    String(mockPort),
    "--delay-ms",
    String(MOCK_DELAY_MS),
    "--chunks",
    String(MOCK_CHUNKS),
    "--interval",
    "0",
  ];
  const mock = spawnServer("mock", bun ? [bun, ...mockArgv] : ["deno", "run", "-A", ...mockArgv], mockPort);
  await waitReady(mock, mockClient);
  return mock;
}

/**
 * This gateway's row `gw-<runtime>-w<workers>` on bench/config.yaml, pointed at `mock`; `problem` (why the Bun
 * binary is unavailable) makes it a "not run" row. A gateway that rejects `--workers` is reported as such.
 */
export function gatewayTarget(
  runtime: "deno" | "bun",
  workers: number,
  problem: string | undefined,
  mock: Server,
): Target {
  const key = `gw-${runtime}-w${workers}`;
  return {
    key,
    label:
      `this gateway, ${
        runtime === "deno" ? "Deno (`deno run -A main.ts serve`)" : "Bun binary (`dist/gateway`)"
      }, ` +
      `--workers ${workers}`,
    notRun: problem,
    start: async () => {
      const port = freePort();
      const dataDir = `${tmpDir()}/${key}-data`;
      await Deno.mkdir(dataDir, { recursive: true });
      const config = `${BENCH_DIR}/config.yaml`;
      const common = ["serve", "--config", config, "--port", String(port), "--workers", String(workers)];
      const argv = runtime === "bun"
        ? [`${ROOT}/dist/gateway`, ...common]
        : ["deno", "run", "-A", "main.ts", ...common];
      const server = spawnServer(key, argv, port, {
        env: {
          BENCH_UPSTREAM_URL: mock.base,
          BENCH_DATA_DIR: dataDir,
          BENCH_TOKEN: TOKEN,
          ...(runtime === "bun" ? { BUN_CONFIG_MAX_HTTP_REQUESTS: "65535" } : {}),
        },
      });
      try {
        await waitReady(server, gatewayClient);
      } catch (err) {
        await server.stop();
        const tail = await logTail(server);
        const message = err instanceof Error ? err.message : String(err);
        if (/workers/i.test(tail) || /workers/i.test(message)) {
          throw new Error(`the gateway rejected \`--workers ${workers}\`: ${tail.slice(0, 240)}`);
        }
        throw err;
      }
      return { server, client: gatewayClient };
    },
  };
}

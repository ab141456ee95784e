/**
 * The other gateways, from public registries: Portkey's gateway (npm, pinned, installed under PEERS_DIR and
 * measured), and Bifrost (npm launcher) and LiteLLM (PyPI), which are only tried, so the report can say why
 * they were not run here.
 *
 * @module
 */
import { freePort, run, type Server, spawnServer } from "./plumbing.ts";
import { BIFROST_VERSION, log, PEERS_DIR, PORTKEY_NODE_SERVER, PORTKEY_VERSION, tmpDir } from "./settings.ts";
import { type Client, type Target, waitReady } from "./targets.ts";

/** Portkey's entry script and the Node that runs it, or why it cannot be run. */
export interface PortkeyInstall {
  entry?: string;
  node?: string;
  problem?: string;
}

/** Portkey's gateway from npm, installed (pinned) under PEERS_DIR; the reason when it cannot be. */
export async function installPortkey(): Promise<PortkeyInstall> {
  const dir = `${PEERS_DIR}/portkey-${PORTKEY_VERSION}`;
  const entry = `${dir}/node_modules/@portkey-ai/gateway/build/start-server.js`;
  const node = (await run(["node", "--version"])).stdout.trim();
  if (!node) return { problem: "node not found" };
  const installed = await Deno.readTextFile(`${dir}/node_modules/@portkey-ai/gateway/package.json`).then(
    (t) => (JSON.parse(t) as { version: string }).version,
    () => undefined,
  );
  const hono = await Deno.readTextFile(`${dir}/node_modules/@hono/node-server/package.json`).then(
    (t) => (JSON.parse(t) as { version: string }).version,
    () => undefined,
  );
  if (installed !== PORTKEY_VERSION || hono !== PORTKEY_NODE_SERVER) {
    log(`installing @portkey-ai/gateway@${PORTKEY_VERSION} into ${dir}`);
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(
      `${dir}/package.json`,
      JSON.stringify(
        {
          name: "gateway-bench-portkey",
          private: true,
          dependencies: { "@portkey-ai/gateway": PORTKEY_VERSION },
          overrides: { "@hono/node-server": PORTKEY_NODE_SERVER },
        },
        null,
        2,
      ),
    );
    const out = await run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd: dir,
      timeoutMs: 300_000,
    });
    if (out.code !== 0) return { problem: `npm install failed: ${(out.stderr || out.stdout).slice(-300)}` };
  }
  return { entry, node };
}

/**
 * The `portkey` row: one Node process as its CLI starts it, sent to the mock by the `x-portkey-provider` and
 * `x-portkey-custom-host` headers on every request.
 */
export function portkeyTarget(portkey: PortkeyInstall, mock: Server): Target {
  return {
    key: "portkey",
    label: `Portkey gateway ${PORTKEY_VERSION} (npm, Node ${portkey.node ?? "?"}), 1 process`,
    notRun: portkey.problem,
    start: async () => {
      const port = freePort();
      const server = spawnServer("portkey", ["node", portkey.entry!, `--port=${port}`, "--headless"], port, {
        cwd: `${PEERS_DIR}/portkey-${PORTKEY_VERSION}`,
      });
      const client: Client = {
        headers: {
          "content-type": "application/json",
          authorization: "Bearer sk-bench",
          "x-portkey-provider": "openai",
          "x-portkey-custom-host": `${mock.base}/v1`,
        },
        model: "bench-model",
      };
      try {
        await waitReady(server, client);
      } catch (err) {
        await server.stop();
        throw err;
      }
      return { server, client };
    },
  };
}

/** Bifrost's npm package is a launcher that downloads the Go binary at first run; say why it cannot. */
export async function tryBifrost(): Promise<string> {
  const dir = `${PEERS_DIR}/bifrost`;
  await Deno.mkdir(dir, { recursive: true });
  const out = await run(["npx", "-y", `@maximhq/bifrost@${BIFROST_VERSION}`, "--help"], {
    cwd: dir,
    timeoutMs: 120_000,
  });
  const text = out.stderr + out.stdout;
  if (out.code === 0) return `runs (\`--help\` exit 0), not wired into this bench yet`;
  const host = /hostname: '([^']+)'/.exec(text)?.[1];
  return host
    ? `\`npx @maximhq/bifrost@${BIFROST_VERSION}\` installs, but its launcher downloads the binary from ${host} ` +
      `(no route from this machine: ${/code: '(\w+)'/.exec(text)?.[1] ?? "fetch failed"})`
    : `\`npx @maximhq/bifrost@${BIFROST_VERSION}\` failed: ${
      text.trim().split("\n").slice(-2).join(" ").slice(0, 200)
    }`;
}

/** LiteLLM's proxy is a Python package (PyPI); only the npm registry is reachable here. */
export async function tryLitellm(): Promise<string> {
  const out = await run(
    ["python3", "-m", "pip", "download", "--no-deps", "--dest", `${tmpDir()}/pip`, "litellm[proxy]"],
    { timeoutMs: 60_000 },
  );
  if (out.code === 0) return "downloadable from PyPI, but not wired into this bench";
  const reason = (out.stderr || out.stdout).trim().split("\n").filter((l) => /ERROR/.test(l)).pop() ??
    out.stderr.slice(-200);
  return `PyPI unreachable here (\`pip download litellm[proxy]\`: ${
    reason.replace(/^ERROR: /, "").slice(0, 160)
  })`;
}

/** The tried-only peers (`bifrost`, `litellm`) as "not run" rows, each with why (`notes`, by key). */
export function triedPeerTargets(notes: Record<string, string>): Target[] {
  return Object.entries(notes).map(([key, why]) => ({
    key,
    label: key === "bifrost" ? `Bifrost (npm @maximhq/bifrost@${BIFROST_VERSION})` : "LiteLLM proxy (PyPI)",
    notRun: why,
  }));
}

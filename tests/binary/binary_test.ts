/**
 * The gateway as a separate process, the way it ships:
 *
 * - `GATEWAY_BIN` (the single binary, `deno task compile:bun`): `--version`, `check` and `serve` with the
 *   embedded default config from an empty directory, `--config` / `--port`, graceful and forced shutdown.
 * - Bun from source (`bun main.ts serve`, Bun from npm): a chat request, a stream, and a client abort that
 *   must reach the upstream. Skipped, saying why, when Bun cannot be launched.
 *
 * @module
 */
import assert from "node:assert/strict";
import { countRows } from "../helpers/usage.ts";
import { resolve } from "node:path";
import { armGates, FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { backstop } from "../helpers/backstop.ts";

const RAW_BIN = Deno.env.get("GATEWAY_BIN");
/** Absolute, since the tests run it from other working directories. */
const BIN = RAW_BIN ? resolve(RAW_BIN) : undefined;
const BUN_VERSION = "1.4.5";
const ROOT = new URL("../..", import.meta.url).pathname;
const DEV_TOKEN = "gw-local-dev-token-change-me";

if (!BIN) {
  console.log(
    "binary tests skipped: GATEWAY_BIN is not set (`deno task compile:bun`, then GATEWAY_BIN=dist/gateway)",
  );
}

/** Runs a command to its end with a clean environment; returns its exit code and output. */
async function run(
  cmd: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
) {
  const out = await new Deno.Command(cmd, { args, clearEnv: true, env: options.env ?? {}, cwd: options.cwd })
    .output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

/** A gateway process serving on a loopback port. */
interface GatewayProcess {
  url: string;
  logs: Record<string, unknown>[];
  child: Deno.ChildProcess;
  /** Sends `signal` and resolves to the exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
}

/** Spawns a gateway and waits for its `listening` log line. */
async function spawnGateway(
  cmd: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): Promise<GatewayProcess> {
  const child = new Deno.Command(cmd, {
    args,
    cwd: options.cwd,
    env: options.env ?? {},
    clearEnv: true,
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const logs: Record<string, unknown>[] = [];
  const listening = Promise.withResolvers<string>();
  const pump = (async () => {
    let buffered = "";
    for await (const text of child.stdout.pipeThrough(new TextDecoderStream())) {
      buffered += text;
      let nl;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (!line.trim()) continue;
        const record = JSON.parse(line);
        logs.push(record);
        if (record.msg === "listening") listening.resolve(String(record.url));
      }
    }
    listening.reject(new Error(`${cmd} exited before listening`));
  })();
  const timer = setTimeout(() => listening.reject(new Error(`${cmd} did not listen within 15 s`)), 15_000);
  try {
    const url = await listening.promise;
    return {
      url,
      logs,
      child,
      async stop(signal = "SIGTERM") {
        try {
          child.kill(signal);
        } catch { /* already gone */ }
        const status = await child.status;
        await pump;
        return status.code;
      },
    };
  } catch (err) {
    child.kill("SIGKILL");
    await child.status;
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

function chat(url: string, token: string, body: Record<string, unknown>, signal?: AbortSignal) {
  return fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: "Hello, binary!" }], ...body }),
    signal,
  });
}

/** Reads SSE `data:` payloads from a stream until it ends. */
async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buffered = "";
  // A TextDecoder over the chunks, not `pipeThrough(new TextDecoderStream())`: the two type libraries a check
  // may load (Deno's, and Node's for `node:` imports) disagree on what that stream's writable side takes.
  const decoder = new TextDecoder();
  for await (const bytes of body) {
    buffered += decoder.decode(bytes, { stream: true });
    let end;
    while ((end = buffered.indexOf("\n\n")) >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      for (const line of event.split("\n")) if (line.startsWith("data: ")) yield line.slice(6);
    }
  }
}

/** Waits for a log line matching `match` (they arrive over a pipe); fails saying `what` at the backstop. */
function waitForLog(gw: GatewayProcess, match: (l: Record<string, unknown>) => boolean, what: string) {
  return backstop(
    (async () => {
      while (!gw.logs.some(match)) await new Promise((r) => setTimeout(r, 10));
    })(),
    what,
  );
}

/** Ends a gateway a failed test left running; nothing when it has exited. */
function killLeftover(gw: GatewayProcess | undefined): void {
  try {
    gw?.child.kill("SIGKILL");
  } catch { /* it has exited */ }
}

function fakeConfig(fake: FakeUpstream, server = ""): string {
  return `${server}
providers:
  fake: { type: openai, base_url: "${fake.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-gated: { type: chat, targets: [ { provider: fake, model: gpt-gated } ] }
  chat-hang: { type: chat, targets: [ { provider: fake, model: gpt-hang, timeouts: { idle: 10m } } ] }
  chat-ok: { type: chat, targets: [ { provider: fake, model: gpt-ok } ] }
usage: { sqlite: none }
${TEST_TOKENS_YAML}`;
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

const binary = { ignore: !BIN, sanitizeResources: false, sanitizeOps: false };

Deno.test({
  name: "binary: --version and `version` print the version and the runtime",
  ...binary,
  async fn() {
    for (const args of [["--version"], ["version"]]) {
      const { code, stdout } = await run(BIN!, args);
      assert.equal(code, 0);
      assert.match(stdout, /^gateway \d+\.\d+\.\d+ \((bun|deno) \d+\.\d+\.\d+\)\n$/);
    }
  },
});

Deno.test({
  name: "binary: `check` from an empty directory validates the embedded default config",
  ...binary,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const { code, stdout } = await run(BIN!, ["check"], { cwd: dir });
      assert.equal(code, 0);
      assert.match(stdout, /^Config <default> is valid: 1 providers, 3 models, 1 tokens\.\n$/);
      const bad = await run(BIN!, ["check", "--config", `${dir}/missing.yaml`], { cwd: dir });
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /cannot read config file \(file not found\)/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "binary: `prices --model ALIAS` from an empty directory shows the embedded default config's alias",
  ...binary,
  async fn() {
    // The same config as `check` and `serve` read (docs/pricing.md): the compiled-in one, with its aliases.
    const dir = await Deno.makeTempDir();
    try {
      const { code, stdout, stderr } = await run(BIN!, ["prices", "--model", "chat-default"], { cwd: dir });
      assert.equal(code, 0, stderr);
      assert.match(stdout, /^alias chat-default: 1 targets$/m);
      assert.match(stdout, /^local\s+builtin\s+echo\s/m);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "binary: the working directory's .env and bunfig.toml are not read: its environment is the process's",
  ...binary,
  async fn() {
    // A single-file Bun executable loads ./.env and ./bunfig.toml (with `preload` code) at start unless built
    // not to; the Docker image's working directory is its writable data volume.
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(
        `${dir}/gateway.yaml`,
        'providers:\n  up: { type: openai, base_url: "http://127.0.0.1:9/v1", api_key: "${UPSTREAM_KEY}" }\n' +
          "models:\n  m: { type: chat, targets: [ { provider: up, model: x } ] }\n",
      );
      await Deno.writeTextFile(`${dir}/.env`, "UPSTREAM_KEY=sk-from-dotenv-0123456789\n");
      await Deno.writeTextFile(
        `${dir}/preload.js`,
        `require("node:fs").writeFileSync("${dir}/PRELOADED", "yes");\n`,
      );
      await Deno.writeTextFile(`${dir}/bunfig.toml`, 'preload = ["./preload.js"]\n');
      const { code, stderr } = await run(BIN!, ["check", "--config", "gateway.yaml"], { cwd: dir });
      assert.equal(code, 1, stderr);
      assert.match(stderr, /environment variable UPSTREAM_KEY is not set/);
      await assert.rejects(Deno.stat(`${dir}/PRELOADED`), Deno.errors.NotFound, "bunfig.toml's preload ran");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "binary: `serve` with no config file serves the embedded default, records usage, exits 0 on SIGTERM",
  ...binary,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const gw = await spawnGateway(BIN!, ["serve", "--port", "0"], { cwd: dir });
      assert.equal(gw.logs[0].config, "<default>");
      const res = await chat(gw.url, DEV_TOKEN, { model: "chat-default" });
      assert.equal(res.status, 200);
      assert.equal((await res.json()).choices[0].message.content, "Hello, binary!");
      const embedded = await fetch(`${gw.url}/v1/embeddings`, {
        method: "POST",
        headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "embed-default", input: "hi" }),
      });
      assert.equal((await embedded.json()).data[0].embedding.length, 256);
      assert.equal(await gw.stop("SIGTERM"), 0);
      assert.ok(gw.logs.some((l) => l.msg === "shutdown" && l.signal === "SIGTERM"));
      // The default config keeps usage in ./data/usage.sqlite, written by the store's worker thread (a second
      // entry point bundled into the binary); shutdown flushed both records.
      assert.deepEqual(countRows(`${dir}/data/usage.sqlite`).rows, 2);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "binary: SIGHUP with the embedded default config skips the reload and keeps serving; SIGTERM still drains",
  ...binary,
  async fn() {
    // Unhandled, SIGHUP's default action ended the process at once (exit 129): no drain, usage records lost.
    const dir = await Deno.makeTempDir();
    try {
      const gw = await spawnGateway(BIN!, ["serve", "--port", "0"], { cwd: dir });
      for (let i = 0; i < 3; i++) {
        assert.equal((await chat(gw.url, DEV_TOKEN, { model: "chat-default" })).status, 200);
      }
      gw.child.kill("SIGHUP");
      await waitForLog(
        gw,
        (l) => l.msg === "config_reload_skipped" && l.trigger === "signal",
        "no skipped reload",
      );
      assert.equal((await chat(gw.url, DEV_TOKEN, { model: "chat-default" })).status, 200);
      assert.equal(await gw.stop("SIGTERM"), 0);
      assert.deepEqual(countRows(`${dir}/data/usage.sqlite`).rows, 4);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "binary: --config picks the file, --port overrides server.port, SIGHUP reloads, GATEWAY_CONFIG works",
  ...binary,
  async fn() {
    const fake = startFakeOpenAI();
    const dir = await Deno.makeTempDir();
    try {
      const file = `${dir}/gateway.yaml`;
      await Deno.writeTextFile(file, fakeConfig(fake, "server: { port: 1 }"));
      const port = freePort();
      const gw = await spawnGateway(BIN!, ["serve", "--config", file, "--port", String(port)], { cwd: dir });
      assert.equal(gw.url, `http://127.0.0.1:${port}`);
      assert.equal(gw.logs[0].config, file);
      const res = await chat(gw.url, TEST_TOKEN, { model: "chat-ok" });
      assert.equal(res.status, 200);
      assert.equal((await res.json()).model, "chat-ok");
      // SIGHUP re-reads the file (an unchanged file is reloaded all the same).
      gw.child.kill("SIGHUP");
      await waitForLog(
        gw,
        (l) => l.msg === "config_reloaded" && l.trigger === "signal",
        "no reload on SIGHUP",
      );
      assert.equal(await gw.stop(), 0);

      const viaEnv = await run(BIN!, ["check"], { cwd: dir, env: { GATEWAY_CONFIG: file } });
      assert.equal(viaEnv.code, 0);
      assert.match(viaEnv.stdout, new RegExp(`^Config ${file} is valid`));
    } finally {
      await fake.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "binary: a reload validates in the bundled config worker; an alias cycle is refused, serving goes on",
  ...binary,
  async fn() {
    const fake = startFakeOpenAI();
    const dir = await Deno.makeTempDir();
    try {
      const file = `${dir}/gateway.yaml`;
      await Deno.writeTextFile(file, fakeConfig(fake));
      const gw = await spawnGateway(BIN!, ["serve", "--config", file, "--port", "0"], { cwd: dir });
      const reloads = (msg: string) => gw.logs.filter((l) => l.msg === msg).length;
      // A valid change: a new alias appears.
      await Deno.writeTextFile(
        file,
        fakeConfig(fake).replace(
          "models:",
          "models:\n  chat-new: { type: chat, targets: [ { provider: fake, model: gpt-ok } ] }",
        ),
      );
      gw.child.kill("SIGHUP");
      await waitForLog(gw, (l) => l.msg === "config_reloaded", "no reload");
      assert.equal((await chat(gw.url, TEST_TOKEN, { model: "chat-new" })).status, 200);
      // A hostile one: refused with its path, the previous config keeps serving.
      await Deno.writeTextFile(file, `${fakeConfig(fake)}\nrouting: &r { x: [*r] }\n`);
      gw.child.kill("SIGHUP");
      await waitForLog(gw, (l) => l.msg === "config_reload_failed", "no failed reload");
      const failed = gw.logs.find((l) => l.msg === "config_reload_failed")!;
      assert.deepEqual((failed.issues as { path: string }[]).map((i) => i.path), ["routing.x.0"]);
      assert.equal((await chat(gw.url, TEST_TOKEN, { model: "chat-new" })).status, 200);
      assert.equal(reloads("config_reloaded"), 1);
      assert.ok(!gw.logs.some((l) => l.msg === "config_worker_unavailable"), "validated in the worker");
      assert.equal(await gw.stop(), 0);
    } finally {
      await fake.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "binary: SIGTERM stops accepting, lets a stream in flight finish, then exits 0",
  ...binary,
  async fn() {
    const fake = startFakeOpenAI();
    const dir = await Deno.makeTempDir();
    let gw: GatewayProcess | undefined;
    try {
      // Ten minutes of grace: the exit can only follow the stream's end, never the grace period's.
      await Deno.writeTextFile(`${dir}/gateway.yaml`, fakeConfig(fake, "server: { shutdown_timeout: 10m }"));
      gw = await spawnGateway(BIN!, ["serve", "--config", `${dir}/gateway.yaml`, "--port", "0"]);
      armGates(fake, 3);
      fake.gates[0].resolve();
      const res = await chat(gw.url, TEST_TOKEN, { model: "chat-gated", stream: true });
      const events = sseData(res.body!);
      assert.match((await events.next()).value!, /"role":"assistant"/);
      assert.match((await events.next()).value!, /c0 /);
      const exited = gw.stop("SIGTERM");
      await waitForLog(gw, (l) => l.msg === "shutdown", "no shutdown log");
      await assert.rejects(fetch(`${gw.url}/healthz`), "a new connection is refused during shutdown");
      fake.gates[1].resolve();
      fake.gates[2].resolve();
      const rest: string[] = [];
      for await (const data of events) rest.push(data);
      assert.equal(rest.at(-1), "[DONE]");
      assert.ok(rest.some((d) => d.includes("c2 ")));
      assert.equal(await backstop(exited, "the exit once the stream in flight finished"), 0);
    } finally {
      killLeftover(gw);
      await fake.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "binary: a stream still open after shutdown_timeout is cut, its upstream aborted, exit 0",
  ...binary,
  async fn() {
    const fake = startFakeOpenAI();
    const dir = await Deno.makeTempDir();
    let gw: GatewayProcess | undefined;
    try {
      await Deno.writeTextFile(
        `${dir}/gateway.yaml`,
        fakeConfig(fake, "server: { shutdown_timeout: 300ms }"),
      );
      gw = await spawnGateway(BIN!, ["serve", "--config", `${dir}/gateway.yaml`, "--port", "0"]);
      const res = await chat(gw.url, TEST_TOKEN, { model: "chat-hang", stream: true });
      const events = sseData(res.body!);
      await events.next();
      assert.match((await events.next()).value!, /waiting/);
      // The upstream is silent from here on and chat-hang's idle timeout is ten minutes: only the end of the
      // 300 ms grace period can end the stream, and the log line of the cut says it was that one.
      assert.equal(await backstop(gw.stop("SIGTERM"), "the exit after the grace period"), 0);
      const cut = gw.logs.find((l) => l.msg === "shutdown_cut_requests");
      assert.deepEqual([cut?.count, cut?.grace_ms], [1, 300], JSON.stringify(cut));
      await backstop(fake.aborted.promise, "the upstream request of the cut stream aborted");
      const rest: string[] = [];
      try {
        for await (const data of events) rest.push(data);
      } catch {
        // The connection was closed under the stream: that is the cut.
      }
      assert.ok(!rest.includes("[DONE]"));
    } finally {
      killLeftover(gw);
      await fake.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/** Bun from npm (`npx -y bun@…`): the path of its executable, or why it cannot be used. */
async function findBun(): Promise<{ path: string } | { why: string }> {
  try {
    const out = await new Deno.Command("npx", {
      args: ["-y", `bun@${BUN_VERSION}`, "-e", "process.stdout.write(process.execPath)"],
      stdout: "piped",
      stderr: "null",
      signal: AbortSignal.timeout(60_000),
    }).output();
    const path = new TextDecoder().decode(out.stdout).trim();
    if (out.code !== 0 || !path) return { why: `npx -y bun@${BUN_VERSION} exited with ${out.code}` };
    // Bun resolves deno.json's npm imports through package.json + bun.lock in node_modules/.
    try {
      await Deno.stat(`${ROOT}node_modules/zod/package.json`);
    } catch {
      const install = await new Deno.Command(path, {
        args: ["install", "--frozen-lockfile"],
        cwd: ROOT,
        stdout: "null",
        stderr: "inherit",
      }).output();
      if (install.code !== 0) return { why: "`bun install --frozen-lockfile` failed" };
    }
    return { path };
  } catch (err) {
    return { why: `cannot run npx: ${err instanceof Error ? err.message : String(err)}` };
  }
}

const bun = await findBun();
if ("why" in bun) console.log(`bun source test skipped: ${bun.why}`);

Deno.test({
  name: "bun main.ts: a chat request, a stream, and a client abort that aborts the upstream",
  ignore: "why" in bun,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const fake = startFakeOpenAI();
    const dir = await Deno.makeTempDir();
    let gw: GatewayProcess | undefined;
    try {
      await Deno.writeTextFile(`${dir}/gateway.yaml`, fakeConfig(fake));
      const bunPath = (bun as { path: string }).path;
      gw = await spawnGateway(bunPath, [
        `${ROOT}main.ts`,
        "serve",
        "--config",
        `${dir}/gateway.yaml`,
        "--port",
        "0",
      ], {
        cwd: dir,
      });
      assert.match(String(gw.logs[0].runtime), /^bun /);
      const res = await chat(gw.url, TEST_TOKEN, { model: "chat-ok" });
      assert.equal(res.status, 200);
      assert.equal((await res.json()).choices[0].message.content, "Hello from the fake upstream!");

      const abort = new AbortController();
      const stream = await chat(gw.url, TEST_TOKEN, { model: "chat-hang", stream: true }, abort.signal);
      const events = sseData(stream.body!);
      await events.next();
      assert.match((await events.next()).value!, /waiting/);
      // The upstream is silent from here on and chat-hang's idle timeout is ten minutes: nothing but the client's
      // abort can end the upstream request within the backstop.
      abort.abort();
      await backstop(fake.aborted.promise, "the upstream request aborted with the client's");
      assert.equal(await gw.stop("SIGTERM"), 0);
      gw = undefined;
    } finally {
      if (gw) await gw.stop("SIGKILL");
      await fake.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

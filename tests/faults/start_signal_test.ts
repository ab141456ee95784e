/**
 * SIGTERM or SIGINT while `serve` starts: the handler is installed before anything listens, so the signal is
 * remembered and the usual drain runs once the start resolves. Before, it was installed only after the start,
 * and a signal in between met the runtime's default action: the process ended at once (exit 143), while with
 * `--workers N` worker 0 already served, its streams cut and their usage records lost.
 *
 * - In-process (a runtime whose `serve` the test holds): the signal arrives while the server is starting, every
 *   time. Skipped with `GATEWAY_BIN`: it runs no binary.
 * - A process (`deno run main.ts`, or the single binary with `GATEWAY_BIN`) with `--workers 2`: SIGTERM as soon
 *   as worker 0 serves a stream, which is then let finish; the process exits 0 with the stream's record
 *   written. Worker 1 is most often still starting then (the test cannot hold it), so this one shows the race
 *   most of the time and the outcome after it every time.
 *
 * @module
 */
import assert from "node:assert/strict";
import { resolve } from "node:path";
import { runCli } from "../../lib/cli.ts";
import { denoRuntime } from "../../lib/runtime/deno.ts";
import type { Runtime } from "../../lib/runtime/types.ts";
import { armGates, FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { countRows } from "../helpers/usage.ts";

const BIN = Deno.env.get("GATEWAY_BIN");
const MAIN = new URL("../../main.ts", import.meta.url).pathname;

Deno.test({
  name: "serve: SIGTERM while the server is starting is remembered: it starts, drains and exits 0",
  ignore: BIN !== undefined,
  async fn() {
    const dir = await Deno.makeTempDir();
    const file = `${dir}/gateway.yaml`;
    await Deno.writeTextFile(
      file,
      `providers: { local: { type: builtin } }
models: { chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] } }
usage: { sqlite: none }
${TEST_TOKENS_YAML}`,
    );
    const logs: Record<string, unknown>[] = [];
    const shutdownHandlers: ((signal: string) => void)[] = [];
    const starting = Promise.withResolvers<void>();
    const held = Promise.withResolvers<void>();
    const runtime: Runtime = {
      ...denoRuntime,
      env: () => ({}),
      // The listen call is held until the test has sent its signal.
      serve: async (options) => {
        starting.resolve();
        await held.promise;
        return await denoRuntime.serve(options);
      },
      onShutdownSignal: (handler) => shutdownHandlers.push(handler),
      onReloadSignal: () => {},
      writeStdout: (text) => {
        for (const line of text.split("\n")) if (line.trim()) logs.push(JSON.parse(line));
      },
      writeStderr: () => {},
    };
    const exit = runCli(runtime, ["serve", "--config", file, "--port", "0", "--host", "127.0.0.1"]);
    try {
      await starting.promise;
      assert.equal(
        shutdownHandlers.length,
        1,
        "no handler while starting: SIGTERM would end the process at once",
      );
      shutdownHandlers[0]("SIGTERM");
      held.resolve();
      assert.equal(await exit, 0);
      const msgs = logs.map((l) => l.msg);
      assert.deepEqual(msgs.filter((m) => m === "shutdown" || m === "listening"), ["shutdown", "listening"]);
      // It stopped: its port takes no more connections.
      const url = String(logs.find((l) => l.msg === "listening")!.url);
      await assert.rejects(fetch(`${url}/healthz`));
    } finally {
      held.resolve();
      // Before the fix the handler comes once the start resolves: stop the server through it.
      while (shutdownHandlers.length === 0) await new Promise((r) => setTimeout(r, 10));
      shutdownHandlers[0]("SIGTERM");
      await exit;
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/**
 * SIGHUP while `serve` starts (`workers` 1 and 2): sent at the first wait of the start, right after the shutdown
 * handler is installed. A handler must be there (the default action ends the process, exit 129: with
 * `--workers N` worker 0 already serves then), and the reload runs once, after the start (`listening`).
 */
async function sighupWhileStarting(workers: number): Promise<void> {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(
    file,
    `providers: { local: { type: builtin } }
models: { chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] } }
usage: { sqlite: none }
${TEST_TOKENS_YAML}`,
  );
  const logs: Record<string, unknown>[] = [];
  const shutdownHandlers: ((signal: string) => void)[] = [];
  const reloadHandlers: (() => void)[] = [];
  const signalled = Promise.withResolvers<boolean>();
  const runtime: Runtime = {
    ...denoRuntime,
    env: () => ({}),
    onShutdownSignal: (handler) => {
      shutdownHandlers.push(handler);
      // The start begins right after this: the signal comes at its first wait.
      queueMicrotask(() => {
        signalled.resolve(reloadHandlers.length > 0);
        for (const handler of reloadHandlers) handler();
      });
    },
    onReloadSignal: (handler) => reloadHandlers.push(handler),
    writeStdout: (text) => {
      for (const line of text.split("\n")) if (line.trim()) logs.push(JSON.parse(line));
    },
    writeStderr: () => {},
  };
  const args = [
    "serve",
    "--config",
    file,
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--workers",
    String(workers),
  ];
  const exit = runCli(runtime, args);
  try {
    assert.equal(
      await signalled.promise,
      true,
      "no handler while starting: SIGHUP would end the process at once",
    );
    // How long the start takes is not what is tested (workers each load the gateway's modules: seconds alone,
    // over 30 s on a loaded 2-core machine); the reload once it listens is.
    const waitFor = async (what: string, seen: () => boolean, ms: number) => {
      const deadline = Date.now() + ms;
      while (!seen()) {
        assert.ok(Date.now() < deadline, what);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    await waitFor("the gateway never listened", () => logs.some((l) => l.msg === "listening"), 180_000);
    await waitFor(
      "no reload after the start",
      () => logs.some((l) => l.msg === "config_reloaded" || l.msg === "config_reload_failed"),
      30_000,
    );
    const msgs = logs.map((l) => l.msg).filter((m) =>
      m === "listening" || String(m).startsWith("config_reload")
    );
    assert.deepEqual(msgs, ["listening", "config_reloaded"]);
    assert.equal(logs.find((l) => l.msg === "config_reloaded")!.trigger, "signal");
  } finally {
    while (shutdownHandlers.length === 0) await new Promise((r) => setTimeout(r, 10));
    shutdownHandlers[0]("SIGTERM");
    assert.equal(await exit, 0);
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  name: "serve: SIGHUP while the server is starting is held, and the reload runs once it listens",
  ignore: BIN !== undefined,
  fn: () => sighupWhileStarting(1),
});

Deno.test({
  name: "serve --workers 2: SIGHUP while the workers start is held, and the reload runs once they all listen",
  ignore: BIN !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () => sighupWhileStarting(2),
});

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

Deno.test({
  name:
    "serve --workers 2: SIGTERM once worker 0 serves (the others maybe still starting) drains its stream, exit 0",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const fake = startFakeOpenAI();
    const dir = await Deno.makeTempDir();
    const file = `${dir}/gateway.yaml`;
    await Deno.writeTextFile(
      file,
      `server: { shutdown_timeout: 20s }
providers:
  fake: { type: openai, base_url: "${fake.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-gated: { type: chat, targets: [ { provider: fake, model: gpt-gated } ] }
usage: { sqlite: "${dir}/usage.sqlite", flush_interval: 20ms }
${TEST_TOKENS_YAML}`,
    );
    const [cmd, pre] = BIN ? [resolve(BIN), []] : [Deno.execPath(), ["run", "--allow-all", MAIN]];
    const child = new Deno.Command(cmd, {
      args: [...pre, "serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--workers", "2"],
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const logs: Record<string, unknown>[] = [];
    const firstWorker = Promise.withResolvers<string>();
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
          if (record.msg === "worker_listening") firstWorker.resolve(String(record.url));
        }
      }
      firstWorker.reject(new Error("the gateway exited before a worker listened"));
    })();
    let exited = false;
    try {
      const url = await firstWorker.promise;
      armGates(fake, 3);
      fake.gates[0].resolve();
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "chat-gated",
          stream: true,
          messages: [{ role: "user", content: "hi" }],
        }),
      });
      assert.equal(res.status, 200);
      const events = sseData(res.body!);
      assert.match((await events.next()).value!, /"role":"assistant"/);
      assert.match((await events.next()).value!, /c0 /);
      const startedWhenSignalled = logs.some((l) => l.msg === "listening");
      child.kill("SIGTERM");
      fake.gates[1].resolve();
      fake.gates[2].resolve();
      const rest: string[] = [];
      try {
        for await (const data of events) rest.push(data);
      } catch {
        // The connection closed under the stream: the process was ended, not drained.
      }
      const status = await child.status;
      exited = true;
      await pump;
      assert.equal(status.code, 0, `exit ${status.code} (signal ${status.signal})`);
      assert.equal(rest.at(-1), "[DONE]", "the stream was cut");
      assert.ok(logs.some((l) => l.msg === "shutdown" && l.signal === "SIGTERM"));
      assert.equal(countRows(`${dir}/usage.sqlite`).rows, 1);
      if (startedWhenSignalled) {
        console.log("every worker listened before the signal: the start was not raced");
      }
    } finally {
      if (!exited) {
        try {
          child.kill("SIGKILL");
        } catch {
          // It has exited already.
        }
        await child.status;
        await pump.catch(() => {});
      }
      await fake.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

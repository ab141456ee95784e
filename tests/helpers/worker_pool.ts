/**
 * A `serve --workers N` pool whose primary runs in the test's own process (so a test can end a worker at once,
 * as a crash would, and count what the primary knows), its workers real threads serving a real socket. Shared by
 * the tests of tests/workers/ that need the primary at hand; those that run the gateway as a process of its own
 * use `replica.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { validateConfigFile } from "../../lib/config/config_worker_client.ts";
import { loadConfigFile } from "../../lib/config/load.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { denoRuntime } from "../../lib/runtime/deno.ts";
import type { Runtime } from "../../lib/runtime/types.ts";
import type { PoolTiming } from "../../lib/workers/pool_timing.ts";
import { startWorkers, type WorkersHandle } from "../../lib/workers/primary.ts";

/** A pool serving in this process: its handle, every log line of the primary and the workers, and its URL. */
export interface InProcessPool {
  readonly gw: WorkersHandle;
  readonly logs: Record<string, unknown>[];
  readonly url: string;
}

/** Options of {@linkcode startPool}. */
export interface PoolOptions {
  /** Reload when `file` changes (a reload asked otherwise reads the file all the same). */
  readonly watch?: boolean;
  /** How many workers (default 2). */
  readonly workers?: number;
  /** A worker module in place of `worker_main.ts` (a fixture injecting a fault). */
  readonly workerUrl?: URL;
  /** The primary's bounds on its workers in place of the gateway's (a short `answerMs` for a worker kept silent). */
  readonly timing?: Partial<PoolTiming>;
}

/** Starts a primary and its workers in this process, serving `file` on a free port of 127.0.0.1. */
export async function startPool(file: string, options: PoolOptions = {}): Promise<InProcessPool> {
  const loaded = await loadConfigFile(file, {});
  const validated = await validateConfigFile(file, {});
  assert.ok(loaded.ok && validated.ok, JSON.stringify(loaded));
  const logs: Record<string, unknown>[] = [];
  const runtime: Runtime = {
    ...denoRuntime,
    env: () => ({}),
    onReloadSignal: () => {},
    writeStdout: (text) => {
      for (const line of text.split("\n")) if (line.trim()) logs.push(JSON.parse(line));
    },
  };
  const state = { config: loaded.config, providers: createProviders(loaded.config.providers, {}) };
  const gw = await startWorkers(runtime, state, validated.validated, {
    port: 0,
    host: "127.0.0.1",
    configPath: options.watch ? file : undefined,
    unbufferedLogs: true,
    workers: options.workers ?? 2,
    workerUrl: options.workerUrl,
    timing: options.timing,
  });
  return { gw, logs, url: `http://127.0.0.1:${gw.server.port}` };
}

/** Waits until `cond` holds, looking every 20 ms; fails naming `what` after 15 s. */
export async function until(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + 15_000;
  while (!await cond()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The number of a worker holding some of `held` requests, once the primary knows where each is: the kernel
 * spreads connections over the workers' sockets by a hash, so every one may land on the same worker.
 */
export async function workerHolding(gw: WorkersHandle, held: number): Promise<number> {
  await until(() => gw.open(0) + gw.open(1) === held, `the primary knows the ${held} held requests`);
  return gw.open(0) > 0 ? 0 : 1;
}

/** Which worker answered: the request id's prefix (16 random hex digits per serving thread). */
export function workerOf(requestId: string): string {
  return requestId.slice(0, 20);
}

/**
 * A config file in a fresh directory: one alias `chat-gated` on the gated upstream at `baseURL`
 * (gated_upstream.ts), one token `name` with `secret` (and `extra` appended to its entry), usage in SQLite there.
 */
export async function gatedConfig(
  baseURL: string,
  token: { name: string; secret: string; extra?: string },
): Promise<{ dir: string; file: string }> {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(
    file,
    `
usage: { sqlite: "${dir}/usage.sqlite", flush_interval: 20ms }
providers:
  up: { type: openai, base_url: "${baseURL}", api_key: sk-gated-0123456789 }
models:
  chat-gated: { type: chat, targets: [ { provider: up, model: gated, retries: 0 } ] }
tokens:
  - { name: ${token.name}, sha256: ${hashToken(token.secret)}, models: ["*"]${token.extra ?? ""} }
`,
  );
  return { dir, file };
}

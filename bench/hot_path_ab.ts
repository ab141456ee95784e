/**
 * A paired, in-process A/B of the gateway's own cost per request in two source trees:
 *
 *   deno run -A --config <a tree's deno.json> bench/hot_path_ab.ts <tree A> <tree B> [rounds=12] [batch=2000]
 *
 * Each tree's `lib/config/load.ts`, `lib/providers/registry.ts` and `lib/serve.ts` are imported and a gateway
 * is started from them exactly as `bench/hot_path_bench.ts` does (its `bench/config.yaml`, a fake runtime
 * that captures the handler, `fetch` answering the same completion from memory). Both are warmed, then
 * batches of `batch` requests alternate between A and B, the order flipped every round, so drift on a shared
 * machine (other work, CPU frequency, GC of the whole process) falls on both alike; separate runs of
 * `deno bench` on a noisy box differ by more than most single changes. Printed: each round's µs/request, the
 * median of each tree, and B/A (of the medians, and the median of the per-round ratios).
 *
 * Both gateways live in one process: each one's background work (usage flushes, log writes) can land in the
 * other's batch, equally often both ways. The bare specifiers (`yaml`, `zod`, …) of both trees resolve through
 * the one `--config` given, so compare trees with the same dependencies.
 *
 * @module
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { capturingRuntime } from "./harness/capturing_runtime.ts";
import type { Runtime } from "../lib/runtime/types.ts";

const TOKEN = "gw-bench-token-0123456789abcdef";
const CHAT_BODY = JSON.stringify({
  model: "bench-chat",
  messages: [{ role: "user", content: "Hello, gateway! This is a benchmark request." }],
});
const COMPLETION = JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: 1_700_000_000,
  model: "bench-model",
  choices: [{
    index: 0,
    message: { role: "assistant", content: "Hello! How can I help you today?" },
    finish_reason: "stop",
  }],
  usage: { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 },
});
const WARMUP = 2_000;

/** What is used of a tree's modules; typed here because a tree's own types are not known statically. */
interface Tree {
  parseConfigText(
    text: string,
    options: { source: string; env: Record<string, string> },
  ): { ok: true; config: { providers: unknown } } | { ok: false; issues: unknown };
  createProviders(providers: unknown, env: Record<string, string>): unknown;
  startServer(runtime: Runtime, state: { config: unknown; providers: unknown }): Promise<unknown>;
}

/** A started gateway: one request through its handler, and cleanup. */
interface Gateway {
  label: string;
  one(): Promise<void>;
  dataDir: string;
}

// The upstream answers from memory: what is measured is the gateway, not the loopback network.
globalThis.fetch = (_input: RequestInfo | URL, init?: RequestInit) => {
  init?.body; // a real fetch reads the body; keep the reference so it is not optimised away
  return Promise.resolve(new Response(COMPLETION, { headers: { "content-type": "application/json" } }));
};

/** Starts `dir`'s gateway the way bench/hot_path_bench.ts starts this tree's. */
async function startTree(dir: string): Promise<Gateway> {
  const root = pathToFileURL(resolve(dir) + "/");
  const [load, registry, serve] = await Promise.all([
    import(new URL("lib/config/load.ts", root).href),
    import(new URL("lib/providers/registry.ts", root).href),
    import(new URL("lib/serve.ts", root).href),
  ]);
  const tree: Tree = {
    parseConfigText: load.parseConfigText,
    createProviders: registry.createProviders,
    startServer: serve.startServer,
  };
  const dataDir = await Deno.makeTempDir({ prefix: "gateway-hot-path-ab-" });
  const env = { BENCH_UPSTREAM_URL: "http://upstream.invalid", BENCH_DATA_DIR: dataDir, BENCH_TOKEN: TOKEN };
  const source = new URL("bench/config.yaml", root);
  const loaded = tree.parseConfigText(await Deno.readTextFile(source), { source: source.pathname, env });
  if (!loaded.ok) throw new Error(`${source.pathname}: ${JSON.stringify(loaded.issues)}`);

  const captured = capturingRuntime(env);
  const runtime = captured.runtime;
  await tree.startServer(runtime, {
    config: loaded.config,
    providers: tree.createProviders(loaded.config.providers, env),
  });
  const gateway = captured.handler();
  return {
    label: dir,
    dataDir,
    async one() {
      const response = await gateway(
        new Request("http://gateway.test/v1/chat/completions", {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
          body: CHAT_BODY,
        }),
      );
      if (response.status !== 200) {
        throw new Error(`${dir}: status ${response.status}: ${await response.text()}`);
      }
      await response.text();
    },
  };
}

/** µs per request over `n` sequential requests. */
async function batchOf(gateway: Gateway, n: number): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < n; i++) await gateway.one();
  return ((performance.now() - start) / n) * 1000;
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

if (import.meta.main) {
  const [aDir, bDir, roundsArg = "12", batchArg = "2000"] = Deno.args;
  const rounds = Number(roundsArg);
  const batch = Number(batchArg);
  if (!aDir || !bDir || !(rounds > 0) || !(batch > 0)) {
    console.error(
      "usage: deno run -A --config <deno.json> bench/hot_path_ab.ts <tree A> <tree B> [rounds] [batch]",
    );
    Deno.exit(2);
  }
  const a = await startTree(aDir);
  const b = await startTree(bDir);
  // Warm both, interleaved, until the JIT has settled on both paths.
  for (let i = 0; i < 2; i++) {
    await batchOf(a, WARMUP / 2);
    await batchOf(b, WARMUP / 2);
  }
  const ra: number[] = [];
  const rb: number[] = [];
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      ra.push(await batchOf(a, batch));
      rb.push(await batchOf(b, batch));
    } else {
      rb.push(await batchOf(b, batch));
      ra.push(await batchOf(a, batch));
    }
  }
  const row = (label: string, xs: number[]) =>
    `${label}: median ${median(xs).toFixed(2)} µs/request  [${xs.map((x) => x.toFixed(1)).join(" ")}]`;
  console.log(`${rounds} rounds × ${batch} requests each, order flipped every round`);
  console.log(row(`A ${a.label}`, ra));
  console.log(row(`B ${b.label}`, rb));
  // The per-round ratio pairs each B batch with the A batch beside it in time, so slow drift cancels out.
  const paired = median(rb.map((x, i) => x / ra[i]));
  console.log(
    `B/A: ${(median(rb) / median(ra)).toFixed(3)} (medians), ${paired.toFixed(3)} (median per-round ratio)`,
  );
  for (const g of [a, b]) await Deno.remove(g.dataDir, { recursive: true }).catch(() => {});
  // The gateways' usage workers and timers would keep the process alive; what was measured is printed.
  Deno.exit(0);
}

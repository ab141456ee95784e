/**
 * What the cross-gateway benchmark's modules share: where things are, the pinned versions of the peers, the
 * mock's shape, the plan of one run (built from the flags by bench/cross_gateway.ts), the run's temp dir and
 * the log line. Importing it has no side effects: the temp dir is made when first asked for (the entry asks
 * at start-up), so a test may import any module of bench/cross_gateway/ without creating one.
 *
 * @module
 */

/** bench/, from this file's place in bench/cross_gateway/. */
export const BENCH_DIR = decodeURIComponent(new URL("..", import.meta.url).pathname).replace(/\/$/, "");
/** The repository (the gateway under test): servers run here, and a JSON written inside it is formatted. */
export const ROOT = decodeURIComponent(new URL("../..", import.meta.url).pathname).replace(/\/$/, "");
/** Read once: it sizes `--workers` by default and turns machine-wide CPU time into wall time. */
export const CPUS = navigator.hardwareConcurrency;
export const BUN_VERSION = "1.4.5";
export const PORTKEY_VERSION = "1.15.2";
/**
 * Portkey 1.15.2 with the newest `@hono/node-server` 1.x (1.19.x, and 1.14.2 too) fails every streamed chat
 * completion on Node with `TypeError: immutable` (its response headers are the upstream fetch's, which it then
 * appends to; Portkey-AI/gateway issues 1389 and 1550); 1.13.8, within its `^1.3.3` range, streams.
 */
export const PORTKEY_NODE_SERVER = "1.13.8";
export const BIFROST_VERSION = "1.6.3";
/** Outside the repo and outside the run's temp dir, so later runs reuse the npm installs. */
export const PEERS_DIR = "/tmp/gateway-bench-peers";
/** The token bench/config.yaml accepts (passed to the gateway as BENCH_TOKEN). */
export const TOKEN = "gw-bench-token-0123456789abcdef";
export const MOCK_DELAY_MS = 20;
export const MOCK_CHUNKS = 10;
/** The paired direct measurement before each cell (the mock is warm after the first `direct` row). */
export const DIRECT_SECONDS = 3;
/** A cell is marked † when other processes used more than this many cores during it or its paired direct run. */
export const SHARED_CORES = 0.5;

/** One run as the flags asked for it. */
export interface Plan {
  /** Where the JSON goes (`--out`, default bench/CROSS_GATEWAY.json). */
  out: string;
  /** Measured seconds per cell (`--seconds`). */
  seconds: number;
  /** Warm-up seconds before each cell (`--warm`). */
  warm: number;
  /** wrk connection counts, in order (`--concurrency`). */
  concurrency: number[];
  /** The "all workers" rows' `--workers` (`--workers`, default one per CPU). */
  allWorkers: number;
  /** Target keys to run besides `direct` (`--only`); all when undefined. */
  only?: Set<string>;
  /** `--skip-peers`: no npm/PyPI peers are installed or tried. */
  skipPeers: boolean;
}

let tmp: string | undefined;

/** The run's temp dir (server logs, wrk scripts, gateway data), made on the first call. */
export function tmpDir(): string {
  tmp ??= Deno.makeTempDirSync({ prefix: "gateway-xgw-" });
  return tmp;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const log = (msg: string) => console.error(`[xgw ${new Date().toISOString().slice(11, 19)}] ${msg}`);
/** Single-quotes `s` for sh. */
export const shq = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

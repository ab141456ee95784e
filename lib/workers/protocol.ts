/**
 * What the primary tells a worker when it starts it, and the small pieces both sides share.
 *
 * @module
 */
import type { ValidatedConfig } from "../config/load.ts";
import type { ReloadStatus } from "../reload.ts";
import type { CooldownChange } from "../routing/health.ts";
import type { TokenStore } from "../tokens/types.ts";

/** The `init` call's argument: everything a worker needs to serve. */
export interface WorkerInit {
  /** 0 … N−1; a replacement takes the number of the worker it replaces. */
  readonly index: number;
  /**
   * The config the gateway started with (validated once, resolved by each worker): what the worker is built from,
   * as every worker was, so a replacement takes the keys read only at start from the start, as its siblings did.
   */
  readonly validated: ValidatedConfig;
  /**
   * The config of the latest reload that succeeded, or null before any: a replacement applies it as a reload, the
   * way its siblings took it, before it listens.
   */
  readonly reloaded: ValidatedConfig | null;
  readonly source: string;
  readonly host?: string;
  readonly port: number;
  /** This worker's share of `server.connections.max_connections` (the gateway's start's). */
  readonly maxConnections: number;
  readonly unbufferedLogs?: boolean;
  /** The primary has a usage pipeline (records are sent to it) … */
  readonly usage: boolean;
  /** … and a usage database the admin API can query. */
  readonly usageStore: boolean;
  /** The kind of the primary's token store, or null without one (the token routes then answer 503). */
  readonly tokens: TokenStore["kind"] | null;
  /** The worker's report ring (`report_ring.ts`), shared with the primary. */
  readonly reports: SharedArrayBuffer;
  /** Every target's places taken across the workers (`shared_in_flight.ts`), and how many workers there are. */
  readonly inFlight: SharedArrayBuffer;
  readonly workers: number;
  /** The targets' cooldowns the other workers set and have not ended: a replacement knows what is ejected. */
  readonly cooldowns: readonly CooldownChange[];
  /** The latest reload's outcome (null before any): what `/readyz` shows until the primary tells another. */
  readonly reloadStatus: ReloadStatus | null;
  /** The token-count worker's module (`StartOptions.tokenWorker`, as a URL's text); each worker starts its own. */
  readonly tokenWorker?: string;
}

/**
 * The most bytes one write to stdout carries: a pipe takes a write of up to `PIPE_BUF` (4096 on Linux)
 * whole, so log lines of several workers never interleave within a line.
 */
const ATOMIC_WRITE_BYTES = 4096;

/** Wraps `write` so that each call writes whole lines in pieces of at most {@linkcode ATOMIC_WRITE_BYTES}. */
export function lineWriter(write: (text: string) => void): (text: string) => void {
  return (text) => {
    // Log lines are ASCII but for what a client sent; counting UTF-16 units keeps bytes within 3× of it.
    if (text.length * 3 <= ATOMIC_WRITE_BYTES) return write(text);
    let start = 0;
    while (start < text.length) {
      let end = start;
      for (;;) {
        const next = text.indexOf("\n", end);
        const lineEnd = next < 0 ? text.length : next + 1;
        if (end > start && (lineEnd - start) * 3 > ATOMIC_WRITE_BYTES) break;
        end = lineEnd;
        if (end >= text.length) break;
      }
      write(text.slice(start, end));
      start = end;
    }
  };
}

/**
 * One way to hold a Redis connection, for every part of the gateway that keeps state in Redis (the policy's
 * counters, the response cache): every call bounded by a timeout, failing at once while disconnected (no offline
 * queue: the caller decides what a failure means), reconnecting by itself, and closed without hanging on a
 * connection that never came up.
 *
 * @module
 */
import { Redis } from "ioredis";

/**
 * Puts `String.prototype` back in V8's fast mode. ioredis defines `class VerbatimString extends String` when it
 * loads, and an object becoming a prototype of another turns it into a dictionary; for `String.prototype` that
 * means every method call on every string of the process (`charCodeAt`, `slice`, `indexOf` …) takes a full
 * lookup instead of an inlined one: the secret scrubber's scan of each access-log line and the SSE parser's
 * byte count ran 5–7 times slower, with or without Redis configured. A store through an object that inherits
 * from it makes V8 turn it fast again (`MakePrototypesFast`); the probe is garbage at once. No effect on Bun.
 * tests/string_prototype_test.ts holds the whole server's import graph to it.
 */
function restoreFastStringPrototype(): void {
  const probe: { fast?: boolean } = Object.create(String.prototype);
  probe.fast = true;
}
// Module evaluation runs ioredis's first, so the class above already exists here.
restoreFastStringPrototype();

/** A client for `url` whose calls fail after `timeoutMs`; it connects in the background and reconnects by itself. */
export function connectRedis(url: string, timeoutMs: number): Redis {
  const client = new Redis(url, {
    commandTimeout: timeoutMs,
    connectTimeout: Math.max(1_000, timeoutMs),
    // Fail at once while disconnected instead of queueing: the caller decides (503, a local limiter, a bypass).
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // Keep trying, quickly: recovery needs no restart, and costs one attempt per half second at most.
    retryStrategy: (times: number) => Math.min(50 * times, 500),
    lazyConnect: false,
  });
  // Connection errors surface as failed calls; the caller logs state changes, once each.
  client.on("error", () => {});
  return client;
}

/** Resolves true once `client` is connected, or false after `ms`, whichever comes first. */
export function redisReady(client: Redis, ms: number): Promise<boolean> {
  if (client.status === "ready") return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      client.off("ready", onReady);
      resolve(ok);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), ms);
    client.on("ready", onReady);
  });
}

/** Closes `client`: a clean `QUIT` when connected, else (or when that fails) a disconnect. */
export async function closeRedis(client: Redis): Promise<void> {
  if (client.status !== "ready") {
    client.disconnect();
    return;
  }
  try {
    await client.quit();
  } catch {
    client.disconnect();
  }
}

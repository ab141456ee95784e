import assert from "node:assert/strict";
import { watchedReader } from "./watched_reader.ts";

/** A reader of `values`, then the end, or a failure when `fail` is given. */
function readerOf(values: string[], fail?: Error) {
  let i = 0;
  const log = { cancelled: [] as unknown[] };
  return {
    log,
    source: {
      read(): Promise<ReadableStreamReadResult<string>> {
        if (i < values.length) return Promise.resolve({ done: false, value: values[i++] });
        return fail ? Promise.reject(fail) : Promise.resolve({ done: true, value: undefined });
      },
      cancel(reason?: unknown) {
        log.cancelled.push(reason);
        return Promise.resolve();
      },
    },
  };
}

function watcher() {
  const seen: string[] = [];
  return {
    seen,
    value: (v: string) => seen.push(v),
    done: () => seen.push("<done>"),
    failed: () => seen.push("<failed>"),
  };
}

Deno.test("watchedReader: each value is told before it is handed on, the end once", async () => {
  const { source } = readerOf(["a", "b"]);
  const w = watcher();
  const reader = watchedReader(source, w);
  assert.deepEqual(await reader.read(), { done: false, value: "a" });
  assert.deepEqual(w.seen, ["a"]);
  assert.deepEqual(await reader.read(), { done: false, value: "b" });
  assert.deepEqual(await reader.read(), { done: true, value: undefined });
  assert.deepEqual(await reader.read(), { done: true, value: undefined });
  assert.deepEqual(w.seen, ["a", "b", "<done>"]);
});

Deno.test("watchedReader: a failure is told once and every later read rejects with it", async () => {
  const { source } = readerOf(["a"], new Error("upstream broke"));
  const w = watcher();
  const reader = watchedReader(source, w);
  await reader.read();
  await assert.rejects(reader.read(), /upstream broke/);
  await assert.rejects(reader.read(), /upstream broke/);
  assert.deepEqual(w.seen, ["a", "<failed>"]);
});

Deno.test("watchedReader: a cancel is told once and reaches the source with its reason", async () => {
  const { source, log } = readerOf(["a", "b"]);
  const w = watcher();
  const reader = watchedReader(source, w);
  await reader.read();
  await reader.cancel("client gone");
  await reader.cancel("again");
  assert.deepEqual(log.cancelled, ["client gone"]);
  assert.deepEqual(w.seen, ["a", "<failed>"]);
  assert.deepEqual(await reader.read(), { done: true, value: undefined });
});

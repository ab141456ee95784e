import assert from "node:assert/strict";
import { Registry } from "../metrics/registry.ts";
import { PoolMetrics } from "./pool_metrics.ts";

/** A worker's exposition: `requests` counted, `open` streams open now. */
function exposition(requests: number, open: number): string {
  const r = new Registry();
  r.counter("gateway_requests_total", "Requests.", ["endpoint"]).inc(["chat"], requests);
  r.gauge("gateway_streams_in_flight", "Open.", []).set([], open);
  return r.render();
}

function sample(text: string, name: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(name));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

Deno.test("pool metrics: a dead worker's counters stay in the sum as of its last scrape, its gauges end with it", async () => {
  const a = { name: "a" };
  const b = { name: "b" };
  const c = { name: "c" };
  let live = [a, b];
  const answers = new Map<object, string>([[a, exposition(5, 2)], [b, exposition(3, 1)]]);
  const pool = new PoolMetrics<object>();
  const ask = (w: object) => Promise.resolve(answers.get(w) ?? "");
  const first = await pool.sum(() => live, ask, "");
  assert.equal(sample(first, "gateway_requests_total"), 8);
  assert.equal(sample(first, "gateway_streams_in_flight"), 3);

  // a dies; c replaces it and has counted 1 so far.
  pool.retire(a);
  live = [b, c];
  answers.set(c, exposition(1, 0));
  const second = await pool.sum(() => live, ask, "");
  assert.equal(sample(second, "gateway_requests_total"), 9);
  assert.equal(sample(second, "gateway_streams_in_flight"), 1);
});

Deno.test("pool metrics: a live worker that cannot answer counts with its last answer", async () => {
  const a = { name: "a" };
  const pool = new PoolMetrics<object>();
  assert.equal(
    sample(await pool.sum(() => [a], () => Promise.resolve(exposition(4, 0)), ""), "gateway_requests_total"),
    4,
  );
  assert.equal(sample(await pool.sum(() => [a], () => Promise.resolve(""), ""), "gateway_requests_total"), 4);
});

Deno.test("pool metrics: a worker that dies while asked is counted once, from what it last answered before", async () => {
  const a = { name: "a" };
  const pool = new PoolMetrics<object>();
  await pool.sum(() => [a], () => Promise.resolve(exposition(2, 0)), "");
  let live = [a];
  const dying = pool.sum(() => live, () => {
    pool.retire(a);
    live = [];
    return Promise.resolve(exposition(3, 0));
  }, "");
  assert.equal(sample(await dying, "gateway_requests_total"), 2);
});

/**
 * `serve --workers N` keeps N workers: a replacement that fails to start (its start throws, or it crashes while
 * starting) is tried again, after a back-off that grows with each failure in a row, until it serves; each failure
 * is logged (`worker_restart_failed`) and counted in `/metrics`, with the workers serving. The failures are
 * injected in worker 1 (tests/helpers/failing_start_worker.ts) by a file beside the config.
 *
 * @module
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startPool, until, workerOf } from "../helpers/worker_pool.ts";

const SECRET = "gw-retry-free-0123456789abcdef";
const ADMIN = "gw-retry-admin-0123456789abcdef";
const FAILING = new URL("../helpers/failing_start_worker.ts", import.meta.url);

/** The value of the series `name` (without labels) in a `/metrics` text, or undefined. */
function sample(text: string, name: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

Deno.test("workers: a replacement that fails to start is tried again, with a growing back-off, until the pool has its workers", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(
    file,
    `
usage: { sqlite: none }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
  - { name: free, sha256: ${hashToken(SECRET)}, models: ["*"] }
admin_tokens:
  - { name: ops, token: ${ADMIN} }
`,
  );
  // The back-off asked of the pool, each time: no real wait (the test waits for the outcome, not for time).
  const asked: number[] = [];
  const timing = {
    restartDelayMs: (trouble: number) => {
      asked.push(trouble);
      return 0;
    },
  };
  const { gw, logs, url } = await startPool(file, { workerUrl: FAILING, timing });
  try {
    // Worker 1's next three starts fail: its start throws, it crashes while starting, its start throws.
    await Deno.writeTextFile(`${dir}/fail-starts`, "reject\ncrash\nreject\n");
    gw.kill(1);
    await until(() => logs.some((l) => l.msg === "worker_restarted"), "a replacement that serves");

    const failures = logs.filter((l) => l.msg === "worker_restart_failed");
    assert.equal(failures.length, 3, "each failed start is logged");
    for (const failure of failures) {
      assert.equal(failure.worker, 1);
      assert.equal(typeof failure.retry_in_ms, "number");
    }
    assert.equal(await Deno.readTextFile(`${dir}/fail-starts`), "", "the three failures were taken");
    // The death, then one back-off more for each failure in a row.
    assert.equal(asked.length, 4);
    assert.deepEqual(asked.slice(1), [asked[0] + 1, asked[0] + 2, asked[0] + 3]);

    // Two workers answer again.
    const seen = new Set<string>();
    for (let i = 0; i < 64 && seen.size < 2; i++) {
      const r = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${SECRET}`,
          "content-type": "application/json",
          connection: "close",
        },
        body: JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content: "hi" }] }),
      });
      await r.body?.cancel();
      assert.equal(r.status, 200);
      seen.add(workerOf(r.headers.get("x-request-id") ?? ""));
    }
    assert.equal(seen.size, 2, "both workers serve");

    // What an operator's dashboard reads: the workers serving and the failed starts.
    const r = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } });
    const text = await r.text();
    assert.equal(r.status, 200);
    assert.equal(sample(text, "gateway_workers_serving"), 2);
    assert.equal(sample(text, "gateway_worker_start_failures_total"), 3);
  } finally {
    await gw.stop(1_000);
    await Deno.remove(dir, { recursive: true });
  }
});

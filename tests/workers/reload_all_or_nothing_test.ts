/**
 * A reload of `serve --workers N` is all or nothing: every worker sets the new config up first, and only when all
 * did does each swap it in; a failure in one leaves every worker on the old config. A worker that dies during a
 * reload is left out of it and replaced in the state the reload's outcome decided; one that does not answer is ended
 * and replaced so; a reload that no worker took (each died) failed, and the replacements start on the old config.
 * The faults are injected (tests/helpers/faulty_reload_worker.ts) by the name of an alias the new config adds.
 *
 * @module
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { ReloadStatus } from "../../lib/reload.ts";
import { startPool, until, workerOf } from "../helpers/worker_pool.ts";

const SECRET = "gw-reload-free-0123456789abcdef";
const ADMIN = "gw-reload-admin-0123456789abcdef";
const FAULTY = new URL("../helpers/faulty_reload_worker.ts", import.meta.url);

/** A config with the alias `chat-echo`, and `added` too when given. */
function yaml(added?: string): string {
  return `
usage: { sqlite: none }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
${added === undefined ? "" : `  ${added}: { type: chat, targets: [ { provider: local, model: echo } ] }`}
tokens:
  - { name: free, sha256: ${hashToken(SECRET)}, models: ["*"] }
admin_tokens:
  - { name: ops, token: ${ADMIN} }
`;
}

/** Asks for `model` on connections of their own until `workers` workers answered: each answer's status, by worker. */
async function byWorker(url: string, model: string, workers = 2): Promise<Map<string, number[]>> {
  const seen = new Map<string, number[]>();
  for (let i = 0; i < 64 && seen.size < workers; i++) {
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${SECRET}`, "content-type": "application/json", connection: "close" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
    });
    await r.body?.cancel();
    const worker = workerOf(r.headers.get("x-request-id") ?? "");
    seen.set(worker, [...seen.get(worker) ?? [], r.status]);
  }
  assert.equal(seen.size, workers, `${workers} workers answered`);
  return seen;
}

Deno.test("workers: a reload that fails in one worker leaves every worker on the old config", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(file, yaml());
  const { gw, logs, url } = await startPool(file, { workerUrl: FAULTY });
  try {
    await Deno.writeTextFile(file, yaml("fail-in-worker-1"));
    const r = await fetch(`${url}/admin/reload`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, connection: "close" },
    });
    const status = await r.json();
    assert.equal(r.status, 422);
    assert.equal(status.ok, false);
    assert.match(JSON.stringify(status.issues), /could not set the config up/);
    assert.equal(logs.filter((l) => l.msg === "config_reload_failed").length, 1);

    // Neither worker serves the alias of the config that failed: worker 0, which could set it up, did not swap it in.
    for (const [worker, statuses] of await byWorker(url, "fail-in-worker-1")) {
      assert.deepEqual(statuses, statuses.map(() => 404), `worker ${worker} serves the old config`);
    }
    for (const statuses of (await byWorker(url, "chat-echo")).values()) {
      assert.deepEqual(statuses, statuses.map(() => 200));
    }

    // The next reload that every worker can set up takes on every worker.
    await Deno.writeTextFile(file, yaml("chat-new"));
    assert.equal((await gw.reloader.reload("admin")).ok, true);
    for (const statuses of (await byWorker(url, "chat-new")).values()) {
      assert.deepEqual(statuses, statuses.map(() => 200));
    }
  } finally {
    await gw.stop(1_000);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("workers: a worker that dies during a reload is replaced in the state the reload decided", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(file, yaml());
  const { gw, logs, url } = await startPool(file, { workerUrl: FAULTY });
  try {
    await Deno.writeTextFile(file, yaml("die-in-worker-1"));
    const status = await gw.reloader.reload("admin");
    // Worker 0 set it up and nobody refused it: it is the config now, and worker 1's replacement starts on it.
    assert.ok(status.ok, JSON.stringify(status.issues));
    await until(() => logs.some((l) => l.msg === "worker_died"), "worker 1 to die");
    await until(() => logs.some((l) => l.msg === "worker_restarted"), "the replacement");
    for (const statuses of (await byWorker(url, "die-in-worker-1")).values()) {
      assert.deepEqual(statuses, statuses.map(() => 200));
    }
  } finally {
    await gw.stop(1_000);
    await Deno.remove(dir, { recursive: true });
  }
});

/** `/readyz`'s `reload` on connections of their own until both workers answered. */
async function readyzReloads(url: string): Promise<{ ok: boolean }[]> {
  const seen = new Map<string, { ok: boolean }>();
  for (let i = 0; i < 64 && seen.size < 2; i++) {
    const r = await fetch(`${url}/readyz`, { headers: { connection: "close" } });
    const body: { reload: { ok: boolean } } = await r.json();
    seen.set(workerOf(r.headers.get("x-request-id") ?? ""), body.reload);
  }
  assert.equal(seen.size, 2, "both workers answered /readyz");
  return [...seen.values()];
}

Deno.test("workers: a reload during which every worker dies fails, and the replacements start on the old config", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(file, yaml());
  // Replacements at once: the test waits for them, not for a back-off.
  const { gw, logs, url } = await startPool(file, { workerUrl: FAULTY, timing: { restartDelayMs: () => 0 } });
  try {
    await Deno.writeTextFile(file, yaml("die-in-every-worker"));
    const status = await gw.reloader.reload("admin");
    // No worker set it up, so nobody checked it can serve: not a success, and not the config now.
    assert.equal(status.ok, false, "a reload no worker took is not ok");
    assert.match(JSON.stringify(status.issues), /no worker took it/);
    const failed = logs.filter((l) => l.msg === "config_reload_failed");
    assert.equal(failed.length, 1);
    assert.equal(logs.filter((l) => l.msg === "config_reloaded").length, 0);
    await until(() => logs.filter((l) => l.msg === "worker_restarted").length === 2, "both replacements");

    // The replacements serve what the outcome says: the old config, and the failed reload on /readyz.
    for (const statuses of (await byWorker(url, "die-in-every-worker")).values()) {
      assert.deepEqual(statuses, statuses.map(() => 404), "the replacements serve the old config");
    }
    for (const statuses of (await byWorker(url, "chat-echo")).values()) {
      assert.deepEqual(statuses, statuses.map(() => 200));
    }
    for (const reload of await readyzReloads(url)) assert.equal(reload.ok, false);
  } finally {
    await gw.stop(1_000);
    await Deno.remove(dir, { recursive: true });
  }
});

/** `reloading` if it settles before a 15 s bound of the test's (a reload that hangs fails the test, not stalls it). */
async function settled(reloading: Promise<ReloadStatus>): Promise<ReloadStatus> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("the reload never answered")), 15_000);
  });
  try {
    return await Promise.race([reloading, bound]);
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("workers: a worker that never answers its part of a reload is ended and replaced; the reload completes", async () => {
  const fault = "hang-in-worker-1";
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(file, yaml());
  // A short bound on the workers' answers, so the silent worker is judged within the test's time; the healthy
  // ones answer from memory, far within it.
  const timing = { answerMs: 2_000, restartDelayMs: () => 0 };
  const { gw, logs, url } = await startPool(file, { workerUrl: FAULTY, timing });
  try {
    await Deno.writeTextFile(file, yaml(fault));
    const status = await settled(gw.reloader.reload("admin"));
    // Worker 0 set it up: the reload is the config, and worker 1, ended, is replaced on it.
    assert.ok(status.ok, JSON.stringify(status.issues));
    const died = logs.find((l) => l.msg === "worker_died");
    assert.equal(died?.worker, 1);
    assert.equal(died?.reason, "unresponsive");
    await until(() => logs.some((l) => l.msg === "worker_restarted"), "the replacement");
    for (const statuses of (await byWorker(url, fault)).values()) {
      assert.deepEqual(statuses, statuses.map(() => 200));
    }
    // The next reload reaches both, the replacement too.
    await Deno.writeTextFile(file, yaml("chat-new"));
    assert.equal((await settled(gw.reloader.reload("admin"))).ok, true);
    for (const statuses of (await byWorker(url, "chat-new")).values()) {
      assert.deepEqual(statuses, statuses.map(() => 200));
    }
  } finally {
    await gw.stop(1_000);
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * Issue 28, acceptance 1: a worker that dies is replaced, and the requests that were open in it are recorded
 * as failed (500 `worker_failed`), once each; the concurrency slots it held are given back. The primary runs
 * in this test process (so the test can end a worker at once, as a crash would), its two workers are real
 * threads serving real sockets.
 *
 * @module
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGated } from "../helpers/gated_upstream.ts";
import { gatedConfig, startPool, until, workerHolding } from "../helpers/worker_pool.ts";

const SECRET = "gw-death-conc-0123456789abcdef";

interface Outcome {
  status: number | "reset";
  id: string;
}

async function send(url: string, model = "chat-gated", stream = false): Promise<Outcome> {
  try {
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${SECRET}`, "content-type": "application/json", connection: "close" },
      body: JSON.stringify({ model, stream, messages: [{ role: "user", content: "hi" }] }),
    });
    await r.text();
    return { status: r.status, id: r.headers.get("x-request-id") ?? "" };
  } catch {
    return { status: "reset", id: "" };
  }
}

/** The gated config with token `conc` (`extra` appended to its entry). */
const gatedConfigOf = (baseURL: string, extra = "") =>
  gatedConfig(baseURL, { name: "conc", secret: SECRET, extra });

Deno.test("workers: a killed worker is replaced, its open requests recorded as failed and its slots given back", async () => {
  const up = startGated();
  const { dir, file } = await gatedConfigOf(up.baseURL, ", limits: { concurrent: 12 }");
  const { gw, logs, url } = await startPool(file, { watch: true });
  try {
    // Twelve requests held upstream, spread over the workers; then one holding some ends mid-request.
    const first = Array.from({ length: 12 }, () => send(url));
    await until(() => up.arrived === 12, "twelve held upstream");
    gw.kill(await workerHolding(gw, 12));
    await until(() => logs.some((l) => l.msg === "worker_restarted"), "the replacement");
    assert.equal(gw.started(), 3, "two workers and one replacement");
    const died = logs.find((l) => l.msg === "worker_died")!;
    up.release();
    const firstOutcomes = await Promise.all(first);
    const cut = firstOutcomes.filter((o) => o.status === "reset").length;
    assert.ok(cut >= 1, "some requests were on the killed worker");
    assert.equal(died.open_requests, cut);
    assert.equal(died.recorded, cut);
    for (const o of firstOutcomes.filter((o) => o.status !== "reset")) assert.equal(o.status, 200);

    // The dead worker's slots were given back: twelve more are held at once again, over both workers.
    up.reset();
    const second = Array.from({ length: 12 }, () => send(url));
    await until(() => up.arrived === 24, "twelve more held upstream (concurrency 12 free again)");
    up.release();
    const secondOutcomes = await Promise.all(second);
    assert.deepEqual(secondOutcomes.map((o) => o.status), secondOutcomes.map(() => 200));
    assert.ok(new Set(secondOutcomes.map((o) => o.id.slice(0, 20))).size >= 2, "both workers serve again");

    await gw.stop(5_000);
    // One record per request: the answered ones as answered, the cut ones as failed.
    const db = new DatabaseSync(`${dir}/usage.sqlite`, { readOnly: true });
    const rows = db.prepare("SELECT request_id, status, error_code, token FROM usage").all() as {
      request_id: string;
      status: number;
      error_code: string | null;
      token: string;
    }[];
    db.close();
    assert.equal(rows.length, 24);
    assert.equal(new Set(rows.map((r) => r.request_id)).size, 24);
    const failed = rows.filter((r) => r.error_code === "worker_failed");
    assert.equal(failed.length, cut);
    for (const r of failed) {
      assert.equal(r.status, 500);
      assert.equal(r.token, "conc");
    }
    const answered = new Set(
      [...firstOutcomes, ...secondOutcomes].filter((o) => o.status === 200).map((o) => o.id),
    );
    assert.equal(rows.filter((r) => r.status === 200 && answered.has(r.request_id)).length, 24 - cut);
  } finally {
    await gw.stop(1_000);
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("workers: a reload asked while a worker is being replaced reaches the replacement", async () => {
  const up = startGated();
  up.release();
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  const yaml = (extra: string) => `
usage: { sqlite: none }
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-gated-0123456789 }
models:
  chat-gated: { type: chat, targets: [ { provider: up, model: gated, retries: 0 } ] }
${extra}
tokens:
  - { name: conc, sha256: ${hashToken(SECRET)}, models: ["*"] }
`;
  await Deno.writeTextFile(file, yaml(""));
  // Not watched: the reload asked below is the only one (a reload is read from the file all the same).
  const { gw, logs, url } = await startPool(file);
  try {
    await Deno.writeTextFile(
      file,
      yaml("  chat-new: { type: chat, targets: [ { provider: up, model: newer } ] }"),
    );
    gw.kill(0);
    await until(() => gw.started() === 3, "the replacement to be starting");
    const status = await gw.reloader.reload("admin");
    assert.ok(status.ok, JSON.stringify(status.issues));
    await until(() => logs.some((l) => l.msg === "worker_restarted"), "the replacement");
    // Every worker, the replacement too, serves the reloaded config.
    const answers = await Promise.all(Array.from({ length: 24 }, () => send(url, "chat-new")));
    assert.deepEqual(answers.map((a) => a.status), answers.map(() => 200));
    assert.ok(new Set(answers.map((o) => o.id.slice(0, 20))).size >= 2, "both workers answered");
  } finally {
    await gw.stop(1_000);
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("workers: a replacement worker knows which targets the others ejected", async () => {
  const up = startGated();
  up.release();
  let badHits = 0;
  const bad = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    await request.text();
    badHits++;
    return Response.json({ error: { message: "down", type: "server_error" } }, { status: 500 });
  });
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  const admin = "gw-death-admin-0123456789abcdef";
  await Deno.writeTextFile(
    file,
    `
usage: { sqlite: none }
providers:
  bad: { type: openai, base_url: "http://127.0.0.1:${bad.addr.port}/v1", api_key: sk-bad-0123456789 }
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-gated-0123456789 }
models:
  chat-gated:
    type: chat
    strategy: fallback
    targets: [ { provider: bad, model: x, retries: 0 }, { provider: up, model: gated, retries: 0 } ]
routing: { backoff_base: 5ms, backoff_max: 10ms, eject_after: 1, eject_cooldown: 10m }
tokens:
  - { name: conc, sha256: ${hashToken(SECRET)}, models: ["*"] }
admin_tokens:
  - { name: ops, token: ${admin} }
`,
  );
  const { gw, logs, url } = await startPool(file);
  /** The bad target's state as each of `n` connections' workers sees it, by worker. */
  const states = async (n: number) => {
    const seen = new Map<string, string>();
    for (let i = 0; i < n; i++) {
      const r = await fetch(`${url}/admin/targets`, {
        headers: { authorization: `Bearer ${admin}`, connection: "close" },
      });
      const body = await r.json() as { data: { targets: { provider: string; state: string }[] }[] };
      seen.set(r.headers.get("x-request-id")!.slice(0, 20), body.data[0].targets[0].state);
    }
    return seen;
  };
  try {
    assert.equal((await send(url)).status, 200);
    assert.equal(badHits, 1);
    let both = new Map<string, string>();
    const deadline = performance.now() + 15_000;
    while (both.size < 2 || [...both.values()].some((s) => s !== "ejected")) {
      if (performance.now() > deadline) {
        throw new Error(`both workers to see the target ejected: ${[...both]}`);
      }
      both = await states(8);
    }
    gw.kill(0);
    await until(() => logs.some((l) => l.msg === "worker_restarted"), "the replacement");
    const after = await Promise.all(Array.from({ length: 20 }, () => send(url)));
    assert.deepEqual(after.map((o) => o.status), after.map(() => 200));
    assert.ok(new Set(after.map((o) => o.id.slice(0, 20))).size >= 2, "the replacement answered too");
    assert.equal(badHits, 1, "no worker, the replacement neither, tried the ejected target again");
  } finally {
    await gw.stop(1_000);
    await bad.shutdown();
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("workers: a replacement worker's /readyz shows the last reload's outcome, told against the gateway's start", async () => {
  const up = startGated();
  up.release();
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  const yaml = (server: string) => `
usage: { sqlite: none }
${server}
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-gated-0123456789 }
models:
  chat-gated: { type: chat, targets: [ { provider: up, model: gated, retries: 0 } ] }
tokens:
  - { name: conc, sha256: ${hashToken(SECRET)}, models: ["*"] }
`;
  const later = "server: { connections: { header_timeout: 20s } }";
  await Deno.writeTextFile(file, yaml(""));
  const { gw, logs, url } = await startPool(file);
  type Shown = { ok: boolean; errors: number; restart_required: string[] } | null;
  /** `/readyz`'s `reload` on connections of their own until both workers answered, by worker. */
  const shown = async () => {
    const seen = new Map<string, Shown>();
    const deadline = performance.now() + 15_000;
    while (seen.size < 2) {
      if (performance.now() > deadline) throw new Error("both workers to answer /readyz");
      const r = await fetch(`${url}/readyz`, { headers: { connection: "close" } });
      const body: { reload: Shown } = await r.json();
      seen.set(r.headers.get("x-request-id")!.slice(0, 20), body.reload);
    }
    return [...seen.values()];
  };
  try {
    // A start-only key changed (named until a restart), then a file that does not parse.
    await Deno.writeTextFile(file, yaml(later));
    assert.deepEqual((await gw.reloader.reload("admin")).restart_required, [
      "server.connections.header_timeout",
    ]);
    await Deno.writeTextFile(file, "providers: [\n");
    assert.equal((await gw.reloader.reload("admin")).ok, false);

    gw.kill(0);
    await until(() => logs.some((l) => l.msg === "worker_restarted"), "the replacement");
    for (const reload of await shown()) {
      assert.equal(reload?.ok, false, "the replacement shows the failed reload, as the other worker does");
    }

    // The changed key is in effect on no worker, the replacement neither (it took it from the gateway's start):
    // it is still named on every worker.
    await Deno.writeTextFile(file, yaml(later));
    assert.equal((await gw.reloader.reload("admin")).ok, true);
    for (const reload of await shown()) {
      assert.deepEqual(reload?.restart_required, ["server.connections.header_timeout"]);
    }
  } finally {
    await gw.stop(1_000);
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

/** `gateway_requests_total` of a `/metrics` text, summed over the series whose labels include `match`. */
function requestsTotal(text: string, match = ""): number {
  return text.split("\n")
    .filter((l) => l.startsWith("gateway_requests_total{") && l.includes(match))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

Deno.test("workers: /metrics keeps a dead worker's counts and counts the requests that failed with it", async () => {
  const up = startGated();
  up.release();
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  const admin = "gw-death-admin-0123456789abcdef";
  await Deno.writeTextFile(
    file,
    `
usage: { sqlite: none }
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-gated-0123456789 }
models:
  chat-gated: { type: chat, targets: [ { provider: up, model: gated, retries: 0 } ] }
tokens:
  - { name: conc, sha256: ${hashToken(SECRET)}, models: ["*"] }
admin_tokens:
  - { name: ops, token: ${admin} }
`,
  );
  const { gw, logs, url } = await startPool(file);
  const scrape = async () => {
    const r = await fetch(`${url}/metrics`, {
      headers: { authorization: `Bearer ${admin}`, connection: "close" },
    });
    assert.equal(r.status, 200);
    return await r.text();
  };
  try {
    const first = await Promise.all(Array.from({ length: 10 }, () => send(url)));
    assert.deepEqual(first.map((o) => o.status), first.map(() => 200));
    const before = requestsTotal(await scrape());
    assert.ok(before >= 10, `${before} requests counted after 10 answered`);

    // Twelve more held upstream over the workers; one dies with some of them open.
    up.reset();
    const second = Array.from({ length: 12 }, () => send(url));
    await until(() => up.arrived === 22, "twelve held upstream");
    gw.kill(await workerHolding(gw, 12));
    up.release();
    const outcomes = await Promise.all(second);
    const cut = outcomes.filter((o) => o.status === "reset").length;
    assert.ok(cut >= 1, "some requests were on the killed worker");
    await until(() => logs.some((l) => l.msg === "worker_restarted"), "the replacement");

    const after = await scrape();
    // Nothing counted before is gone (Prometheus would read a reset), and each of the twelve is counted once:
    // those answered by the worker that answered them, those cut by the primary, as failed.
    assert.ok(
      requestsTotal(after) >= before + 12,
      `gateway_requests_total ${requestsTotal(after)}, was ${before} before 12 more requests`,
    );
    assert.equal(requestsTotal(after, 'status="500"'), cut, "the requests that failed with the worker");
  } finally {
    await gw.stop(1_000);
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("workers: a stream open in a worker that dies is recorded as a stream, with its alias and token id", async () => {
  const up = startGated();
  const { dir, file } = await gatedConfigOf(up.baseURL);
  const { gw, logs, url } = await startPool(file);
  try {
    const streams = Array.from({ length: 8 }, () => send(url, "chat-gated", true));
    await until(() => up.arrived === 8, "eight streams held upstream");
    gw.kill(await workerHolding(gw, 8));
    up.release();
    const cut = (await Promise.all(streams)).filter((o) => o.status === "reset").length;
    assert.ok(cut >= 1, "some streams were on the killed worker");
    await until(() => logs.some((l) => l.msg === "worker_restarted"), "the replacement");
    await gw.stop(5_000);
    const db = new DatabaseSync(`${dir}/usage.sqlite`, { readOnly: true });
    const failed = db.prepare(
      "SELECT stream, alias, token, token_id FROM usage WHERE error_code = 'worker_failed'",
    ).all();
    db.close();
    assert.equal(failed.length, cut);
    for (const row of failed) {
      assert.deepEqual({ ...row }, { stream: 1, alias: "chat-gated", token: "conc", token_id: "cfg_conc" });
    }
  } finally {
    await gw.stop(1_000);
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("workers: a Messages request cut by a dying worker is a failed chat operation in /metrics", async () => {
  const up = startGated();
  const { dir, file } = await gatedConfigOf(up.baseURL);
  await Deno.writeTextFile(file, `${await Deno.readTextFile(file)}server: { public_metrics: true }\n`);
  const { gw, logs, url } = await startPool(file);
  const message = async (): Promise<Outcome> => {
    try {
      const r = await fetch(`${url}/v1/messages`, {
        method: "POST",
        headers: {
          "x-api-key": SECRET,
          "anthropic-version": "2023-06-01",
          "content-type": "application/json",
          connection: "close",
        },
        body: JSON.stringify({
          model: "chat-gated",
          max_tokens: 16,
          messages: [{ role: "user", content: "hi" }],
        }),
      });
      await r.text();
      return { status: r.status, id: "" };
    } catch {
      return { status: "reset", id: "" };
    }
  };
  try {
    const held = Array.from({ length: 8 }, message);
    await until(() => up.arrived === 8, "eight held upstream");
    gw.kill(await workerHolding(gw, 8));
    up.release();
    const cut = (await Promise.all(held)).filter((o) => o.status === "reset").length;
    assert.ok(cut >= 1, "some requests were on the killed worker");
    await until(() => logs.some((l) => l.msg === "worker_restarted"), "the replacement");
    // The primary counts them: its GenAI operation is told by the path its start notice carried.
    const text = await (await fetch(`${url}/metrics`, { headers: { connection: "close" } })).text();
    const failed = text.split("\n").filter((l) =>
      l.startsWith("gen_ai_client_operation_duration_seconds_count{") &&
      l.includes('gen_ai_operation_name="chat"') && l.includes('error_type="worker_failed"')
    );
    assert.equal(
      failed.reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0),
      cut,
      failed.join("\n"),
    );
  } finally {
    await gw.stop(1_000);
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

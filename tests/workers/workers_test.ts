/**
 * Issue 28, acceptance 1: `serve --workers 2` on the embedded default (in-memory counters, SQLite). Under
 * concurrent load spread over both workers, rpm, tpm, concurrency and a budget admit no more than one process
 * would; a reload reaches both; SIGTERM drains both with one usage record per request. The gateway runs as a
 * process of its own (`deno run main.ts serve`, or the single binary when `GATEWAY_BIN` is set). Which worker
 * answered is told by the request id's prefix (16 random hex digits per worker).
 *
 * @module
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { type Gated, startGated } from "../helpers/gated_upstream.ts";
import { type Replica, spawnReplica } from "../helpers/replica.ts";
import { type DecodedMetric, startOtlpReceiver } from "../helpers/otlp_receiver.ts";

const SECRET = {
  rpm: "gw-workers-rpm-0123456789abcdef",
  conc: "gw-workers-conc-0123456789abcdef",
  budget: "gw-workers-budget-0123456789abcdef",
  tpm: "gw-workers-tpm-0123456789abcdef",
  free: "gw-workers-free-0123456789abcdef",
};
const ADMIN = "gw-workers-admin-0123456789abcdef";

function config(up: Gated, dir: string, extraModels = ""): string {
  const token = (name: keyof typeof SECRET, extra: string) =>
    `  - { name: ${name}, sha256: ${hashToken(SECRET[name])}, models: ["*"]${extra} }`;
  return `
usage: { sqlite: "${dir}/usage.sqlite", flush_interval: 20ms }
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-gated-0123456789 }
models:
  chat-gated: { type: chat, targets: [ { provider: up, model: gated, retries: 0 } ] }
  chat-capped: { type: chat, targets: [ { provider: up, model: capped, retries: 0, max_in_flight: 3 } ] }
${extraModels}
tokens:
${token("rpm", ", limits: { rpm: 12 }")}
${token("conc", ", limits: { concurrent: 5 }")}
${token("budget", ", budget: { tokens: 40, period: day }")}
${token("tpm", ", limits: { tpm: 50 }")}
${token("free", "")}
admin_tokens:
  - { name: ops, token: ${ADMIN} }
`;
}

interface Answer {
  status: number;
  id: string;
  body: string;
}

/** One request on a connection of its own, so the kernel spreads them over the workers. */
async function send(url: string, secret: string, model = "chat-gated"): Promise<Answer> {
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", connection: "close" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 5 }),
  });
  return { status: r.status, id: r.headers.get("x-request-id") ?? "", body: await r.text() };
}

/** The workers that answered: the distinct request-id prefixes. */
function workersOf(answers: Answer[]): number {
  return new Set(answers.map((a) => a.id.slice(0, 20))).size;
}

/**
 * Batches of answers until two workers are among them (at most `rounds` batches): the kernel spreads
 * connections over the workers by a hash of their ports, so one batch of eight may all land on one now and then.
 */
async function fromBothWorkers<T extends { id: string }>(
  batch: () => Promise<T[]>,
  rounds = 8,
): Promise<T[]> {
  const answers: T[] = [];
  for (let i = 0; i < rounds && new Set(answers.map((a) => a.id.slice(0, 20))).size < 2; i++) {
    answers.push(...await batch());
  }
  return answers;
}

async function until(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + 15_000;
  while (!await cond()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function usageRows(dir: string): { request_id: string; status: number; token: string }[] {
  const db = new DatabaseSync(`${dir}/usage.sqlite`, { readOnly: true });
  try {
    return db.prepare("SELECT request_id, status, token FROM usage").all() as unknown as {
      request_id: string;
      status: number;
      token: string;
    }[];
  } finally {
    db.close();
  }
}

/**
 * Sends `n` requests at once with the upstream gate closed and opens it only once every request is decided
 * (admitted ones have arrived upstream, denied ones are answered), so no admission settles before the last
 * decision: what is admitted is what the limits allow at once, not what settling gave back.
 */
async function decided(
  up: Gated,
  url: string,
  secret: string,
  n: number,
  model = "chat-gated",
): Promise<Answer[]> {
  up.reset();
  const base = up.arrived;
  let answered = 0;
  const all = Array.from({ length: n }, () =>
    send(url, secret, model).then((a) => {
      answered++;
      return a;
    }));
  await until(() => up.arrived - base + answered === n, `${n} requests decided`);
  up.release();
  return await Promise.all(all);
}

const ok = (answers: Answer[]) => answers.filter((a) => a.status === 200).length;

/** Two workers serving the suite's config (changed by `edit`) against an open upstream, for `fn`. */
async function withTwoWorkers(edit: (yaml: string) => string, fn: (gw: Replica) => Promise<void>) {
  const up = startGated();
  up.release();
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(file, edit(config(up, dir)));
  const gw = await spawnReplica(file, ["--workers", "2"]);
  try {
    await fn(gw);
  } finally {
    await gw.stop();
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("workers: two workers admit no more than one process would (limits, budget, a target's max_in_flight), reload together and drain on SIGTERM", async () => {
  const up = startGated();
  up.release();
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(file, config(up, dir));
  const gw = await spawnReplica(file, ["--workers", "2"]);
  let stopped = false;
  const sent: Answer[] = [];
  try {
    // The gateway's estimate of one request, from the tpm token's headers (real usage is 3 + 2 tokens).
    const probe = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${SECRET.tpm}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "chat-gated",
        messages: [{ role: "user", content: "hi" }],
        max_tokens: 5,
      }),
    });
    assert.equal(probe.status, 200);
    const estimate = 50 - Number(probe.headers.get("x-ratelimit-remaining-tokens"));
    sent.push({ status: 200, id: probe.headers.get("x-request-id")!, body: await probe.text() });
    const tpmFrom = performance.now();
    assert.ok(estimate > 5 && estimate <= 25, `estimate ${estimate}`);

    // Concurrency 5: exactly five of twenty held at once, over both workers.
    const conc = await decided(up, gw.url, SECRET.conc, 20);
    sent.push(...conc);
    assert.equal(ok(conc), 5, "concurrency 5 across both workers");
    for (const a of conc.filter((a) => a.status !== 200)) assert.equal(a.status, 429);
    assert.ok(workersOf(conc) >= 2, "both workers answered");

    // rpm 12, a bucket refilled at 12 a minute: 12 of 40, plus what refilled during the run.
    const rpmFrom = performance.now();
    const rpm = await decided(up, gw.url, SECRET.rpm, 40);
    sent.push(...rpm);
    const rpmRefill = Math.ceil(12 * (performance.now() - rpmFrom) / 60_000);
    assert.ok(ok(rpm) >= 12 && ok(rpm) <= 12 + rpmRefill, `rpm admitted ${ok(rpm)}`);
    assert.ok(workersOf(rpm) >= 2, "both workers answered");

    // tpm 50: the probe settled at 5 tokens, so 45 are left (plus the refill) for requests of \`estimate\`.
    const tpm = await decided(up, gw.url, SECRET.tpm, 20);
    sent.push(...tpm);
    const tpmRefill = Math.ceil(50 * (performance.now() - tpmFrom) / 60_000);
    const least = Math.floor(45 / estimate);
    assert.ok(
      ok(tpm) >= least && ok(tpm) <= Math.floor((45 + tpmRefill) / estimate),
      `tpm admitted ${ok(tpm)}`,
    );

    // A budget of 40 tokens reserves \`estimate\` per request: never more than fit, none refilled.
    const budget = await decided(up, gw.url, SECRET.budget, 24);
    sent.push(...budget);
    assert.equal(ok(budget), Math.floor(40 / estimate), "the budget's reservations, exactly");
    for (const a of budget.filter((a) => a.status !== 200)) assert.match(a.body, /insufficient_quota/);

    // A target's max_in_flight 3 holds across both workers: three of twelve reach it at once.
    const capped = await decided(up, gw.url, SECRET.free, 12, "chat-capped");
    sent.push(...capped);
    assert.equal(ok(capped), 3, "max_in_flight 3 across both workers");
    assert.ok(workersOf(capped) >= 2, "both workers answered");

    // A reload reaches both workers: a new alias answers on every connection.
    up.release();
    await Deno.writeTextFile(
      file,
      config(up, dir, "  chat-new: { type: chat, targets: [ { provider: up, model: newer, retries: 0 } ] }"),
    );
    const reloaded = await fetch(`${gw.url}/admin/reload`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    assert.equal(reloaded.status, 200, await reloaded.text());
    const fresh = await Promise.all(Array.from({ length: 16 }, () => send(gw.url, SECRET.free, "chat-new")));
    sent.push(...fresh);
    assert.deepEqual(fresh.map((a) => a.status), fresh.map(() => 200));
    assert.ok(workersOf(fresh) >= 2, "both workers serve the reloaded config");

    // SIGTERM drains both: requests held upstream on both workers finish, then the process exits 0.
    up.reset();
    const before = up.arrived;
    const held = Array.from({ length: 10 }, () => send(gw.url, SECRET.free));
    await until(() => up.arrived === before + 10, "ten held upstream");
    const exit = gw.stop();
    stopped = true;
    await new Promise((r) => setTimeout(r, 300));
    up.release();
    const drained = await Promise.all(held);
    sent.push(...drained);
    assert.deepEqual(drained.map((a) => a.status), drained.map(() => 200), "drained, not cut");
    assert.ok(workersOf(drained) >= 2, "both workers drained requests");
    assert.equal(await exit, 0);
    // The reload was logged once, not once per worker (the file's watch may have reloaded too: another trigger).
    const reloadLines = gw.logs.filter((line) => line.includes('"msg":"config_reloaded"'));
    const admin = reloadLines.filter((line) => JSON.parse(line).trigger === "admin");
    assert.equal(admin.length, 1, reloadLines.join("\n"));

    // One usage record per request, each with the status the client saw.
    const rows = usageRows(dir);
    const byId = new Map(rows.map((r) => [r.request_id, r]));
    assert.equal(rows.length, sent.length, "one record per request");
    assert.equal(byId.size, rows.length, "no request recorded twice");
    for (const a of sent) assert.equal(byId.get(a.id)?.status, a.status, a.id);
    // And one access-log line each, the drained ones' too: a worker writes its buffered lines as it stops.
    const logged = new Set(gw.logs.map((line) => {
      try {
        const entry = JSON.parse(line);
        return entry.msg === "request" ? entry.request_id : null;
      } catch {
        return null;
      }
    }));
    for (const a of sent) assert.ok(logged.has(a.id), `an access-log line for ${a.id}`);
  } finally {
    if (!stopped) await gw.stop();
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("workers: a target ejected by one worker is ejected by both, and /metrics sums both", async () => {
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
  await Deno.writeTextFile(
    file,
    config(
      up,
      dir,
      `  chat-flaky: { type: chat, strategy: fallback, targets: [ { provider: bad, model: x, retries: 0 }, { provider: up, model: gated, retries: 0 } ] }
routing: { backoff_base: 5ms, backoff_max: 10ms, eject_after: 1, eject_cooldown: 10m }`,
    ).replace(
      "providers:\n",
      `providers:\n  bad: { type: openai, base_url: "http://127.0.0.1:${bad.addr.port}/v1", api_key: sk-bad-0123456789 }\n`,
    ),
  );
  const gw = await spawnReplica(file, ["--workers", "2"]);
  try {
    const first = await send(gw.url, SECRET.free, "chat-flaky");
    assert.equal(first.status, 200, first.body);
    assert.equal(badHits, 1);
    // Every worker comes to see the target ejected (without sharing, the other one never would).
    const targetState = async () => {
      const r = await fetch(`${gw.url}/admin/targets`, {
        headers: { authorization: `Bearer ${ADMIN}`, connection: "close" },
      });
      const body = await r.json() as {
        data: { alias: string; targets: { provider: string; state: string }[] }[];
      };
      const flaky = body.data.find((a) => a.alias === "chat-flaky")!;
      return {
        id: r.headers.get("x-request-id")!,
        state: flaky.targets.find((t) => t.provider === "bad")!.state,
      };
    };
    await until(async () => {
      const seen = await Promise.all(Array.from({ length: 12 }, targetState));
      return workersOf(seen.map((s) => ({ status: 200, body: "", id: s.id }))) >= 2 &&
        seen.every((s) => s.state === "ejected");
    }, "both workers to show the target ejected");
    const rest = await Promise.all(Array.from({ length: 20 }, () => send(gw.url, SECRET.free, "chat-flaky")));
    assert.deepEqual(rest.map((a) => a.status), rest.map(() => 200));
    assert.ok(workersOf(rest) >= 2);
    assert.equal(badHits, 1, "no worker tried the ejected target again");

    // One scrape counts every worker's requests: 21 chat requests in all.
    const metrics =
      await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } }))
        .text();
    const total = metrics.split("\n")
      .filter((l) => l.startsWith("gateway_requests_total{") && l.includes('endpoint="chat"'))
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
    assert.equal(total, 21);
  } finally {
    await gw.stop();
    await bad.shutdown();
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("workers: a token issued, revoked, disabled or rotated through one worker: every worker knows once the change is answered", async () => {
  await withTwoWorkers((yaml) => yaml, async (gw) => {
    const admin = async (method: string, path: string, body?: unknown) => {
      const r = await fetch(`${gw.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${ADMIN}`,
          "content-type": "application/json",
          connection: "close",
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      assert.ok(r.ok, `${method} ${path}: ${r.status}`);
      return await r.json() as { id: string; token: string };
    };
    let refused = 0;
    const seen: Answer[] = [];
    for (let round = 0; round < 12; round++) {
      const issued = await admin("POST", "/admin/tokens", { name: `revoked-${round}`, models: ["*"] });
      // Issued through one worker, the token works on every worker at once (each connection lands on either).
      const before = await Promise.all(Array.from({ length: 6 }, () => send(gw.url, issued.token)));
      assert.deepEqual(before.map((a) => a.status), before.map(() => 200), "an issued token works at once");
      const change = round % 3;
      if (change === 0) await admin("DELETE", `/admin/tokens/${issued.id}`);
      else if (change === 1) await admin("PATCH", `/admin/tokens/${issued.id}`, { disabled: true });
      else await admin("POST", `/admin/tokens/${issued.id}/rotate`, { grace: "0s" });
      const after = await Promise.all(Array.from({ length: 8 }, () => send(gw.url, issued.token)));
      seen.push(...after);
      refused += after.filter((a) => a.status === 401).length;
    }
    assert.equal(
      refused,
      seen.length,
      "every request with a revoked, disabled or rotated-away secret is refused",
    );
    assert.ok(workersOf(seen) >= 2, "both workers answered");
  });
});

Deno.test("workers: with Redis away and fail_open, a request the local limiter admitted gives its slot back there", async () => {
  const nothing = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (nothing.addr as Deno.NetAddr).port;
  nothing.close(); // a port no Redis listens on
  const redis = `redis: { url: "redis://127.0.0.1:${port}", key_prefix: "test:${crypto.randomUUID()}:", ` +
    "timeout: 50ms, on_failure: fail_open }\n";
  await withTwoWorkers((yaml) => yaml.replace("providers:\n", `${redis}providers:\n`), async (gw) => {
    // concurrent: 5, one request at a time: each finishes (and gives its slot back) before the next.
    const answers: Answer[] = [];
    for (let i = 0; i < 12; i++) answers.push(await send(gw.url, SECRET.conc));
    assert.deepEqual(
      answers.map((a) => a.status),
      answers.map(() => 200),
      answers.map((a) => a.body).join("\n"),
    );
    assert.ok(workersOf(answers) >= 2, "both workers answered");
  });
});

Deno.test("workers: an end user's limit holds while other users push it out of one worker's recent users (max_users)", async () => {
  const endUsers = "  chat-users: { type: chat, targets: [ { provider: up, model: gated, retries: 0 } ], " +
    "end_user_limits: { rpm: 3, max_users: 2 } }\n";
  await withTwoWorkers((yaml) => yaml.replace("models:\n", `models:\n${endUsers}`), async (gw) => {
    const as = async (user: string) => {
      const r = await fetch(`${gw.url}/v1/chat/completions`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${SECRET.free}`,
          "content-type": "application/json",
          connection: "close",
        },
        body: JSON.stringify({ model: "chat-users", messages: [{ role: "user", content: "hi" }], user }),
      });
      return { status: r.status, id: r.headers.get("x-request-id") ?? "", body: await r.text() };
    };
    // "v" is sent between every other user's request: always one of the two users seen last, so its counters
    // are never to be forgotten, whichever worker sees which of them.
    const from = performance.now();
    const v: Answer[] = [];
    for (let i = 0; i < 30; i++) {
      assert.equal((await as(`other-${i}`)).status, 200);
      v.push(await as("v"));
    }
    const refill = Math.ceil(3 * (performance.now() - from) / 60_000);
    assert.ok(ok(v) >= 3 && ok(v) <= 3 + refill, `user v admitted ${ok(v)} times with rpm 3`);
    for (const a of v.filter((a) => a.status !== 200)) assert.equal(a.status, 429);
    assert.ok(workersOf(v) >= 2, "both workers answered v");
  });
});

Deno.test("workers: a target's max_in_flight still holds across the workers after reloads have rotated over 1,024 targets", async () => {
  const up = startGated();
  up.release();
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  // 520 capped aliases; each reload rotates the provider's API key, which makes every target a new one.
  const aliases = Array.from(
    { length: 520 },
    (_, i) =>
      `  cap-${i}: { type: chat, targets: [ { provider: up, model: m${i}, retries: 0, max_in_flight: 1 } ] }`,
  ).join("\n");
  const rotated = (n: number) =>
    config(up, dir, aliases).replace("sk-gated-0123456789", `sk-gated-rotated-${n}`);
  await Deno.writeTextFile(file, rotated(0));
  const gw = await spawnReplica(file, ["--workers", "2"]);
  try {
    const reload = async (n: number) => {
      await Deno.writeTextFile(file, rotated(n));
      const r = await fetch(`${gw.url}/admin/reload`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      assert.equal(r.status, 200, await r.text());
    };
    for (let n = 0; n < 2; n++) {
      if (n > 0) await reload(n);
      // Every target used once, 20 at a time: 1,040 targets over the two configs.
      for (let i = 0; i < 520; i += 20) {
        const batch = await Promise.all(
          Array.from({ length: 20 }, (_, j) => send(gw.url, SECRET.free, `cap-${i + j}`)),
        );
        assert.deepEqual(batch.map((a) => a.status), batch.map(() => 200));
      }
    }
    await reload(2);
    const capped = await decided(up, gw.url, SECRET.free, 8, "cap-0");
    assert.equal(ok(capped), 1, "max_in_flight 1 across both workers");
    assert.ok(workersOf(capped) >= 2, "both workers answered");
  } finally {
    await gw.stop();
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("workers: /metrics says the response cache's store is up while every worker's is", async () => {
  const cached =
    "  chat-cached: { type: chat, targets: [ { provider: up, model: gated, retries: 0 } ], cache: { ttl: 10m } }\n";
  await withTwoWorkers((yaml) => yaml.replace("models:\n", `models:\n${cached}`), async (gw) => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => send(gw.url, SECRET.free, "chat-cached")),
    );
    assert.deepEqual(answers.map((a) => a.status), answers.map(() => 200));
    const metrics =
      await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } }))
        .text();
    assert.match(metrics, /^gateway_cache_store_up 1$/m);
  });
});

Deno.test("workers: /admin/requests lists a request just answered, whichever worker answered it", async () => {
  await withTwoWorkers((yaml) => yaml, async (gw) => {
    let missing = 0;
    const asked: string[] = [];
    for (let i = 0; i < 30; i++) {
      const answer = await send(gw.url, SECRET.free);
      assert.equal(answer.status, 200);
      // On a connection of its own: as often as not, the other worker answers.
      const r = await fetch(`${gw.url}/admin/requests?limit=5`, {
        headers: { authorization: `Bearer ${ADMIN}`, connection: "close" },
      });
      const body = await r.json() as { data: { request_id: string }[] };
      if (!body.data.some((d) => d.request_id === answer.id)) missing++;
      if (r.headers.get("x-request-id")!.slice(0, 20) !== answer.id.slice(0, 20)) asked.push(answer.id);
    }
    assert.equal(missing, 0, "every request listed at once");
    assert.ok(asked.length > 0, "some were asked of the other worker");
  });
});

Deno.test("workers: a reload that leaves a stored money budget over an unpriced alias is refused by every worker", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  const yaml = (price: string) => `
usage: { sqlite: "${dir}/usage.sqlite", flush_interval: 20ms }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo${price} } ] }
tokens: []
admin_tokens:
  - { name: ops, token: ${ADMIN} }
`;
  await Deno.writeTextFile(file, yaml(", price: { input: 1000000, output: 1000000 }"));
  const gw = await spawnReplica(file, ["--workers", "2"]);
  let stopped = false;
  const call = async (path: string, body?: unknown) => {
    const r = await fetch(`${gw.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json", connection: "close" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, json: await r.json() };
  };
  try {
    const capped = await call("/admin/tokens", {
      name: "capped",
      models: ["*"],
      budget: { cost: 10, period: "day" },
    });
    assert.equal(capped.status, 201);
    const spent = await Promise.all(
      Array.from({ length: 4 }, () => send(gw.url, capped.json.token, "chat-echo")),
    );
    assert.ok(spent.some((a) => a.status === 429), "the money budget is spent");

    // The price dropped from the file: the reload is refused, naming the token, and every worker keeps counting.
    await Deno.writeTextFile(file, yaml(""));
    const reload = await call("/admin/reload");
    assert.equal(reload.status, 422, JSON.stringify(reload.json));
    assert.deepEqual(
      reload.json.issues.map((i: { path: string }) => i.path),
      [`admin_api.tokens.${capped.json.id}.budget.cost`],
    );
    const after = await fromBothWorkers(() =>
      Promise.all(Array.from({ length: 8 }, () => send(gw.url, capped.json.token, "chat-echo")))
    );
    assert.deepEqual(after.map((a) => a.status), after.map(() => 429), "no worker serves it uncounted");
    assert.ok(workersOf(after) >= 2, "both workers answered");
    // And every worker's /readyz says the reload failed, where, as a single process's does.
    const ready = await fromBothWorkers(() =>
      Promise.all(Array.from({ length: 8 }, async () => {
        const r = await fetch(`${gw.url}/readyz`, { headers: { connection: "close" } });
        const body: { reload: { ok: boolean; issues: string[] } | null } = await r.json();
        return { id: r.headers.get("x-request-id") ?? "", reload: body.reload };
      }))
    );
    assert.ok(new Set(ready.map((r) => r.id.slice(0, 20))).size >= 2, "both workers answered /readyz");
    for (const r of ready) {
      assert.equal(r.reload?.ok, false, JSON.stringify(r.reload));
      assert.deepEqual(r.reload?.issues, [`admin_api.tokens.${capped.json.id}.budget.cost`]);
    }
    stopped = true;
    assert.equal(await gw.stop(), 0);
    // Logged once, by the primary, the reload it refused.
    const failed = gw.logs.filter((line) => line.includes('"msg":"config_reload_failed"'));
    assert.equal(failed.filter((line) => JSON.parse(line).trigger === "admin").length, 1, failed.join("\n"));
  } finally {
    if (!stopped) await gw.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("workers: each worker's GenAI metrics reach an OTLP collector as their own instance, which sum to the process's", async () => {
  const otlp = startOtlpReceiver();
  try {
    await withTwoWorkers(
      (yaml) =>
        `${yaml}\ntelemetry: { otlp: { endpoint: "${otlp.url}", protocol: http/json, interval: 100ms } }\n`,
      async (gw) => {
        // Requests on connections of their own, until both workers have answered some.
        const answers: Answer[] = [];
        while (workersOf(answers) < 2 && answers.length < 200) answers.push(await send(gw.url, SECRET.free));
        assert.equal(workersOf(answers), 2, "the kernel spread the requests over both workers");
        assert.equal(answers.every((a) => a.status === 200), true);
        // Each worker exports its running totals: told apart by service.instance.id, they add up to every call.
        const countsOf = (metrics: DecodedMetric[]) => {
          const latest = new Map<string, number>();
          for (const metric of metrics) {
            if (metric.name !== "gen_ai.client.operation.duration") continue;
            const instance = String(metric.resource["service.instance.id"]);
            latest.set(instance, metric.points.reduce((sum, p) => sum + (p.count ?? 0), 0));
          }
          return latest;
        };
        const metrics = await otlp.waitForMetrics((m) => {
          const counts = countsOf(m);
          return counts.size === 2 && [...counts.values()].reduce((a, b) => a + b, 0) === answers.length;
        }, 15_000).catch(() => otlp.metrics());
        const counts = countsOf(metrics);
        assert.equal(counts.size, 2, `instances: ${JSON.stringify([...counts])}`);
        assert.equal([...counts.values()].reduce((a, b) => a + b, 0), answers.length);
      },
    );
  } finally {
    await otlp.stop();
  }
});

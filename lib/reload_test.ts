import assert from "node:assert/strict";
import { validateConfigFile } from "./config/config_worker_client.ts";
import { loadConfigFile } from "./config/load.ts";
import { createMemoryLogger } from "./log.ts";
import { createProviders } from "./providers/registry.ts";
import { createReloader } from "./reload.ts";
import { HealthRegistry } from "./routing/health.ts";

const SETTINGS = {
  backoff_base: 1,
  backoff_max: 1,
  retry_after_max: 1,
  eject_after: 1,
  eject_cooldown: 60_000,
};

function yaml(baseUrl: string, model = "m1") {
  return `providers:
  up: { type: openai, base_url: "${baseUrl}" }
models:
  chat-a: { type: chat, targets: [ { provider: up, model: ${model} } ] }
`;
}

Deno.test("reload: a valid file swaps the state whole; health carries over for targets that still exist", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(path, yaml("http://127.0.0.1:1/v1"));
  const first = await loadConfigFile(path, {});
  assert.ok(first.ok);
  const health = new HealthRegistry();
  const logger = createMemoryLogger();
  const initial = { config: first.config, providers: createProviders(first.config.providers) };
  const reloader = createReloader({ path, env: () => ({}), logger, initial, health });

  const target = first.config.models.get("chat-a")!.targets[0];
  const lease = health.acquire(target, SETTINGS);
  assert.ok(typeof lease !== "string");
  lease.failed();
  lease.release();
  assert.equal(health.snapshot()[0].state, "ejected");

  // The same upstream under a reloaded config keeps its health record.
  await Deno.writeTextFile(
    path,
    yaml("http://127.0.0.1:1/v1") + "# a comment changes nothing that matters\n",
  );
  const same = await reloader.reload("test");
  assert.equal(same.ok, true);
  assert.notEqual(reloader.current(), initial, "a new state object");
  const sameTarget = reloader.current().config.models.get("chat-a")!.targets[0];
  assert.equal(sameTarget.key, target.key);
  assert.equal(health.acquire(sameTarget, SETTINGS), "ejected");

  // Pointing the provider elsewhere makes it a different target with a clean record.
  await Deno.writeTextFile(path, yaml("http://127.0.0.1:2/v1"));
  assert.equal((await reloader.reload("test")).ok, true);
  const moved = reloader.current().config.models.get("chat-a")!.targets[0];
  assert.notEqual(moved.key, target.key);
  assert.equal(health.snapshot().length, 0, "the old target's record is forgotten");
  const fresh = health.acquire(moved, SETTINGS);
  assert.ok(typeof fresh !== "string");
  fresh.release();

  // An invalid file changes nothing and says why.
  const before = reloader.current();
  await Deno.writeTextFile(path, "providers: [\n");
  const failed = await reloader.reload("test");
  assert.equal(failed.ok, false);
  assert.ok(failed.issues.length > 0);
  assert.equal(reloader.current(), before);
  assert.equal(reloader.status()?.ok, false);
  assert.ok(logger.lines.some((l) => l.msg === "config_reload_failed"));
  await Deno.remove(dir, { recursive: true });
});

Deno.test("reload: each outcome is logged once; a worker's reloader (logOutcome: false) leaves it to the primary", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(path, yaml("http://127.0.0.1:1/v1"));
  const first = await loadConfigFile(path, {});
  assert.ok(first.ok);
  const initial = { config: first.config, providers: createProviders(first.config.providers) };
  const logged = createMemoryLogger();
  const quiet = createMemoryLogger();
  const single = createReloader({ path, env: () => ({}), logger: logged, initial });
  const worker = createReloader({ path, env: () => ({}), logger: quiet, initial, logOutcome: false });
  const outcomes = (lines: readonly Record<string, unknown>[]) =>
    lines.filter((l) => l.msg === "config_reloaded" || l.msg === "config_reload_failed").map((l) => l.msg);

  assert.equal((await single.reload("test")).ok, true);
  assert.equal((await worker.reload("test")).ok, true);
  await Deno.writeTextFile(path, "providers: [\n");
  assert.equal((await single.reload("test")).ok, false);
  assert.equal((await worker.reload("test")).ok, false);
  assert.deepEqual(outcomes(logged.lines), ["config_reloaded", "config_reload_failed"]);
  assert.deepEqual(outcomes(quiet.lines), []);
  assert.equal(worker.status()?.ok, false, "its status is kept all the same");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("reload: a usage change the next start would refuse (usage.sqlite under a file) is refused; the old config serves", async () => {
  // It answered ok with restart_required: ["usage"], check refused the file, and the restart failed on mkdir.
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/gateway.yaml`;
    await Deno.writeTextFile(`${dir}/afile`, "");
    await Deno.writeTextFile(path, yaml("http://127.0.0.1:1/v1") + "usage: { sqlite: none }\n");
    const first = await loadConfigFile(path, {});
    assert.ok(first.ok);
    const initial = { config: first.config, providers: createProviders(first.config.providers) };
    const logger = createMemoryLogger();
    const reloader = createReloader({ path, env: () => ({}), logger, initial });

    await Deno.writeTextFile(
      path,
      yaml("http://127.0.0.1:1/v1", "m2") + `usage: { sqlite: "${dir}/afile/x.sqlite" }\n`,
    );
    const refused = await reloader.reload("test");
    assert.equal(refused.ok, false);
    assert.deepEqual(refused.issues, [{
      path: "usage.sqlite",
      line: 5,
      message: `${dir}/afile is a file, not a directory: the usage database cannot go in it`,
    }]);
    assert.deepEqual(refused.restart_required, []);
    assert.equal(reloader.current(), initial, "the old config still serves (its model m1)");
    assert.ok(logger.lines.some((l) => l.msg === "config_reload_failed"));

    // A place the next start can use is a reload that needs a restart, as before; nothing is made for it yet.
    await Deno.writeTextFile(
      path,
      yaml("http://127.0.0.1:1/v1", "m2") +
        `usage: { sqlite: "${dir}/new/x.sqlite", jsonl: "${dir}/u.jsonl" }\n`,
    );
    const taken = await reloader.reload("test");
    assert.equal(taken.ok, true, JSON.stringify(taken.issues));
    assert.deepEqual(taken.restart_required, ["usage"]);
    assert.equal(reloader.current().config.models.get("chat-a")!.targets[0].model, "m2");
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name).sort(), ["afile", "gateway.yaml"]);

    // A worker's reloader leaves these checks to the primary, which ran them before asking it.
    const worker = createReloader({ path, env: () => ({}), logger, initial, startChecks: false });
    await Deno.writeTextFile(path, yaml("http://127.0.0.1:1/v1") + `usage: { spill: "${dir}/afile/s" }\n`);
    assert.equal((await worker.reload("test")).ok, true);
    assert.equal((await reloader.reload("test")).ok, false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("reload: a telemetry block that would read an OTLP endpoint variable the start refuses is refused", async () => {
  // A block without an endpoint reads OTEL_EXPORTER_OTLP_ENDPOINT, which serve refuses with credentials in it:
  // the reload answered ok (restart_required: ["telemetry"]) and the restart failed.
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/gateway.yaml`;
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: "https://user:pw@collector.example" };
    await Deno.writeTextFile(path, yaml("http://127.0.0.1:1/v1"));
    const first = await loadConfigFile(path, env);
    assert.ok(first.ok);
    const initial = { config: first.config, providers: createProviders(first.config.providers) };
    const reloader = createReloader({ path, env: () => env, logger: createMemoryLogger(), initial });
    await Deno.writeTextFile(path, yaml("http://127.0.0.1:1/v1") + "telemetry: { service_name: gw }\n");
    const refused = await reloader.reload("test");
    assert.equal(refused.ok, false);
    assert.deepEqual(refused.issues.map((i) => i.path), ["telemetry"]);
    assert.match(
      refused.issues[0].message,
      /^OTEL_EXPORTER_OTLP_ENDPOINT must be an http:\/\/ or https:\/\/ URL/,
    );
    assert.doesNotMatch(refused.issues[0].message, /pw/);
    assert.equal(reloader.current(), initial);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("reload: in two phases, a prepared config serves nothing until committed, and a discarded one never", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(path, yaml("http://127.0.0.1:1/v1"));
  const first = await loadConfigFile(path, {});
  assert.ok(first.ok);
  const initial = { config: first.config, providers: createProviders(first.config.providers) };
  const reloader = createReloader({ path, env: () => ({}), logger: createMemoryLogger(), initial });
  const missing = await validateConfigFile(`${dir}/missing.yaml`, {});
  assert.equal(missing.ok, false);
  await Deno.writeTextFile(`${dir}/next.yaml`, yaml("http://127.0.0.1:1/v1", "m2"));
  const validation = await validateConfigFile(`${dir}/next.yaml`, {});

  // A validation that failed prepares nothing: there is nothing to commit.
  assert.equal((await reloader.prepare("test", missing)).ok, false);
  assert.equal(reloader.commit(), false);
  assert.equal(reloader.current(), initial);

  // Prepared, then discarded: never served.
  assert.equal((await reloader.prepare("test", validation)).ok, true);
  assert.equal(reloader.current(), initial, "prepared, not swapped in");
  reloader.discard();
  assert.equal(reloader.commit(), false, "nothing left to commit");
  assert.equal(reloader.current(), initial);

  // Prepared, then committed: served, once.
  assert.equal((await reloader.prepare("test", validation)).ok, true);
  assert.equal(reloader.commit(), true);
  assert.equal(reloader.current().config.models.get("chat-a")!.targets[0].model, "m2");
  assert.equal(reloader.status()?.ok, true);
  assert.equal(reloader.commit(), false, "committed once");
  await Deno.remove(dir, { recursive: true });
});

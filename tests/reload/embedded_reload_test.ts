/**
 * The compiled-in default config (a single binary started without `--config` or `$GATEWAY_CONFIG`) has no
 * file to read again. SIGHUP must still be handled (unhandled, its default action ends the process at once:
 * no drain, the queued usage records lost): the reload is skipped, logged as `config_reload_skipped`, and the
 * gateway serves on. `POST /admin/reload` says the same and `/readyz` shows no failed reload. Both a single
 * thread and `serve --workers 2` (its primary in this process, its workers real threads).
 *
 * @module
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { DEFAULT_CONFIG_TEXT, EMBEDDED_CONFIG_SOURCE } from "../../lib/config/default_config.ts";
import { parseConfigText, validateConfigText } from "../../lib/config/load.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { denoRuntime } from "../../lib/runtime/deno.ts";
import type { Runtime } from "../../lib/runtime/types.ts";
import { type ServeHandle, startServer } from "../../lib/serve.ts";
import { startWorkers } from "../../lib/workers/primary.ts";

const DEV_TOKEN = "gw-local-dev-token-change-me";
const ADMIN = "gw-embedded-admin-0123456789abcdef";
/** The shipped config as compiled in, with no usage database in the working directory and an admin token. */
const TEXT = `${DEFAULT_CONFIG_TEXT}
usage: { sqlite: none }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`;

async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Starts the compiled-in config with no config path, as `serve` does for `<default>`; SIGHUP is captured. */
async function start(workers: number) {
  const parsed = parseConfigText(TEXT, { source: EMBEDDED_CONFIG_SOURCE, env: {} });
  assert.ok(parsed.ok);
  const logs: Record<string, unknown>[] = [];
  const hangups: (() => void)[] = [];
  const runtime: Runtime = {
    ...denoRuntime,
    env: () => ({}),
    onReloadSignal: (handler) => hangups.push(handler),
    writeStdout: (text) => {
      for (const line of text.split("\n")) if (line.trim()) logs.push(JSON.parse(line));
    },
  };
  const state = { config: parsed.config, providers: createProviders(parsed.config.providers, {}) };
  const options = { port: 0, host: "127.0.0.1", unbufferedLogs: true };
  let handle: ServeHandle;
  if (workers === 1) handle = await startServer(runtime, state, options);
  else {
    const validated = validateConfigText(TEXT, {});
    assert.ok(validated.ok);
    handle = await startWorkers(runtime, state, validated.validated, { ...options, workers });
  }
  return { handle, logs, hangups, url: `http://127.0.0.1:${handle.server.port}` };
}

async function chat(url: string): Promise<number> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat-default", messages: [{ role: "user", content: "hi" }] }),
  });
  await res.body?.cancel();
  return res.status;
}

for (const workers of [1, 2]) {
  Deno.test(`embedded config (workers: ${workers}): SIGHUP is handled, the reload skipped and logged; serving goes on`, async () => {
    const { handle, logs, hangups, url } = await start(workers);
    try {
      assert.equal(hangups.length, 1, "no SIGHUP handler: the signal would end the process");
      hangups[0]();
      await until(() => logs.some((l) => l.msg === "config_reload_skipped"), "config_reload_skipped");
      const skipped = logs.find((l) => l.msg === "config_reload_skipped")!;
      assert.equal(skipped.trigger, "signal");
      assert.equal(skipped.config, "<default>");
      assert.match(String(skipped.reason), /compiled-in default config .*--config FILE/);
      assert.ok(!logs.some((l) => l.msg === "config_reload_failed"));
      assert.equal(await chat(url), 200);

      // The admin reload is skipped alike: not swapped in (422, saying why), and no failed reload on /readyz.
      const res = await fetch(`${url}/admin/reload`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      assert.equal(res.status, 422);
      const body = await res.json();
      assert.equal(body.trigger, "admin");
      assert.match(body.issues[0].message, /compiled-in default config/);
      await until(
        () => logs.filter((l) => l.msg === "config_reload_skipped").length === 2,
        "a second config_reload_skipped",
      );
      const ready = await fetch(`${url}/readyz`);
      assert.equal(ready.status, 200);
      assert.equal((await ready.json()).reload, null);
      assert.equal(await chat(url), 200);
    } finally {
      await handle.stop(1_000);
    }
  });
}

/**
 * What a failed reload shows, and to whom: the `config_reload_failed` log line and `POST /admin/reload` (an admin
 * token) have every issue's message; the unauthenticated `/readyz` only how many there are and where the first
 * are. A value written into a key (`api_key:sk-…`, no space after the colon: one key to YAML) is in none of them.
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKENS_YAML, type TestGateway, waitForLogCount } from "../helpers/gateway.ts";

const ADMIN_TOKEN = "gw-reload-issues-admin-0123456789";

/** A valid config whose `up` provider line is `up: { type: openai, base_url: …, <extra> }`. */
function configWith(extra: string): string {
  return `providers:
  local: { type: builtin }
  up: { type: openai, base_url: "http://127.0.0.1:9/v1", ${extra} }
models:
  chat-default: { type: chat, targets: [{ provider: local, model: echo }] }
admin_tokens:
  - { name: ops, token: "${ADMIN_TOKEN}" }
${TEST_TOKENS_YAML}`;
}

/** Replaces the file the way deploy tools do: write a sibling, then rename it over the original. */
async function replaceFile(path: string, text: string) {
  const temp = `${path}.tmp-${crypto.randomUUID()}`;
  await Deno.writeTextFile(temp, text);
  await Deno.rename(temp, path);
}

async function adminReload(gw: TestGateway): Promise<{ status: number; body: string }> {
  const answer = await fetch(`${gw.url}/admin/reload`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  return { status: answer.status, body: await answer.text() };
}

/** Each inline secret as written without a space after a colon, and the path its issue is at (key cut). */
const LEAKS: readonly { line: string; secret: string; path: string }[] = [
  {
    line: "api_key:sk-proj-SECRET0123456789",
    secret: "SECRET0123456789",
    path: "providers.up.api_key:…",
  },
  {
    line: 'headers: {Authorization:"Bearer sk-proj-SECRET9876543210"}',
    secret: "SECRET9876543210",
    path: "providers.up.headers.Authorization:…",
  },
];

Deno.test("reload: a secret written into a key (no space after ':') is in no log line, /readyz or reload answer", async () => {
  const gw = await startGateway(configWith('headers: { X-Org: "org-1" }'));
  try {
    for (const [n, { line, secret, path }] of LEAKS.entries()) {
      await replaceFile(gw.configFile, configWith(line));
      const reload = await adminReload(gw);
      assert.equal(reload.status, 422, reload.body);
      assert.ok(!reload.body.includes(secret), reload.body);
      const issues = JSON.parse(reload.body).issues as { path: string; line: number; message: string }[];
      assert.deepEqual(issues.map((i) => [i.path, i.line]), [[path, 3]]);
      assert.match(issues[0].message, /missing a space after ':'/);

      // The file watch may have reloaded too; every failure logged so far is checked.
      const failures = await waitForLogCount(gw, (l) => l.msg === "config_reload_failed", n + 1);
      for (const failure of failures) {
        const text = JSON.stringify(failure);
        assert.ok(!text.includes(secret), text);
      }
      const logged = failures.at(-1)!.issues as { path: string; message: string }[];
      assert.equal(logged[0].path, path);

      const ready = await fetch(`${gw.url}/readyz`);
      const text = await ready.text();
      assert.equal(ready.status, 200);
      assert.ok(!text.includes(secret), text);
      const body = JSON.parse(text);
      assert.equal(body.reload.ok, false);
      assert.equal(body.reload.errors, 1);
      // Where, never what: the messages stay in the log and the admin answer.
      assert.deepEqual(body.reload.issues, [`line 3: ${path}`]);
    }
  } finally {
    await gw.stop();
  }
});

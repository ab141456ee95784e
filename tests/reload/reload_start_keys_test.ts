/**
 * A reload of keys taken only at start: it succeeds and keeps what the gateway started with, and says so
 * (`restart_required` in the `config_reloaded` log line, the `POST /admin/reload` answer and `/readyz`), counted
 * against the start until a file puts them back. `server.connections.body_timeout` is not one of them: a reload
 * changes it for the bodies read after it.
 */
import assert from "node:assert/strict";
import {
  startGateway,
  TEST_TOKEN,
  TEST_TOKENS_YAML,
  type TestGateway,
  waitForLogCount,
} from "../helpers/gateway.ts";
import { connect, readUntilClosed, send } from "../helpers/raw_http.ts";

const ADMIN_TOKEN = "gw-reload-start-admin-0123456789";

function configWith(server: string, usage: string): string {
  return `server: ${server}
usage: ${usage}
providers:
  local: { type: builtin }
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

/** Reloads through the admin API; the answer's `restart_required`. */
async function adminReload(gw: TestGateway): Promise<unknown> {
  const answer = await fetch(`${gw.url}/admin/reload`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  const status = await answer.json();
  assert.equal(answer.status, 200, JSON.stringify(status));
  return status.restart_required;
}

Deno.test("reload: keys taken only at start are named in restart_required; body_timeout changes at once", async () => {
  const started = "{ connections: { header_timeout: 10s, body_timeout: 60s } }";
  const gw = await startGateway(configWith(started, "{ sqlite: none }"));
  try {
    await replaceFile(
      gw.configFile,
      configWith(
        "{ connections: { header_timeout: 20s, body_timeout: 300ms } }",
        "{ sqlite: none, batch_size: 50 }",
      ),
    );
    const named = ["server.connections.header_timeout", "usage"];
    assert.deepEqual(await adminReload(gw), named);
    // The file watch may have reloaded too: every config_reloaded line from this file names the same keys.
    const logged = await waitForLogCount(gw, (l) => l.msg === "config_reloaded", 1);
    for (const line of logged) assert.deepEqual(line.restart_required, named, JSON.stringify(line));
    const ready = await (await fetch(`${gw.url}/readyz`)).json();
    assert.equal(ready.reload.ok, true);
    assert.deepEqual(ready.reload.restart_required, named);

    // body_timeout is live: a body that stops half-way is answered 408 after the reloaded 300 ms, not 60 s.
    const conn = await connect(gw.url);
    const body = JSON.stringify({
      model: "chat-default",
      messages: [{ role: "user", content: "x".repeat(500) }],
    });
    await send(
      conn,
      `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${TEST_TOKEN}\r\n` +
        `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 100)}`,
    );
    const received = await readUntilClosed(conn, 10_000);
    assert.match(received.text, /^HTTP\/1\.1 408 /, received.text);
    assert.ok(received.after < 5_000, `answered after ${received.after} ms`);

    // Back as started: nothing left to restart for.
    await replaceFile(gw.configFile, configWith(started, "{ sqlite: none }"));
    assert.deepEqual(await adminReload(gw), []);
    assert.deepEqual((await (await fetch(`${gw.url}/readyz`)).json()).reload.restart_required, []);
  } finally {
    await gw.stop();
  }
});

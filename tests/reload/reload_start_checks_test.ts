/**
 * A reload that changes a key taken only at start (`usage`) to a value the next start would refuse is refused, as
 * `check` refuses it, and the previous config keeps serving: it used to answer 200 `ok: true, restart_required:
 * ["usage"]`, and the restart it asked for then failed (`EEXIST … mkdir` for a `usage.sqlite` under a file). The
 * same with `--workers 2`, where the primary decides the reload.
 */
import assert from "node:assert/strict";
import { spawnReplica } from "../helpers/replica.ts";

const ADMIN = "gw-reload-start-checks-admin-0123";

function config(usage: string): string {
  return `usage: ${usage}
providers:
  local: { type: builtin }
models:
  chat-a: { type: chat, targets: [{ provider: local, model: echo }] }
admin_tokens:
  - { name: ops, token: "${ADMIN}" }
`;
}

async function adminReload(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${url}/admin/reload`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, connection: "close" },
  });
  return { status: r.status, body: await r.json() };
}

for (const workers of [[], ["--workers", "2"]]) {
  Deno.test(`reload${workers.length ? " (--workers 2)" : ""}: a usage.sqlite the next start could not open is refused with check's issue; the old config serves`, async () => {
    const dir = await Deno.makeTempDir();
    const file = `${dir}/gateway.yaml`;
    await Deno.writeTextFile(`${dir}/afile`, "");
    await Deno.writeTextFile(file, config(`{ sqlite: "${dir}/usage.sqlite" }`));
    const gw = await spawnReplica(file, workers);
    let stopped = false;
    try {
      // Written in place (the file watch may reload it too: either way the same outcome).
      await Deno.writeTextFile(file, config(`{ sqlite: "${dir}/afile/usage.sqlite" }`));
      const refused = await adminReload(gw.url);
      assert.equal(refused.status, 422, JSON.stringify(refused.body));
      assert.equal(refused.body.ok, false);
      assert.deepEqual(refused.body.issues, [{
        path: "usage.sqlite",
        line: 1,
        message: `${dir}/afile is a file, not a directory: the usage database cannot go in it`,
      }]);
      const ready = await (await fetch(`${gw.url}/readyz`, { headers: { connection: "close" } })).json();
      assert.equal(ready.reload.ok, false, JSON.stringify(ready.reload));
      const usage = await fetch(`${gw.url}/admin/usage`, {
        headers: { authorization: `Bearer ${ADMIN}`, connection: "close" },
      });
      assert.equal(usage.status, 200, "the database the gateway started with still answers");
      await usage.body?.cancel();

      // A place the next start can use: taken, and named as needing a restart.
      await Deno.writeTextFile(file, config(`{ sqlite: "${dir}/next/usage.sqlite" }`));
      const taken = await adminReload(gw.url);
      assert.equal(taken.status, 200, JSON.stringify(taken.body));
      assert.deepEqual(taken.body.restart_required, ["usage"]);
      stopped = true;
      assert.equal(await gw.stop(), 0);
    } finally {
      if (!stopped) await gw.stop();
      await Deno.remove(dir, { recursive: true });
    }
  });
}

/**
 * Teams made through the admin API on two gateway processes over one schema of the shared test database: a
 * team's change made on one replica holds on the other, with no restart and no change of the member token (the
 * team's `models` narrow, then widen, what the member reaches there), and creates of one team name at once
 * over both replicas give one 201 and 409 `team_name_taken` for the rest. The gateways are separate processes:
 * `GATEWAY_BIN` when set (CI's Bun binary), else `deno run main.ts`.
 *
 * A change is awaited as it arrives (tests/helpers/backstop.ts); how soon it arrives (the documented 2 s: the
 * `LISTEN/NOTIFY` at once, the version check every second) is the directory's, held by its own tests
 * (lib/tokens/directory_test.ts) rather than by a clock on a loaded machine.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { dropSchema, randomSchema, TEST_DATABASE_URL } from "../helpers/postgres.ts";
import { type Replica, spawnReplica } from "../helpers/replica.ts";
import { adminCall, race } from "../helpers/token_races.ts";
import { eventually } from "../helpers/backstop.ts";

const ADMIN = "gw-team-replica-admin-0123456789abcdef";

function config(dir: string, schema: string): string {
  return `
postgres: { url: "${TEST_DATABASE_URL}", schema: ${schema}, timeout: 1s, pool_size: 2 }
usage: { spill: "${dir}/spill.jsonl", flush_interval: 50ms }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  chat-other: { type: chat, targets: [ { provider: local, model: echo } ] }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`;
}

async function chatStatus(replica: Replica, secret: string, model: string): Promise<number> {
  const response = await fetch(`${replica.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });
  await response.body?.cancel();
  return response.status;
}

/** Two replicas on a schema of their own; `body` runs with them, then all goes. */
async function withReplicas(body: (a: Replica, b: Replica) => Promise<void>): Promise<void> {
  const schema = randomSchema("gw_team_replicas");
  const dir = await Deno.makeTempDir();
  const replicas: Replica[] = [];
  try {
    for (const name of ["a", "b"]) {
      await Deno.mkdir(`${dir}/${name}`);
      await Deno.writeTextFile(`${dir}/${name}.yaml`, config(`${dir}/${name}`, schema));
    }
    replicas.push(await spawnReplica(`${dir}/a.yaml`));
    replicas.push(await spawnReplica(`${dir}/b.yaml`));
    await body(replicas[0], replicas[1]);
  } finally {
    await Promise.all(replicas.map((r) => r.stop()));
    await dropSchema(schema);
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("team replicas: a team's change on one replica holds on the other", async () => {
  await withReplicas(async (a, b) => {
    const team = await adminCall(a.url, ADMIN, "POST", "/admin/teams", {
      name: "narrow",
      models: ["chat-echo"],
    });
    assert.equal(team.status, 201, JSON.stringify(team.body));
    const issued = await adminCall(a.url, ADMIN, "POST", "/admin/tokens", {
      name: "member",
      models: ["*"],
      team: "narrow",
    });
    assert.equal(issued.status, 201, JSON.stringify(issued.body));
    const secret = String(issued.body.token);
    await eventually(
      "B serves the member, narrowed by its team",
      async () =>
        await chatStatus(b, secret, "chat-echo") === 200 && await chatStatus(b, secret, "chat-other") === 404,
    );

    const widened = await adminCall(a.url, ADMIN, "PATCH", "/admin/teams/narrow", { models: null });
    assert.equal(widened.status, 200, JSON.stringify(widened.body));
    const took = await eventually(
      "B serves the team's change",
      async () => await chatStatus(b, secret, "chat-other") === 200,
    );
    console.log(`team change on B after ${Math.round(took)} ms`); // for the record, not a bound
    const seen = await adminCall(b.url, ADMIN, "GET", "/admin/teams/narrow");
    assert.equal(seen.body.id, team.body.id);
  });
});

Deno.test("team replicas: 6 creates of one team name at once over two replicas give one 201, five 409", async () => {
  await withReplicas(async (a, b) => {
    const answers = await race(
      [a.url, b.url],
      6,
      (url) => adminCall(url, ADMIN, "POST", "/admin/teams", { name: "six" }),
    );
    const statuses = answers.map((x) => x.status).sort();
    assert.deepEqual(statuses, [201, 409, 409, 409, 409, 409], JSON.stringify(answers));
    for (const answer of answers.filter((x) => x.status === 409)) {
      assert.equal(answer.body.error?.code, "team_name_taken");
    }
    const list = await adminCall(b.url, ADMIN, "GET", "/admin/teams");
    assert.equal((list.body as { data: unknown[] }).data.length, 1);
  });
});

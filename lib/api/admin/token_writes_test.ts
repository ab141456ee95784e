/**
 * Changes of a stored token racing another replica's, made deterministic: the memory store is wrapped so that
 * "another replica" writes a rotation of the same token just before this gateway's write lands, as happens
 * when two replicas change one token at the same moment. This gateway's change must then be worked out again
 * over the other one (both secrets keep working), or, when it keeps losing, be refused with 409
 * `token_changed_concurrently` having changed nothing. Also {@linkcode OneAtATime}, the per-token queue.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../auth/authenticate.ts";
import { parseConfigText } from "../../config/load.ts";
import { createMemoryLogger } from "../../log.ts";
import { createProviders } from "../../providers/registry.ts";
import { createGateway } from "../../server.ts";
import { createTokenDirectory } from "../../tokens/directory.ts";
import { OneAtATime } from "../../tokens/one_at_a_time.ts";
import { createMemoryTokenStore } from "../../tokens/store_memory.ts";
import type { AuditEntry, StoredToken, TokenStore } from "../../tokens/types.ts";
import { CHANGE_ATTEMPTS } from "./token_writes.ts";
import type { GatewayState } from "../../http/context.ts";

const ADMIN = "gw-admin-writes-0123456789abcdef";

const CONFIG = `
providers:
  local: { type: builtin }
models:
  chat-a: { type: chat, targets: [ { provider: local, model: echo } ] }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`;

/**
 * The memory store, with "another replica" that rotates a token in (secret `other-<n>`) just before each of
 * the next `times` writes of this gateway that change an existing token.
 */
function contestedStore(times: number) {
  const inner = createMemoryTokenStore();
  const theirs: string[] = [];
  const otherReplicaRotates = async (id: string) => {
    const current = (await inner.loadAll()).tokens.find((t) => t.id === id)!;
    const secret = `gw-other-${theirs.length}-0123456789abcdef`;
    theirs.push(secret);
    const at = new Date(Date.parse(current.updated_at) + 1).toISOString();
    const rotated: StoredToken = {
      ...current,
      secrets: [
        { sha256: hashToken(secret), expires_at: null },
        { sha256: current.secrets[0].sha256, expires_at: new Date(Date.now() + 60_000).toISOString() },
        ...current.secrets.slice(1),
      ].slice(0, 5),
      rotated_at: at,
      updated_at: at,
    };
    const entry: AuditEntry = {
      id: `aud_other_${theirs.length}`,
      time: at,
      actor: "other-replica",
      action: "rotate",
      token_id: id,
      token_name: current.name,
      changes: {},
    };
    await inner.put(rotated, entry, current.updated_at);
  };
  let left = times;
  const store: TokenStore = {
    ...inner,
    async put(token, audit, basedOn) {
      if (audit.action !== "create" && audit.actor === "ops" && left > 0) {
        left--;
        await otherReplicaRotates(token.id);
      }
      return await inner.put(token, audit, basedOn);
    },
  };
  return { store, theirs };
}

function setup(store: TokenStore) {
  const result = parseConfigText(CONFIG, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  const state: GatewayState = { config: result.config, providers: createProviders(result.config.providers) };
  const logger = createMemoryLogger();
  const tokens = createTokenDirectory({ store, logger, pollMs: 60_000 });
  const handler = createGateway({ state: () => state, logger, services: { tokens } });
  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await handler(
      new Request(`http://gateway.test${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    return { status: response.status, body: await response.json() as Record<string, unknown> };
  };
  const chat = async (secret: string) => {
    const response = await handler(
      new Request("http://gateway.test/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "chat-a", messages: [{ role: "user", content: "hi" }] }),
      }),
    );
    await response.body?.cancel();
    return response.status;
  };
  return { admin, chat, close: () => tokens.close() };
}

Deno.test("admin token writes: a rotation that loses to another replica's is made again over it; both secrets work", async () => {
  const { store, theirs } = contestedStore(1);
  const gw = setup(store);
  try {
    const created = await gw.admin("POST", "/admin/tokens", { name: "contested", models: ["chat-a"] });
    const rotated = await gw.admin("POST", `/admin/tokens/${created.body.id}/rotate`, { grace: "60s" });
    assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
    assert.equal(theirs.length, 1, "the other replica rotated in between");
    assert.equal(await gw.chat(String(rotated.body.token)), 200, "ours is current");
    assert.equal(await gw.chat(theirs[0]), 200, "theirs, rotated out by ours, is in grace: not dropped");
    assert.equal(await gw.chat(String(created.body.token)), 200, "the original is in grace too");
    const audit = await gw.admin("GET", `/admin/audit?token=${created.body.id}&action=rotate`);
    const actors = (audit.body.data as { actor: string }[]).map((e) => e.actor);
    assert.deepEqual(actors, ["ops", "other-replica"], "one entry each, ours last");
  } finally {
    await gw.close();
  }
});

Deno.test("admin token writes: a change that keeps losing is a 409 token_changed_concurrently and changes nothing", async () => {
  const { store, theirs } = contestedStore(Infinity);
  const gw = setup(store);
  try {
    const created = await gw.admin("POST", "/admin/tokens", { name: "contested", models: ["chat-a"] });
    const id = String(created.body.id);
    for (
      const [method, path, body] of [
        ["POST", `/admin/tokens/${id}/rotate`, { grace: "60s" }],
        ["PATCH", `/admin/tokens/${id}`, { disabled: true }],
        ["DELETE", `/admin/tokens/${id}`, undefined],
      ] as const
    ) {
      const before = theirs.length;
      const answer = await gw.admin(method, path, body);
      assert.equal(answer.status, 409, `${method}: ${JSON.stringify(answer.body)}`);
      const error = answer.body.error as { code: string; type: string; message: string };
      assert.equal(error.code, "token_changed_concurrently");
      assert.equal(error.type, "invalid_request_error");
      assert.equal(theirs.length - before, CHANGE_ATTEMPTS, `${method}: tried ${CHANGE_ATTEMPTS} times`);
    }
    const audit = await gw.admin("GET", `/admin/audit?token=${id}`);
    const ours = (audit.body.data as { actor: string; action: string }[]).filter((e) => e.actor === "ops");
    assert.deepEqual(ours.map((e) => e.action), ["create"], "no entry for a change that was refused");
    const token = await gw.admin("GET", `/admin/tokens/${id}`);
    assert.equal(token.body.status, "active", "neither disabled nor revoked");
    assert.equal(await gw.chat(theirs.at(-1)!), 200, "the other replica's last rotation holds");
  } finally {
    await gw.close();
  }
});

Deno.test("OneAtATime: one key's work runs in call order, one at a time; a failure does not stop the next", async () => {
  const queue = new OneAtATime();
  const log: string[] = [];
  let release = () => {};
  const gate = new Promise<void>((resolve) => release = resolve);
  const first = queue.run("a", async () => {
    log.push("a1 start");
    await gate;
    log.push("a1 end");
    throw new Error("a1 failed");
  });
  const second = queue.run("a", () => {
    log.push("a2");
    return Promise.resolve(2);
  });
  const other = queue.run("b", () => {
    log.push("b1");
    return Promise.resolve("b");
  });
  assert.equal(await other, "b", "another key does not wait");
  assert.deepEqual(log, ["a1 start", "b1"]);
  release();
  await assert.rejects(first, /a1 failed/);
  assert.equal(await second, 2);
  assert.deepEqual(log, ["a1 start", "b1", "a1 end", "a2"]);
  await new Promise((resolve) => setTimeout(resolve, 0)); // every queued microtask has run
  assert.equal(queue.busy, 0, "idle keys are forgotten");
});

/**
 * `/admin/audit` in-process, over the memory token store: the audit trail with its actor and diff, filters
 * and paging, and that no answer but the issuing one holds a secret, and none a hash.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../auth/authenticate.ts";
import { errorOf, FILE_TOKEN, type Json, OTHER_ADMIN, setup } from "./tokens_test_helpers.ts";

Deno.test("admin audit: who changed what, newest first, filtered and paged; never a secret or a hash", async () => {
  const gw = setup();
  try {
    const created = await gw.admin("POST", "/admin/tokens", { name: "audited", models: ["chat-a"] });
    const id = String(created.body.id);
    const secrets = [String(created.body.token)];
    await gw.admin("PATCH", `/admin/tokens/${id}`, { limits: { rpm: 60 } }, OTHER_ADMIN);
    await gw.admin("PATCH", `/admin/tokens/${id}`, { limits: { rpm: 60 } }, OTHER_ADMIN); // no change: no entry
    const rotated = await gw.admin("POST", `/admin/tokens/${id}/rotate`, { grace: "10s" });
    secrets.push(String(rotated.body.token));
    await gw.admin("DELETE", `/admin/tokens/${id}`);
    const other = await gw.admin("POST", "/admin/tokens", { name: "other", models: ["chat-b"] });
    secrets.push(String(other.body.token));

    const audit = await gw.admin("GET", "/admin/audit");
    assert.equal(audit.status, 200);
    assert.equal(audit.body.object, "list");
    const entries = audit.body.data as Json[];
    assert.deepEqual(entries.map((e) => [e.action, e.token_name, e.actor]), [
      ["create", "other", "ops"],
      ["revoke", "audited", "ops"],
      ["rotate", "audited", "ops"],
      ["update", "audited", "security"],
      ["create", "audited", "ops"],
    ]);
    for (const e of entries) {
      assert.equal(e.object, "gateway.audit_entry");
      assert.match(String(e.id), /^aud_[0-9a-f]{24}$/);
      assert.ok(Number.isFinite(Date.parse(String(e.time))));
    }
    assert.deepEqual(entries[3].changes, { limits: { from: null, to: { rpm: 60 } } });
    assert.equal((entries[2].changes as Json).grace_ms, 10_000);
    assert.equal((entries[4].changes as Json).name, "audited");

    const byToken = await gw.admin("GET", `/admin/audit?token=${id}&action=update`);
    assert.deepEqual((byToken.body.data as Json[]).map((e) => e.actor), ["security"]);
    assert.equal(((await gw.admin("GET", "/admin/audit?actor=security")).body.data as Json[]).length, 1);
    assert.equal(((await gw.admin("GET", "/admin/audit?token=other")).body.data as Json[]).length, 1);
    const page1 = await gw.admin("GET", "/admin/audit?limit=2");
    assert.equal(page1.body.has_more, true);
    const last = (page1.body.data as Json[]).at(-1)!;
    const page2 = await gw.admin("GET", `/admin/audit?limit=10&after=${last.id}`);
    assert.deepEqual((page2.body.data as Json[]).map((e) => e.action), ["rotate", "update", "create"]);
    assert.equal(page2.body.has_more, false);
    for (const [query, param] of [["action=erase", "action"], ["from=soon", "from"], ["limit=0", "limit"]]) {
      assert.equal(errorOf((await gw.admin("GET", `/admin/audit?${query}`)).body).param, param, query);
    }

    // Everything but the answers that issued the secrets, searched as raw text.
    await gw.admin("GET", "/admin/tokens?status=revoked");
    await gw.admin("GET", "/admin/tokens");
    await gw.admin("GET", `/admin/tokens/${id}`);
    const issuing = new Set([created, rotated, other].map((a) => JSON.stringify(a.body)));
    const texts = gw.raw.filter((text) => !issuing.has(JSON.stringify(JSON.parse(text))));
    const forbidden = [...secrets, ...secrets.map(hashToken), hashToken(FILE_TOKEN)];
    for (const text of texts) {
      for (const s of forbidden) assert.ok(!text.includes(s), `an answer holds a secret or hash: ${text}`);
      assert.doesNotMatch(text, /[0-9a-f]{64}/, "nothing that looks like a hash");
    }
    const logs = JSON.stringify(gw.logger.lines);
    for (const s of forbidden) assert.ok(!logs.includes(s), "no secret or hash in the log");
  } finally {
    await gw.close();
  }
});

Deno.test("admin tokens: cache is false, an object or null (cleared), shown as stored and diffed in the audit", async () => {
  const gw = setup();
  try {
    const created = await gw.admin("POST", "/admin/tokens", {
      name: "no-cache",
      models: ["chat-a"],
      cache: false,
    });
    assert.equal(created.status, 201);
    assert.equal(created.body.cache, false, "false is kept, not taken for absent");
    const id = String(created.body.id);
    assert.equal((await gw.admin("GET", `/admin/tokens/${id}`)).body.cache, false);
    assert.equal((await gw.chat(String(created.body.token))).status, 200, "the token still serves");

    const aged = await gw.admin("PATCH", `/admin/tokens/${id}`, { cache: { max_age: "10m" } });
    assert.equal(aged.status, 200);
    const object = { no_store: false, no_cache: false, max_age: 600_000 };
    assert.deepEqual(aged.body.cache, object);
    const cleared = await gw.admin("PATCH", `/admin/tokens/${id}`, { cache: null });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.body.cache, null);
    const unset = await gw.admin("POST", "/admin/tokens", { name: "unset", models: ["chat-a"] });
    assert.equal(unset.body.cache, null, "null when not set");

    const bad = await gw.admin("PATCH", `/admin/tokens/${id}`, { cache: { max_age: -1 } });
    assert.equal(bad.status, 400);
    assert.equal(errorOf(bad.body).param, "cache.max_age");
    assert.match(String(errorOf(bad.body).message), /cache/);
    const notBool = await gw.admin("PATCH", `/admin/tokens/${id}`, { cache: true });
    assert.equal(errorOf(notBool.body).param, "cache");
    assert.match(String(errorOf(notBool.body).message), /expected false or object/);

    const entries = (await gw.admin("GET", `/admin/audit?token=${id}`)).body.data as Json[];
    assert.deepEqual(entries.map((e) => [e.action, e.changes]).slice(0, 2), [
      ["update", { cache: { from: object, to: null } }],
      ["update", { cache: { from: false, to: object } }],
    ]);
    assert.equal((entries[2].changes as Json).cache, false, "the create entry has it");

    const fromFile = (await gw.admin("GET", "/admin/tokens/cfg_from-file")).body;
    assert.equal(fromFile.cache, null, "a config token without cache settings");
  } finally {
    await gw.close();
  }
});

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
    for (const [query, param] of [["action=delete", "action"], ["from=soon", "from"], ["limit=0", "limit"]]) {
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

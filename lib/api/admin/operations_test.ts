/**
 * `GET /admin/config` lists each served token once, with its own expiry: the served token map has one entry
 * per live secret of an issued token, and a rotated-out secret's entry expires at its grace end.
 */
import assert from "node:assert/strict";
import { setup } from "./tokens_test_helpers.ts";

Deno.test("admin config: a rotated token is listed once, with its own expires_at", async () => {
  const g = setup();
  try {
    const expiresAt = new Date(Date.now() + 30 * 86_400_000).toISOString();
    const ids: string[] = [];
    for (const [name, expires] of [["forever", undefined], ["expiring", expiresAt]] as const) {
      const created = await g.admin("POST", "/admin/tokens", {
        name,
        models: ["chat-a"],
        expires_at: expires,
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      ids.push(created.body.id as string);
    }
    for (const id of ids) {
      for (let i = 0; i < 3; i++) {
        assert.equal((await g.admin("POST", `/admin/tokens/${id}/rotate`, { grace: "1h" })).status, 200);
      }
    }
    const config = await g.admin("GET", "/admin/config");
    assert.equal(config.status, 200);
    const tokens = config.body.tokens as { name: string; expires_at: string | null }[];
    assert.deepEqual(
      tokens.map((t) => [t.name, t.expires_at]),
      [["from-file", null], ["expiring", expiresAt], ["forever", null]],
    );
  } finally {
    await g.close();
  }
});

/**
 * `GET /admin/usage?group_by=…` over a real socket answers a bounded page of groups: a minute grain over 1,500
 * minutes of records answers 1,000 groups with `has_more` and `next_offset` (once it answered all of them in
 * one body, a year at minute grain being ~525k groups), the next page the rest, `limit` asks for fewer or
 * more (to 10,000), and a limit or offset out of range is a 400 naming it.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { createSqliteStore } from "../../lib/usage/sqlite_store.ts";
import { startGateway } from "../helpers/gateway.ts";
import { makeRecord } from "../helpers/usage.ts";

const ADMIN = "gw-usage-pages-admin-0123456789";
const MINUTES = 1_500;

Deno.test("admin usage: group_by=minute over 1,500 minutes answers pages of at most 1,000 groups", async () => {
  const dir = await Deno.makeTempDir();
  // Records written before the gateway starts (it opens the same database), recent enough to outlive retention.
  const start = Math.floor(Date.now() / 60_000) * 60_000 - 2 * MINUTES * 60_000;
  const seed = createSqliteStore(`${dir}/usage.sqlite`);
  await seed.insert(Array.from({ length: MINUTES }, (_, i) => ({
    ...makeRecord(i, {
      time: new Date(start + i * 60_000).toISOString(),
      outcome: i % 5 === 0 ? "deny" : "allow",
      rule: i % 5 === 0 ? "token.rpm" : null,
      status: i % 5 === 0 ? 429 : 200,
    }),
    uid: `seed-${i}`,
  })));
  await seed.close();
  const gw = await startGateway(`
providers: { local: { type: builtin } }
models: { chat-a: { type: chat, targets: [ { provider: local, model: echo } ] } }
admin_tokens: [ { name: ops, sha256: ${hashToken(ADMIN)} } ]
usage: { sqlite: "${dir}/usage.sqlite", spill: "${dir}/spill.jsonl", flush_interval: 50ms }
`);
  const get = async (query: string) => {
    const res = await fetch(`${gw.url}/admin/usage?${query}`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    return { status: res.status, body: await res.json() };
  };
  try {
    const first = await get("group_by=minute");
    assert.equal(first.status, 200);
    assert.equal(first.body.groups.length, 1_000);
    assert.equal(first.body.has_more, true);
    assert.equal(first.body.next_offset, 1_000);
    assert.equal(first.body.totals.requests, MINUTES, "the totals are over every record, not the page");
    assert.equal(first.body.totals.denials["token.rpm"], MINUTES / 5);

    const second = await get(`group_by=minute&offset=${first.body.next_offset}`);
    assert.equal(second.body.groups.length, MINUTES - 1_000);
    assert.equal(second.body.has_more, false);
    assert.equal(second.body.next_offset, null);
    const minutes: string[] = [...first.body.groups, ...second.body.groups].map((g) => g.key.minute);
    assert.equal(new Set(minutes).size, MINUTES, "every minute once across the pages");
    assert.deepEqual(minutes, [...minutes].sort(), "oldest first");
    const denied = [...first.body.groups, ...second.body.groups]
      .reduce((n, g) => n + (g.denials["token.rpm"] ?? 0), 0);
    assert.equal(denied, MINUTES / 5, "each page's groups carry their own denials");

    const whole = await get("group_by=minute&limit=10000");
    assert.equal(whole.body.groups.length, MINUTES);
    assert.equal(whole.body.has_more, false);
    const small = await get("group_by=minute&limit=10&offset=20");
    assert.deepEqual(
      small.body.groups.map((g: { key: { minute: string } }) => g.key.minute),
      minutes.slice(20, 30),
    );
    assert.equal(small.body.next_offset, 30);

    for (
      const [query, param] of [["limit=0", "limit"], ["limit=10001", "limit"], ["limit=1e3", "limit"], [
        "offset=-1",
        "offset",
      ]]
    ) {
      const bad = await get(`group_by=minute&${query}`);
      assert.equal(bad.status, 400, query);
      assert.equal(bad.body.error.type, "invalid_request_error");
      assert.equal(bad.body.error.param, param, query);
    }
  } finally {
    await gw.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * The console's `getUsage` pages through a grouped `/admin/usage` (the API answers at most a page of groups), so
 * a breakdown it sorts by requests sees every group, and it stops at its own bound.
 */
import assert from "node:assert/strict";
import { getUsage } from "./api.ts";

/** Answers `/admin/usage` from `groups` total groups, `limit` a page from `offset`, and records the asks. */
function stubUsage(total: number): { asked: URLSearchParams[]; restore: () => void } {
  const asked: URLSearchParams[] = [];
  const original = globalThis.fetch;
  globalThis.fetch = (input: string | URL | Request) => {
    const params = new URL(String(input), "http://console.test").searchParams;
    asked.push(params);
    const limit = Number(params.get("limit") ?? 1000);
    const offset = Number(params.get("offset") ?? 0);
    const count = Math.max(0, Math.min(limit, total - offset));
    const groups = Array.from(
      { length: count },
      (_, i) => ({ key: { token: `t${offset + i}` }, requests: 1 }),
    );
    const more = offset + count < total;
    const body = {
      totals: { requests: total },
      groups,
      has_more: more,
      next_offset: more ? offset + count : null,
    };
    return Promise.resolve(
      new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } }),
    );
  };
  return { asked, restore: () => globalThis.fetch = original };
}

Deno.test("console getUsage: every group of a report that spans several pages", async () => {
  const stub = stubUsage(23_456);
  try {
    const report = await getUsage({ group_by: "token", from: "2026-01-01" });
    assert.equal(report.groups.length, 23_456);
    assert.equal(new Set(report.groups.map((g) => g.key.token)).size, 23_456);
    assert.equal(report.has_more, false);
    assert.deepEqual(stub.asked.map((p) => [p.get("limit"), p.get("offset")]), [
      ["10000", null],
      ["10000", "10000"],
      ["10000", "20000"],
    ]);
    assert.ok(stub.asked.every((p) => p.get("group_by") === "token" && p.get("from") === "2026-01-01"));
  } finally {
    stub.restore();
  }
});

Deno.test("console getUsage: one ask for a report within a page, and a bound of its own", async () => {
  const stub = stubUsage(170);
  try {
    assert.equal((await getUsage({ group_by: "hour" })).groups.length, 170);
    assert.equal(stub.asked.length, 1);
  } finally {
    stub.restore();
  }
  const many = stubUsage(100_000);
  try {
    const report = await getUsage({ group_by: "token" }, 20_000);
    assert.equal(report.groups.length, 20_000);
    assert.equal(report.has_more, true, "what it left is said, not hidden");
  } finally {
    many.restore();
  }
});

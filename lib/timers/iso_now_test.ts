import assert from "node:assert/strict";
import { isoNow } from "./iso_now.ts";

Deno.test("isoNow: toISOString's text, following the clock millisecond by millisecond", () => {
  const realNow = Date.now;
  let ms = Date.UTC(2026, 10, 29, 8, 59, 15, 781);
  Date.now = () => ms;
  try {
    assert.equal(isoNow(), "2026-11-29T08:59:15.781Z");
    assert.equal(isoNow(), "2026-11-29T08:59:15.781Z");
    ms += 1;
    assert.equal(isoNow(), "2026-11-29T08:59:15.782Z");
    ms += 60_000;
    assert.equal(isoNow(), "2026-11-29T09:00:15.782Z");
  } finally {
    Date.now = realNow;
  }
  const before = Date.now();
  const text = isoNow();
  assert.ok(Date.parse(text) >= before && Date.parse(text) <= Date.now());
});

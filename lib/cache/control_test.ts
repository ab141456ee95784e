/**
 * The request's cache control: its `Cache-Control` directives and its token's settings, the stricter winning.
 */
import assert from "node:assert/strict";
import { cacheControl } from "./control.ts";
import type { ResolvedTokenCache } from "../config/types.ts";

const token = (overrides: Partial<ResolvedTokenCache> = {}): ResolvedTokenCache => ({
  noStore: false,
  noCache: false,
  maxAgeMs: null,
  ...overrides,
});

Deno.test("cache control: no header and no token read and write anything", () => {
  assert.deepEqual(cacheControl(null, null), { read: true, write: true, maxAgeMs: null });
  assert.deepEqual(cacheControl(null, undefined), { read: true, write: true, maxAgeMs: null });
  assert.deepEqual(cacheControl("", null), { read: true, write: true, maxAgeMs: null });
});

Deno.test("cache control: no-store neither reads nor writes", () => {
  assert.deepEqual(cacheControl("no-store", null), { read: false, write: false, maxAgeMs: null });
});

Deno.test("cache control: no-cache does not read but writes", () => {
  assert.deepEqual(cacheControl("no-cache", null), { read: false, write: true, maxAgeMs: null });
});

Deno.test("cache control: max-age=N is N seconds in ms", () => {
  assert.deepEqual(cacheControl("max-age=60", null), { read: true, write: true, maxAgeMs: 60_000 });
  assert.deepEqual(cacheControl("max-age=0", null), { read: true, write: true, maxAgeMs: 0 });
});

Deno.test("cache control: combinations", () => {
  assert.deepEqual(cacheControl("no-cache, max-age=5", null), { read: false, write: true, maxAgeMs: 5_000 });
  assert.deepEqual(cacheControl("max-age=5,no-store", null), { read: false, write: false, maxAgeMs: 5_000 });
  assert.deepEqual(cacheControl("no-cache, no-store", null), { read: false, write: false, maxAgeMs: null });
  assert.deepEqual(cacheControl("no-store, no-cache", null), { read: false, write: false, maxAgeMs: null });
});

Deno.test("cache control: directives are case-insensitive", () => {
  assert.deepEqual(cacheControl("No-Store", null), { read: false, write: false, maxAgeMs: null });
  assert.deepEqual(cacheControl("NO-CACHE", null), { read: false, write: true, maxAgeMs: null });
  assert.deepEqual(cacheControl("Max-Age=7", null), { read: true, write: true, maxAgeMs: 7_000 });
});

Deno.test("cache control: whitespace around directives and values is ignored", () => {
  assert.deepEqual(cacheControl("  no-cache  ,   max-age=3  ", null), {
    read: false,
    write: true,
    maxAgeMs: 3_000,
  });
  assert.deepEqual(cacheControl("max-age= 9", null).maxAgeMs, 9_000);
  assert.deepEqual(cacheControl("\tno-store\t", null).write, false);
});

Deno.test("cache control: malformed max-age values and unknown directives are ignored", () => {
  for (
    const header of [
      "max-age",
      "max-age=",
      "max-age=abc",
      "max-age=-1",
      "max-age=1.5",
      "max-age=1e3",
      "max-age=12345678901", // more than 10 digits
      'max-age="5"',
      "private, must-revalidate, only-if-cached",
    ]
  ) {
    assert.deepEqual(cacheControl(header, null), { read: true, write: true, maxAgeMs: null }, header);
  }
  // a malformed one does not hide a good one
  assert.equal(cacheControl("max-age=x, max-age=4", null).maxAgeMs, 4_000);
});

Deno.test("cache control: several max-age take the smallest", () => {
  assert.equal(cacheControl("max-age=30, max-age=10, max-age=20", null).maxAgeMs, 10_000);
  assert.equal(cacheControl("max-age=0, max-age=10", null).maxAgeMs, 0);
});

Deno.test("cache control: a token's settings apply without a header", () => {
  assert.deepEqual(cacheControl(null, token()), { read: true, write: true, maxAgeMs: null });
  assert.deepEqual(cacheControl(null, token({ noStore: true })), {
    read: false,
    write: false,
    maxAgeMs: null,
  });
  assert.deepEqual(cacheControl(null, token({ noCache: true })), {
    read: false,
    write: true,
    maxAgeMs: null,
  });
  assert.deepEqual(cacheControl(null, token({ maxAgeMs: 1_500 })), {
    read: true,
    write: true,
    maxAgeMs: 1_500,
  });
});

Deno.test("cache control: the stricter of token and header wins", () => {
  // the token's no_store beats a header asking nothing, or asking only a max-age
  assert.deepEqual(cacheControl("", token({ noStore: true })), { read: false, write: false, maxAgeMs: null });
  assert.deepEqual(cacheControl("max-age=10", token({ noStore: true })), {
    read: false,
    write: false,
    maxAgeMs: 10_000,
  });
  // a header's no-store beats a token asking nothing
  assert.deepEqual(cacheControl("no-store", token()), { read: false, write: false, maxAgeMs: null });
  // the token's no_cache with a header's no-store: no-store
  assert.deepEqual(cacheControl("no-store", token({ noCache: true })), {
    read: false,
    write: false,
    maxAgeMs: null,
  });
  // a header's no-cache with a token's no_store: no-store
  assert.deepEqual(cacheControl("no-cache", token({ noStore: true })).write, false);
  // max-age: the smaller of the two, whichever side gives it
  assert.equal(cacheControl("max-age=10", token({ maxAgeMs: 5_000 })).maxAgeMs, 5_000);
  assert.equal(cacheControl("max-age=2", token({ maxAgeMs: 5_000 })).maxAgeMs, 2_000);
  assert.equal(cacheControl("max-age=2", token({ maxAgeMs: null })).maxAgeMs, 2_000);
  assert.equal(cacheControl("no-cache", token({ maxAgeMs: 5_000 })).maxAgeMs, 5_000);
  assert.equal(cacheControl("max-age=bad", token({ maxAgeMs: 5_000 })).maxAgeMs, 5_000);
});

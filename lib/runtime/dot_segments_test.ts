import assert from "node:assert/strict";
import { targetHasDotSegment } from "./dot_segments.ts";
import { paramsHaveDotSegment, RAW_DEPTH, rawPathRoutes, resolvedFromOtherPath } from "./bun_dot_segments.ts";

Deno.test("a raw path with a dot segment in any spelling the URL parser resolves is found", () => {
  for (
    const target of [
      "/v1/../admin",
      "/v1/%2e%2e/admin",
      "/v1/%2E%2e/admin",
      "/v1/.%2e/admin",
      "/v1/%2e./admin",
      "/v1/./admin",
      "/v1/%2e/admin",
      "/v1\\..\\admin",
      "/v1/x\\%2e%2e/admin",
      "/..",
      "http://h/v1/%2e%2e/admin",
    ]
  ) {
    assert.equal(targetHasDotSegment(target), true, target);
    // What the URL parser makes of it differs from the raw path: the reason it is refused.
    assert.notEqual(new URL(target, "http://h").pathname, target.replace(/^http:\/\/h/, ""), target);
  }
});

Deno.test("dots that are no segment, or outside the path, are not", () => {
  for (
    const target of [
      "/v1/models/...",
      "/v1/models/.hidden",
      "/v1/models/a..b",
      "/v1/chat/completions?next=/../admin",
      "/v1/x#/../admin",
      "/v1/models/gpt-4.1",
      "/v1/%2e%2e%2fadmin",
      "http://h/v1/models",
      "*",
    ]
  ) {
    assert.equal(targetHasDotSegment(target), false, target);
  }
});

Deno.test("Bun: a route's raw segments are judged alike; a path no route matched, by what it resolved to", () => {
  assert.equal(paramsHaveDotSegment({ s0: "v1", s1: "..", s2: "admin" }), true);
  assert.equal(paramsHaveDotSegment({ s0: "v1\\..\\admin" }), true);
  assert.equal(paramsHaveDotSegment({ s0: "v1", s1: "..." }), false);
  assert.equal(paramsHaveDotSegment(undefined), false);
  // `/x//../../admin` resolves to `/admin`, which a route would have matched had it been sent.
  assert.equal(resolvedFromOtherPath("http://h/admin/tokens"), true);
  assert.equal(resolvedFromOtherPath("/admin/tokens?x=1"), true);
  // A trailing `/` is matched by the routes ending in `/`: reaching fetch, it was resolved from another path.
  assert.equal(resolvedFromOtherPath("http://h/console/"), true);
  assert.equal(resolvedFromOtherPath("http://h/v1/models/"), true);
  // An empty segment, the root, or a path deeper than the routes: sent as it is.
  assert.equal(resolvedFromOtherPath("http://h/v1//models"), false);
  assert.equal(resolvedFromOtherPath("http://h/v1//models/"), false);
  assert.equal(resolvedFromOtherPath("http://h/"), false);
  assert.equal(resolvedFromOtherPath(`http://h${"/a".repeat(RAW_DEPTH + 1)}`), false);
  const routes = Object.keys(rawPathRoutes(0));
  assert.equal(routes.length, 2 * RAW_DEPTH, "each depth with and without a trailing /");
  assert.ok(routes.includes("/:s0/") && routes.includes("/:s0/:s1"));
});

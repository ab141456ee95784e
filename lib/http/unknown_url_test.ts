/**
 * The 404 of an unknown path names the path the caller meant and what to change: a client API path its base
 * URL's `/v1`, an admin path (at the server's root) its trailing `/` or the `/v1` put before it.
 */
import assert from "node:assert/strict";
import { unknownUrl } from "./unknown_url.ts";

const SERVED = new Set(["/v1/chat/completions", "/v1/models", "/admin/tokens", "/admin/teams", "/metrics"]);
const known = (path: string) => SERVED.has(path) || /^\/admin\/tokens\/[^/]+$/.test(path);

Deno.test("unknown url: each likely mistake gets the correction and the hint that fits it", () => {
  const cases: [method: string, path: string, message: string][] = [
    ["POST", "/chat/completions", "Did you mean /v1/chat/completions? The base URL must end in /v1."],
    ["GET", "/v1/v1/models", "Did you mean /v1/models? The base URL must end in /v1, once."],
    ["POST", "/v1/chat/completions/", "Did you mean /v1/chat/completions? Paths take no trailing /."],
    ["GET", "/admin/tokens/", "Did you mean /admin/tokens? Admin paths take no trailing /."],
    ["DELETE", "/admin/teams/", "Did you mean /admin/teams? Admin paths take no trailing /."],
    ["GET", "/admin/tokens/tok_1/", "Did you mean /admin/tokens/tok_1? Admin paths take no trailing /."],
    [
      "GET",
      "/v1/admin/tokens",
      "Did you mean /admin/tokens? The admin API is at the server's root, without /v1.",
    ],
    ["GET", "/metrics/", "Did you mean /metrics? Paths take no trailing /."],
  ];
  for (const [method, path, message] of cases) {
    const error = unknownUrl(method, path, known);
    assert.equal(error.status, 404);
    assert.equal(error.code, "unknown_url");
    assert.equal(error.message, `Invalid URL (${method} ${path}). ${message}`, path);
  }
  assert.equal(unknownUrl("GET", "/nowhere", known).message, "Invalid URL (GET /nowhere)");
});

import assert from "node:assert/strict";
import { ENDPOINTS } from "../config/schema.ts";
import { endpointOf, matchRoute, pathFor, ROUTES, type RouteSpec } from "./endpoints.ts";

Deno.test("endpoint table: every API endpoint name has a route, and every API route has a name", () => {
  const specs = Object.values(ROUTES) as RouteSpec[];
  const named = new Set(specs.map((s) => s.endpoint).filter((e) => e !== null));
  assert.deepEqual([...named].sort(), [...ENDPOINTS].sort());
  for (const spec of specs) assert.equal(spec.path.startsWith("/v1/"), spec.endpoint !== null, spec.path);
});

Deno.test("endpoint table: paths, the path parameter, and endpoint names of unrouted paths", () => {
  assert.equal(matchRoute("/v1/chat/completions")?.id, "chat");
  assert.deepEqual(matchRoute("/v1/models/org%2Fm")?.param, "org/m");
  assert.deepEqual(matchRoute("/v1/models/a/b")?.param, "a/b");
  assert.equal(matchRoute("/v1/models/%zz")?.param, "%zz");
  assert.equal(matchRoute("/v1/models/"), undefined);
  assert.equal(matchRoute("/chat/completions"), undefined);
  assert.equal(endpointOf("/v1/models/x"), "models");
  assert.equal(endpointOf("/v1/models/"), "models");
  assert.equal(endpointOf("/v1/nope"), "other");
  assert.equal(endpointOf("/v1"), "other");
  assert.equal(endpointOf("/metrics"), null);
  assert.equal(pathFor("chat"), "/v1/chat/completions");
  assert.equal(pathFor("embedding"), "/v1/embeddings");
});

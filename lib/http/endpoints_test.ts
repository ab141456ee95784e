import assert from "node:assert/strict";
import { ENDPOINTS } from "../config/schema.ts";
import {
  dialectOf,
  endpointOf,
  genAiOperationOf,
  isAdminPath,
  matchRoute,
  pathFor,
  routeDialect,
  ROUTES,
  type RouteSpec,
} from "./endpoints.ts";

/** A request's headers with nothing that decides a dialect. */
const NONE = new Headers();

Deno.test("endpoint table: every API endpoint name has a route, and every API route has a name", () => {
  const specs = Object.values(ROUTES) as RouteSpec[];
  const named = new Set(specs.map((s) => s.endpoint).filter((e) => e !== null));
  assert.deepEqual([...named].sort(), [...ENDPOINTS].sort());
  const api = (path: string) => path.startsWith("/v1/") || path.startsWith("/v1beta/");
  for (const spec of specs) assert.equal(api(spec.path), spec.endpoint !== null, spec.path);
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

Deno.test("endpoint table: a parameter in the middle of a path is one segment, matched before the rest", () => {
  assert.equal(matchRoute("/v1/responses")?.id, "responses");
  assert.deepEqual(matchRoute("/v1/responses/resp_1"), {
    id: "response",
    spec: ROUTES.response,
    param: "resp_1",
  });
  const items = matchRoute("/v1/responses/resp_1/input_items");
  assert.equal(items?.id, "responseInputItems");
  assert.equal(items?.param, "resp_1");
  assert.equal(matchRoute("/v1/responses/resp%2F1/input_items")?.param, "resp/1");
  assert.deepEqual(matchRoute("/v1/responses/resp_1/cancel"), {
    id: "responseCancel",
    spec: ROUTES.responseCancel,
    param: "resp_1",
  });
  // An id with a slash is not one segment: the rest is the id of the plain route (a 404 for no such response).
  assert.deepEqual(matchRoute("/v1/responses/a/b/input_items")?.param, "a/b/input_items");
  assert.equal(matchRoute("/v1/responses//input_items")?.id, "response");
  assert.equal(matchRoute("/v1/responses/input_items")?.id, "response");
  assert.equal(matchRoute("/v1/responses/"), undefined);
  assert.equal(endpointOf("/v1/responses/resp_1/input_items"), "responses");
  assert.equal(endpointOf("/v1/responses/resp_1"), "responses");
});

Deno.test("endpoint table: the Messages API's paths speak Anthropic's dialect, the others OpenAI's", () => {
  assert.equal(matchRoute("/v1/messages")?.id, "messages");
  assert.equal(matchRoute("/v1/messages/count_tokens")?.id, "messagesCountTokens");
  assert.equal(endpointOf("/v1/messages/count_tokens"), "messages");
  assert.equal(dialectOf("/v1/messages", NONE), "anthropic");
  assert.equal(dialectOf("/v1/messages/count_tokens", NONE), "anthropic");
  assert.equal(dialectOf("/v1/chat/completions", NONE), undefined);
  // Paths under the Messages API no route serves (its batches, a trailing slash) answer in its shape too.
  assert.equal(dialectOf("/v1/messages/batches", NONE), "anthropic");
  assert.equal(dialectOf("/v1/messages/", NONE), "anthropic");
  assert.equal(dialectOf("/v1/messagesx", NONE), undefined);
  // Chat aliases still point clients to chat completions.
  assert.equal(pathFor("chat"), "/v1/chat/completions");
});

Deno.test("endpoint table: /v1/models speaks Anthropic's dialect to a request with anthropic-version only", () => {
  const anthropic = new Headers({ "anthropic-version": "2023-06-01" });
  for (const path of ["/v1/models", "/v1/models/claude-x", "/v1/models/org/m"]) {
    assert.equal(dialectOf(path, NONE), undefined, path);
    assert.equal(dialectOf(path, anthropic), "anthropic", path);
  }
  assert.equal(dialectOf("/v1/chat/completions", anthropic), undefined);
  assert.equal(dialectOf("/v1/responses/abc", anthropic), undefined);
  assert.equal(dialectOf("/v1beta/models", anthropic), "google");
  assert.equal(routeDialect(ROUTES.models, anthropic), "anthropic");
  assert.equal(routeDialect(ROUTES.chat, anthropic), undefined);
});

Deno.test("endpoint table: every admin route is in the admin namespace, which is /admin and below only", () => {
  for (const spec of Object.values(ROUTES) as RouteSpec[]) {
    if (spec.auth === "admin") assert.ok(isAdminPath(spec.path), spec.path);
  }
  for (const path of ["/admin", "/admin/", "/admin/nope", "/admin/tokens/x/rotate"]) {
    assert.ok(isAdminPath(path), path);
  }
  for (const path of ["/administrator", "/adminx/tokens", "/v1/admin", "/", "/Admin/tokens", "/console"]) {
    assert.equal(isAdminPath(path), false, path);
  }
});

Deno.test("endpoint table: a trailing / after a parameter is no route, but where the parameter is an alias's name", () => {
  // Every parameter route of the table, with a value whose path ends in `/`: only an alias name may end so.
  const cases: [path: string, served: string | undefined][] = [
    ["/admin/tokens/tok_1/", undefined],
    ["/admin/tokens/tok_1/rotate/", undefined],
    ["/admin/teams/platform/", undefined],
    ["/v1/responses/resp_1/", undefined],
    ["/v1/responses/resp_1/input_items/", undefined],
    ["/v1/responses/resp_1/cancel/", undefined],
    ["/console/app.js/", undefined],
    ["/v1/models/org/", "model"],
    ["/v1beta/models/org/", "geminiModel"],
  ];
  const parameterRoutes = (Object.entries(ROUTES) as [string, RouteSpec][]).filter(([, s]) =>
    s.path.includes("{")
  );
  for (const [id, spec] of parameterRoutes) {
    const prefix = spec.path.slice(0, spec.path.indexOf("{"));
    assert.ok(cases.some(([path]) => path.startsWith(prefix)), `route ${id} has a case`);
  }
  for (const [path, served] of cases) assert.equal(matchRoute(path)?.id, served, path);
  assert.equal(matchRoute("/v1/models/org/")?.param, "org/");
  assert.equal(matchRoute("/admin/tokens/tok_1")?.param, "tok_1");
  assert.equal(matchRoute("/admin/tokens/tok_1/rotate")?.id, "tokenRotate");
});

Deno.test("genAiOperationOf: a generation is chat (generate_content on the Gemini API), an embedding embeddings on every API, a moderation moderations; anything else none", () => {
  const cases: [string, string, string | null][] = [
    ["POST", "/v1/chat/completions", "chat"],
    ["POST", "/v1/responses", "chat"],
    ["POST", "/v1/responses/compact", "chat"],
    ["POST", "/v1/messages", "chat"],
    ["POST", "/v1beta/models/gem:generateContent", "generate_content"],
    ["POST", "/v1beta/models/gem:streamGenerateContent", "generate_content"],
    // An alias may hold ':' (the method is after the last one), and the client may percent-encode it.
    ["POST", "/v1beta/models/llama3:8b:generateContent", "generate_content"],
    ["POST", "/v1beta/models/gem%3AgenerateContent", "generate_content"],
    ["POST", "/v1/embeddings", "embeddings"],
    ["POST", "/v1beta/models/emb:embedContent", "embeddings"],
    ["POST", "/v1beta/models/emb:batchEmbedContents", "embeddings"],
    ["POST", "/v1/moderations", "moderations"],
    // Token counts ask no model to answer; nor do listings or stored responses.
    ["POST", "/v1/responses/input_tokens", null],
    ["POST", "/v1/messages/count_tokens", null],
    ["POST", "/v1beta/models/gem:countTokens", null],
    ["POST", "/v1/responses/resp_1/cancel", null],
    ["GET", "/v1/responses/resp_1", null],
    ["GET", "/v1/models", null],
    ["GET", "/v1beta/models", null],
    ["GET", "/v1beta/models/gem", null],
    // A Gemini model read with GET is no generation, whatever its name ends in.
    ["GET", "/v1beta/models/gem:generateContent", null],
    ["GET", "/v1/chat/completions", null],
    // Not a method of the route: an alias without a method (a 404), an unknown or inherited name.
    ["POST", "/v1beta/models/generateContent", null],
    ["POST", "/v1beta/models/gem:", null],
    ["POST", "/v1beta/models/gem:predict", null],
    ["POST", "/v1beta/models/gem:constructor", null],
    ["POST", "/v1beta/models/gem:__proto__", null],
    ["POST", "/v1/nothing", null],
    ["POST", "/admin/reload", null],
  ];
  for (const [method, path, operation] of cases) {
    assert.equal(genAiOperationOf(method, path), operation, `${method} ${path}`);
  }
});

import assert from "node:assert/strict";
import { parseRoute, queryString, routeHash, splitList } from "./query.ts";

Deno.test("queryString leaves out empty values and encodes the rest", () => {
  assert.equal(
    queryString({ a: "x y&z", b: "", c: 2, d: null, e: undefined, f: false }),
    "?a=x+y%26z&c=2&f=false",
  );
  assert.equal(queryString({ a: "" }), "");
});

Deno.test("parseRoute reads the view, the rest and the parameters", () => {
  assert.deepEqual(parseRoute("#/overview?range=7d&token=ci-bot"), {
    view: "overview",
    rest: "",
    params: { range: "7d", token: "ci-bot" },
  });
  assert.deepEqual(parseRoute("#/tokens/tok_1"), { view: "tokens", rest: "tok_1", params: {} });
  assert.deepEqual(parseRoute("#/tokens/a%2Fb?x=1"), { view: "tokens", rest: "a/b", params: { x: "1" } });
  assert.deepEqual(parseRoute(""), { view: "", rest: "", params: {} });
  assert.deepEqual(parseRoute("#/bad%zz"), { view: "bad%zz", rest: "", params: {} });
});

Deno.test("routeHash round-trips through parseRoute", () => {
  const hash = routeHash("tokens", { status: "revoked", q: "a b" }, "tok/1");
  assert.equal(hash, "#/tokens/tok%2F1?status=revoked&q=a+b");
  assert.deepEqual(parseRoute(hash), {
    view: "tokens",
    rest: "tok/1",
    params: { status: "revoked", q: "a b" },
  });
  assert.equal(routeHash("explain", { token: "ci-bot", model: "" }), "#/explain?token=ci-bot");
});

Deno.test("splitList trims and drops empty entries", () => {
  assert.deepEqual(splitList(" chat-*, embed ,, "), ["chat-*", "embed"]);
  assert.deepEqual(splitList(""), []);
});

import assert from "node:assert/strict";
import { MAX_UPSTREAM_MESSAGE, upstreamHttpError, upstreamStreamError } from "./upstream_error.ts";

const KEY = "sk-proj-Xq7vB2mN9pL4kR8tW1zY6cJ3hG5d";

Deno.test("upstream errors: the provider's key is masked in every field, whole and quoted in part", () => {
  const body = JSON.stringify({
    error: {
      message: `bad ${KEY.slice(0, 14)}…`,
      type: "invalid_request_error",
      param: KEY,
      code: `x_${KEY}`,
    },
  });
  const err = upstreamHttpError("p", 400, body, new Headers(), [KEY]);
  assert.equal(err.message, "bad sk-***…");
  assert.equal(err.param, "***");
  assert.equal(err.code, "x_***");
  const streamed = upstreamStreamError("p", { error: { message: KEY, code: KEY.slice(4, 20) } }, [KEY]);
  assert.equal(streamed.message, "***");
  assert.equal(streamed.code, "***");
});

Deno.test("upstream errors: only well-formed retry headers pass, and huge messages are cut", () => {
  const headers = new Headers({ "retry-after": `3 ${KEY}`, "retry-after-ms": "1500" });
  const err = upstreamHttpError(
    "p",
    429,
    JSON.stringify({ error: { message: "x".repeat(100_000) } }),
    headers,
  );
  assert.deepEqual(new Headers(err.headers).get("retry-after"), null);
  assert.equal(new Headers(err.headers).get("retry-after-ms"), "1500");
  assert.equal(err.message.length, MAX_UPSTREAM_MESSAGE + 1);
  const dated = upstreamHttpError(
    "p",
    503,
    "",
    new Headers({ "retry-after": "Wed, 21 Oct 2015 07:28:00 GMT" }),
  );
  assert.equal(new Headers(dated.headers).get("retry-after"), "Wed, 21 Oct 2015 07:28:00 GMT");
});

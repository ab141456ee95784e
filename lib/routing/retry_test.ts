import assert from "node:assert/strict";
import { GatewayError } from "../errors.ts";
import { upstreamHttpError } from "../providers/shared/upstream_error.ts";
import { type AttemptRecord, route } from "./route.ts";
import { alias, deps, scripted, SETTINGS, signal, target, upstream } from "./route_test_helpers.ts";
import { upstreamForbidsRetry } from "./retry.ts";

/** Anthropic's 429 as the provider module turns it into the attempt's error, with `x-should-retry` when given. */
function rateLimited(shouldRetry?: string): GatewayError {
  const headers = new Headers({ "retry-after": "0" });
  if (shouldRetry !== undefined) headers.set("x-should-retry", shouldRetry);
  const body = { message: "spend limit reached", type: "rate_limit_error", code: null, param: null };
  return upstreamHttpError("claude", 429, body, headers);
}

Deno.test("route: a 429 marked x-should-retry: false is not retried on its target, but falls back to the next", async () => {
  const { deps: d, sleeps } = deps();
  const { calls, attempt } = scripted({
    a: [rateLimited("false"), rateLimited("false"), rateLimited("false")],
  });
  const attempts: AttemptRecord[] = [];
  const routed = await route(
    alias("fallback", [target("a", { retries: 2 }), target("b")]),
    SETTINGS,
    d,
    signal,
    attempts,
    attempt,
  );
  assert.equal(routed.value, "b answered");
  assert.deepEqual(calls, ["a", "b"], "one attempt on a, then b");
  assert.deepEqual(attempts.map((a) => a.outcome), ["429", "ok"]);
  assert.deepEqual(sleeps, [], "no backoff before the fallback");
  const a = d.health.snapshot().find((s) => s.provider === "a");
  assert.equal(a?.consecutive_failures, 1, "still the attempt's failure, as any 429");
});

Deno.test("route: the same 429 without x-should-retry (or with true) is retried on its target as before", async () => {
  for (const shouldRetry of [undefined, "true"]) {
    const { deps: d, sleeps } = deps();
    const { calls, attempt } = scripted({
      a: [rateLimited(shouldRetry), rateLimited(shouldRetry), rateLimited()],
    });
    const routed = await route(
      alias("fallback", [target("a", { retries: 2 }), target("b")]),
      SETTINGS,
      d,
      signal,
      [],
      attempt,
    );
    assert.equal(routed.value, "b answered", String(shouldRetry));
    assert.deepEqual(calls, ["a", "a", "a", "b"], String(shouldRetry));
    assert.deepEqual(sleeps, [0, 0], "the upstream's Retry-After: 0");
  }
});

Deno.test("route: the last target's x-should-retry: false is the client's answer, header kept, after one attempt", async () => {
  const { deps: d } = deps();
  const { calls, attempt } = scripted({ a: [rateLimited("false"), rateLimited("false")] });
  await assert.rejects(
    route(alias("fallback", [target("a", { retries: 2 })]), SETTINGS, d, signal, [], attempt),
    (err: unknown) => {
      assert.ok(err instanceof GatewayError && err.status === 429);
      assert.equal(new Headers(err.headers).get("x-should-retry"), "false");
      return true;
    },
  );
  assert.deepEqual(calls, ["a"]);
});

// The gateway's own rules decide what is retried: "true" never makes a client's mistake worth another attempt.
Deno.test("route: x-should-retry: true on a status the gateway does not retry (409) is answered at once", async () => {
  const { deps: d } = deps();
  const { calls, attempt } = scripted({ a: [upstream(409, { "x-should-retry": "true" })] });
  await assert.rejects(
    route(alias("fallback", [target("a", { retries: 2 }), target("b")]), SETTINGS, d, signal, [], attempt),
    (err: unknown) => err instanceof GatewayError && err.status === 409,
  );
  assert.deepEqual(calls, ["a"]);
});

Deno.test("upstreamForbidsRetry: only an exact x-should-retry: false on a gateway error", () => {
  assert.equal(upstreamForbidsRetry(upstream(503, { "x-should-retry": "false" })), true);
  assert.equal(upstreamForbidsRetry(upstream(503, { "x-should-retry": "true" })), false);
  assert.equal(upstreamForbidsRetry(upstream(503)), false);
  assert.equal(upstreamForbidsRetry(new Error("x-should-retry: false")), false);
});

import assert from "node:assert/strict";
import type { ResolvedModel, ResolvedToken } from "../config/types.ts";
import { rateChecks, tpmCharge } from "./rate_limiter.ts";

Deno.test("tpmCharge: the estimate rounded up, capped at the limit; nothing for no estimate", () => {
  assert.equal(tpmCharge(99.2, 1000), 100);
  assert.equal(tpmCharge(5000, 1000), 1000);
  assert.equal(tpmCharge(0, 1000), 0);
  assert.equal(tpmCharge(-3, 1000), 0);
  assert.equal(tpmCharge(Number.NaN, 1000), 0);
});

Deno.test("rateChecks: judged concurrency, RPM, TPM, token before alias, keys per scope, owner and kind", () => {
  // The token's counters are keyed by its identity, not its name (a reissued name is another token).
  const token = {
    name: "svc",
    id: "a:b",
    limits: { rpm: 10, tpm: 100, concurrent: 2 },
  } as unknown as ResolvedToken;
  const model = { alias: "chat/x", limits: { rpm: 5, concurrent: 1 } } as unknown as ResolvedModel;
  const checks = rateChecks(token, model, 42);
  assert.deepEqual(checks.map((c) => [c.rule, c.check.key]), [
    ["token.concurrent", "token:a:b:concurrent"],
    ["alias.concurrent", "alias:chat/x:concurrent"],
    ["token.rpm", "token:a:b:rpm"],
    ["alias.rpm", "alias:chat/x:rpm"],
    ["token.tpm", "token:a:b:tpm"],
  ]);
  assert.deepEqual(checks[4].check, {
    kind: "bucket",
    key: "token:a:b:tpm",
    limit: 100,
    windowMs: 60_000,
    amount: 42,
  });
  assert.equal(checks[0].name, "token svc");
  assert.deepEqual(rateChecks({ ...token, limits: null }, undefined, 42), []);
});

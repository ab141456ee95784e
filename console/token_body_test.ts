import assert from "node:assert/strict";
import { createBody, FormError, formValuesOf, patchBody, type TokenFormValues } from "./token_body.ts";
import type { Token } from "./types.ts";

const EMPTY: TokenFormValues = {
  name: "",
  environment: "",
  models: "",
  endpoints: "",
  rpm: "",
  tpm: "",
  concurrent: "",
  budgetTokens: "",
  budgetPeriod: "month",
  maxTokens: "",
  expiresAt: "",
  description: "",
};

const TOKEN: Token = {
  id: "tok_1",
  name: "ci-bot",
  environment: "staging",
  description: null,
  source: "api",
  status: "active",
  models: ["chat-*"],
  endpoints: null,
  limits: { rpm: 60 },
  budget: { cost: 5, period: "day" },
  max_tokens: null,
  cache: null,
  expires_at: "2020-01-01T00:00:00.000Z",
  disabled: false,
  created_at: null,
  updated_at: null,
  created_by: null,
  rotated_at: null,
  revoked_at: null,
};

Deno.test("createBody sends what is set and leaves the rest out", () => {
  assert.deepEqual(
    createBody({
      ...EMPTY,
      name: " console-made ",
      models: "chat-default, embed-*",
      rpm: "30",
      description: "x",
    }),
    { name: "console-made", models: ["chat-default", "embed-*"], limits: { rpm: 30 }, description: "x" },
  );
  assert.deepEqual(
    createBody({
      ...EMPTY,
      name: "a",
      models: "m",
      budgetTokens: "1000",
      budgetPeriod: "day",
      endpoints: "chat",
    }),
    { name: "a", models: ["m"], budget: { tokens: 1000, period: "day" }, endpoints: ["chat"] },
  );
});

Deno.test("a number field that is not a whole number names the API's field", () => {
  assert.throws(() => createBody({ ...EMPTY, name: "a", models: "m", tpm: "1.5" }), (err: unknown) => {
    return err instanceof FormError && err.param === "limits.tpm";
  });
});

Deno.test("patchBody sends only what changed; a money budget and a passed expiry survive an edit", () => {
  const values = formValuesOf(TOKEN);
  assert.deepEqual(patchBody(values, TOKEN), {});
  assert.deepEqual(patchBody({ ...values, rpm: "", concurrent: "2" }, TOKEN), { limits: { concurrent: 2 } });
  assert.deepEqual(patchBody({ ...values, budgetTokens: "10" }, TOKEN), {
    budget: { cost: 5, period: "day", tokens: 10 },
  });
  assert.deepEqual(patchBody({ ...values, expiresAt: "" }, TOKEN), { expires_at: null });
  assert.deepEqual(patchBody({ ...values, description: "new", models: "a,b" }, TOKEN), {
    description: "new",
    models: ["a", "b"],
  });
});

import assert from "node:assert/strict";
import { configSchema } from "./schema.ts";

const base = { providers: {}, models: {} };
const DAY = 86_400_000;

Deno.test("config responses.retention: 30 days unless set, a duration when set", () => {
  assert.equal(configSchema.parse(base).responses.retention, 30 * DAY);
  assert.equal(configSchema.parse({ ...base, responses: {} }).responses.retention, 30 * DAY);
  assert.equal(configSchema.parse({ ...base, responses: { retention: "7d" } }).responses.retention, 7 * DAY);
  assert.equal(configSchema.parse({ ...base, responses: { retention: "12h" } }).responses.retention, DAY / 2);
});

Deno.test("config responses: a bad retention or an unknown key is refused with its path", () => {
  for (const responses of [{ retention: "soon" }, { retention: -1 }, { keep: "7d" }]) {
    const parsed = configSchema.safeParse({ ...base, responses });
    assert.ok(!parsed.success, JSON.stringify(responses));
    assert.equal(parsed.error.issues[0].path[0], "responses");
  }
});

Deno.test("config native_responses: false unless set, on openai and azure providers only", () => {
  const providers = {
    o: { type: "openai", base_url: "https://api.openai.com/v1" },
    on: { type: "openai", base_url: "https://api.openai.com/v1", native_responses: true },
    a: {
      type: "azure",
      base_url: "https://r.openai.azure.com/openai/v1",
      api_key: "k",
      native_responses: true,
    },
  };
  const parsed = configSchema.parse({ ...base, providers }).providers as Record<
    string,
    { native_responses?: boolean }
  >;
  assert.deepEqual([parsed.o.native_responses, parsed.on.native_responses, parsed.a.native_responses], [
    false,
    true,
    true,
  ]);
  for (
    const provider of [
      { type: "anthropic", api_key: "k", native_responses: true },
      { type: "openai", base_url: "https://api.openai.com/v1", native_responses: "yes" },
    ]
  ) {
    const result = configSchema.safeParse({ ...base, providers: { p: provider } });
    assert.ok(!result.success, JSON.stringify(provider));
    assert.deepEqual(result.error.issues[0].path.slice(0, 2), ["providers", "p"]);
  }
});

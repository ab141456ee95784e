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

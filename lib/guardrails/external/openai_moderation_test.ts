/**
 * The OpenAI moderation adapter against the moderation fake over a real socket: the request (key, model,
 * every text in one `input`), allow, deny by `flagged` and by a configured threshold, `action_on_flag: flag`,
 * answers that do not match the documented shape, a 401 whose body repeats part of the key, and abort.
 */
import assert from "node:assert/strict";
import { FAKE_MODERATION_KEY, startFakeModeration } from "../../../tests/helpers/fake_guardrails.ts";
import { caughtCategories, createOpenAIModerationGuardrail } from "./openai_moderation.ts";
import { abortStops, input, never, rejectsWithout } from "./test_helpers.ts";

async function withFake(
  fn: (fake: ReturnType<typeof startFakeModeration>, baseUrl: string) => Promise<void>,
) {
  const fake = startFakeModeration();
  try {
    await fn(fake, `${fake.url}/v1/`);
  } finally {
    await fake.stop();
  }
}

Deno.test("openai_moderation: sends every text in one call with the key and model; clean texts are allowed", () =>
  withFake(async (fake, base_url) => {
    const service = createOpenAIModerationGuardrail({ base_url, api_key: FAKE_MODERATION_KEY });
    assert.deepEqual(await service.check(input(["hello", "how are you"]), never), { action: "allow" });
    assert.equal(fake.calls.length, 1);
    assert.equal(fake.calls[0].path, "/v1/moderations");
    assert.deepEqual(fake.calls[0].body, {
      model: "omni-moderation-latest",
      input: ["hello", "how are you"],
    });
    assert.equal(fake.calls[0].headers.authorization, "<redacted>");
    assert.deepEqual(await service.check(input([]), never), { action: "allow" });
    assert.equal(fake.calls.length, 1, "no texts, no call");
  }));

Deno.test("openai_moderation: a flagged text is denied with its categories", () =>
  withFake(async (_fake, base_url) => {
    const service = createOpenAIModerationGuardrail({ base_url, api_key: FAKE_MODERATION_KEY, model: "m-1" });
    assert.deepEqual(await service.check(input(["fine", "we attack at dawn"]), never), {
      action: "deny",
      reason: "flagged by moderation: violence",
      categories: ["violence"],
    });
  }));

Deno.test("openai_moderation: thresholds catch unflagged scores; action_on_flag flag only records", () =>
  withFake(async (_fake, base_url) => {
    const strict = createOpenAIModerationGuardrail({
      base_url,
      api_key: FAKE_MODERATION_KEY,
      thresholds: { harassment: 0.3, sexual: 0.5 },
    });
    assert.deepEqual(await strict.check(input(["a borderline remark"]), never), {
      action: "deny",
      reason: "flagged by moderation: harassment",
      categories: ["harassment"],
    });
    const lenient = createOpenAIModerationGuardrail({
      base_url,
      api_key: FAKE_MODERATION_KEY,
      thresholds: { harassment: 0.5 },
      action_on_flag: "flag",
    });
    assert.deepEqual(await lenient.check(input(["a borderline remark"]), never), { action: "allow" });
    assert.deepEqual(await lenient.check(input(["attack", "borderline attack"]), never), {
      action: "flag",
      categories: ["violence"],
    });
  }));

Deno.test("caughtCategories: malformed answers throw; categories are deduplicated and sorted", () => {
  const result = (
    flagged: boolean,
    categories: Record<string, unknown>,
    scores: Record<string, unknown> = {},
  ) => ({
    flagged,
    categories,
    category_scores: scores,
  });
  assert.throws(() => caughtCategories({}, 1, {}), /expected `results`/);
  assert.throws(() => caughtCategories({ results: [] }, 1, {}), /0 results for 1 inputs/);
  assert.throws(() => caughtCategories({ results: [{ flagged: "yes" }] }, 1, {}), /boolean `flagged`/);
  assert.throws(() => caughtCategories({ results: [{ flagged: true }] }, 1, {}), /objects/);
  assert.throws(() => caughtCategories({ results: [result(true, { hate: 1 })] }, 1, {}), /not a boolean/);
  assert.throws(
    () => caughtCategories({ results: [result(false, {}, { hate: "x" })] }, 1, {}),
    /not a number/,
  );
  const answer = {
    results: [
      result(true, { violence: true, hate: false, illicit: null }, { violence: 0.9, illicit: null }),
      result(true, { violence: true, "self-harm": true }),
    ],
  };
  assert.deepEqual(caughtCategories(answer, 2, {}), ["self-harm", "violence"]);
  assert.deepEqual(caughtCategories({ results: [result(true, {})] }, 1, {}), []);
  assert.equal(caughtCategories({ results: [result(false, {}, { constructor: 1 })] }, 1, {}), null);
});

Deno.test("openai_moderation: a 401 throws without the key or the texts", () =>
  withFake(async (_fake, base_url) => {
    const key = "sk-wrong-key-for-this-test-123456";
    const service = createOpenAIModerationGuardrail({ base_url, api_key: key });
    const error = await rejectsWithout(service.check(input(["some private words"]), never), [
      key,
      key.slice(0, 8),
      "some private words",
    ]);
    assert.match(error.message, /HTTP 401 \(invalid_api_key\)/);
  }));

Deno.test("openai_moderation: a 500 whose body echoes the texts throws without them", () =>
  withFake(async (fake, base_url) => {
    fake.faults.failStatus = 500;
    const service = createOpenAIModerationGuardrail({ base_url, api_key: FAKE_MODERATION_KEY });
    const error = await rejectsWithout(service.check(input(["private words"]), never), [
      "private words",
      FAKE_MODERATION_KEY,
    ]);
    assert.match(error.message, /HTTP 500 \(server_error\)/);
  }));

Deno.test("openai_moderation: aborting the signal stops the call", () =>
  withFake(async (fake, base_url) => {
    const service = createOpenAIModerationGuardrail({ base_url, api_key: FAKE_MODERATION_KEY });
    await abortStops(fake, (signal) => service.check(input(["slow"]), signal));
  }));

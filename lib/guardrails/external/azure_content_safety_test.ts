/**
 * The Azure Content Safety adapter against its fake over a real socket: one call per text with the key and
 * four severity levels, allow, deny at the threshold (global and per category), blocklists, long texts split
 * into pieces the service accepts with bounded concurrency, malformed answers, leaks, and abort.
 */
import assert from "node:assert/strict";
import { FAKE_AZURE_CS_KEY, startFakeAzureContentSafety } from "../../../tests/helpers/fake_guardrails.ts";
import {
  type AzureContentSafetyConfig,
  caughtCategories,
  createAzureContentSafetyGuardrail,
  splitText,
} from "./azure_content_safety.ts";
import { abortStops, input, never, rejectsWithout } from "./test_helpers.ts";

type Fake = ReturnType<typeof startFakeAzureContentSafety>;

async function withFake(fn: (fake: Fake, config: AzureContentSafetyConfig) => Promise<void>) {
  const fake = startFakeAzureContentSafety();
  try {
    await fn(fake, { endpoint: `${fake.url}/`, api_key: FAKE_AZURE_CS_KEY });
  } finally {
    await fake.stop();
  }
}

Deno.test("azure_content_safety: one call per text, with the key, the api-version and four levels", () =>
  withFake(async (fake, config) => {
    const service = createAzureContentSafetyGuardrail(config);
    assert.deepEqual(await service.check(input(["hello", "", "a mild insult"]), never), { action: "allow" });
    assert.equal(fake.calls.length, 2, "the empty text is not sent");
    assert.equal(fake.calls[0].path, "/contentsafety/text:analyze");
    assert.equal(fake.calls[0].query, "?api-version=2024-09-01");
    assert.equal(fake.calls[0].headers["ocp-apim-subscription-key"], "<redacted>");
    assert.deepEqual(
      fake.calls.map((c) => c.body).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
      [
        { text: "a mild insult", outputType: "FourSeverityLevels" },
        { text: "hello", outputType: "FourSeverityLevels" },
      ],
    );
  }));

Deno.test("azure_content_safety: severities at the threshold deny, per-category thresholds override", () =>
  withFake(async (_fake, config) => {
    const service = createAzureContentSafetyGuardrail(config);
    assert.deepEqual(await service.check(input(["violent words", "hateful words", "mild"]), never), {
      action: "deny",
      reason: "flagged by content safety: Hate, Violence",
      categories: ["Hate", "Violence"],
    });
    const strictViolence = createAzureContentSafetyGuardrail({
      ...config,
      severity_threshold: 6,
      category_thresholds: { Violence: 2 },
      categories: ["Violence", "Hate"],
    });
    assert.deepEqual(await strictViolence.check(input(["mild"]), never), {
      action: "deny",
      reason: "flagged by content safety: Violence",
      categories: ["Violence"],
    });
    assert.deepEqual(await strictViolence.check(input(["selfharm"]), never), { action: "allow" });
  }));

Deno.test("azure_content_safety: a blocklist match denies by the list's name, never the matched words", () =>
  withFake(async (fake, config) => {
    const service = createAzureContentSafetyGuardrail({ ...config, blocklist_names: ["banned"] });
    assert.deepEqual(await service.check(input(["some contraband"]), never), {
      action: "deny",
      reason: "flagged by content safety: Blocklist:banned",
      categories: ["Blocklist:banned"],
    });
    assert.deepEqual((fake.calls[0].body as { blocklistNames: string[] }).blocklistNames, ["banned"]);
  }));

Deno.test("azure_content_safety: long texts are split into accepted pieces, at most `concurrency` at once", () =>
  withFake(async (fake, config) => {
    const service = createAzureContentSafetyGuardrail({ ...config, concurrency: 2 });
    const long = "a".repeat(25_000) + " violent";
    fake.faults.delayMs = 20;
    assert.deepEqual(await service.check(input([long, "b".repeat(10_000), "c"]), never), {
      action: "deny",
      reason: "flagged by content safety: Violence",
      categories: ["Violence"],
    });
    assert.equal(fake.calls.length, 5);
    assert.ok(fake.calls.every((c) => (c.body as { text: string }).text.length <= 10_000));
    assert.equal(fake.stats.maxInFlight, 2);
  }));

Deno.test("splitText: pieces of at most max code units, never splitting a surrogate pair", () => {
  assert.deepEqual(splitText("abcdef", 4), ["abcd", "ef"]);
  assert.deepEqual(splitText("abc😀de", 4), ["abc", "😀de"]);
  assert.deepEqual(splitText("", 4), [""]);
  assert.equal(splitText("x".repeat(20_001), 10_000).length, 3);
});

Deno.test("caughtCategories: malformed analyses throw", () => {
  const at4 = () => 4;
  assert.throws(() => caughtCategories({}, at4), /categoriesAnalysis/);
  assert.throws(() => caughtCategories({ categoriesAnalysis: [{ severity: 2 }] }, at4), /category/);
  assert.throws(
    () => caughtCategories({ categoriesAnalysis: [{ category: "Hate", severity: "6" }] }, at4),
    /numeric/,
  );
  assert.throws(() => caughtCategories({ categoriesAnalysis: [], blocklistsMatch: {} }, at4), /array/);
  assert.throws(
    () => caughtCategories({ categoriesAnalysis: [], blocklistsMatch: [{}] }, at4),
    /blocklistName/,
  );
  assert.deepEqual(caughtCategories({ categoriesAnalysis: [{ category: "Hate", severity: 4 }] }, at4), [
    "Hate",
  ]);
});

Deno.test("azure_content_safety: a wrong key and a failing service throw without the key or the texts", () =>
  withFake(async (fake, config) => {
    const wrong = createAzureContentSafetyGuardrail({ ...config, api_key: "wrong-key-abcdef-0123" });
    const e401 = await rejectsWithout(wrong.check(input(["secret plans"]), never), [
      "wrong-key-abcdef-0123",
      "secret plans",
    ]);
    assert.match(e401.message, /HTTP 401 \(401\)/);
    fake.faults.failStatus = 500;
    const service = createAzureContentSafetyGuardrail(config);
    const e500 = await rejectsWithout(service.check(input(["secret plans", "more"]), never), [
      FAKE_AZURE_CS_KEY,
      "secret plans",
    ]);
    assert.match(e500.message, /HTTP 500 \(InternalError\)/);
  }));

Deno.test("azure_content_safety: aborting the signal stops every call", () =>
  withFake(async (fake, config) => {
    const service = createAzureContentSafetyGuardrail(config);
    await abortStops(fake, (signal) => service.check(input(["slow", "slower", "slowest"]), signal));
  }));

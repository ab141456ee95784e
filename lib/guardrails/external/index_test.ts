/**
 * The config schema of each external guardrail (strict, secrets under the names the loader masks) and the
 * factory that picks the adapter by `type`.
 */
import assert from "node:assert/strict";
import { startFakeWebhook } from "../../../tests/helpers/fake_guardrails.ts";
import { createGuardrailService, guardrailServiceSchema } from "./index.ts";
import { input, never } from "./test_helpers.ts";

Deno.test("guardrailServiceSchema: each type's entry parses; unknown keys and bad values are refused", () => {
  const ok = [
    { type: "webhook", url: "https://hooks.example/check", headers: { "X-Key": "v" }, secret: "s" },
    { type: "openai_moderation", api_key: "sk-1", thresholds: { violence: 0.5 }, action_on_flag: "flag" },
    {
      type: "bedrock",
      guardrail_identifier: "arn:aws:bedrock:us-east-1:123456789012:guardrail/abc123",
      guardrail_version: "DRAFT",
      region: "us-east-1",
    },
    {
      type: "azure_content_safety",
      endpoint: "https://r.cognitiveservices.azure.com",
      api_key: "k",
      category_thresholds: { Hate: 2 },
      categories: ["Hate", "Violence"],
    },
  ];
  for (const entry of ok) assert.ok(guardrailServiceSchema.safeParse(entry).success, JSON.stringify(entry));
  const bad = [
    { type: "webhook", url: "ftp://x" },
    { type: "webhook", url: "https://x", extra: 1 },
    { type: "openai_moderation" },
    { type: "openai_moderation", api_key: "k", thresholds: { violence: 2 } },
    { type: "bedrock", guardrail_identifier: "abc", guardrail_version: "v1" },
    { type: "azure_content_safety", endpoint: "https://x", api_key: "k", severity_threshold: 8 },
    { type: "azure_content_safety", endpoint: "https://x", api_key: "k", category_thresholds: { Spam: 2 } },
    { type: "lakera" },
  ];
  for (const entry of bad) assert.ok(!guardrailServiceSchema.safeParse(entry).success, JSON.stringify(entry));
});

Deno.test("createGuardrailService: picks the adapter by type", async () => {
  const fake = startFakeWebhook();
  try {
    fake.answer = { action: "flag", categories: ["X"] };
    const service = createGuardrailService({ type: "webhook", url: fake.url });
    assert.deepEqual(await service.check(input(["t"]), never), { action: "flag", categories: ["X"] });
  } finally {
    await fake.stop();
  }
  assert.throws(
    () => createGuardrailService({ type: "bedrock", guardrail_identifier: "abc", guardrail_version: "1" }),
    /no AWS region/,
  );
});

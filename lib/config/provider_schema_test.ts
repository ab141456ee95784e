import assert from "node:assert/strict";
import { formatIssues, parseConfigText } from "./load.ts";
import type { OpenAIProviderConfig } from "./schema.ts";

/** A config of `providers` (YAML lines) and an alias of the first. */
const configText = (...providers: string[]) =>
  `providers:\n${
    providers.map((p) => `  ${p}\n`).join("")
  }models:\n  m: { type: chat, targets: [{ provider: p0, model: x }] }\n`;

Deno.test("config reasoning_history: reasoning_content unless set, on openai and azure providers", () => {
  const parsed = parseConfigText(
    configText(
      `p0: { type: openai, base_url: "http://h/v1" }`,
      `p1: { type: openai, base_url: "http://h/v1", reasoning_history: reasoning }`,
      `p2: { type: azure, base_url: "https://r.openai.azure.com/openai/v1", api_key: k, reasoning_history: drop }`,
    ),
    { source: "test.yaml", env: {} },
  );
  if (!parsed.ok) assert.fail(formatIssues("test.yaml", parsed.issues));
  const modes = ["p0", "p1", "p2"].map((name) =>
    (parsed.config.providers.get(name) as OpenAIProviderConfig).reasoning_history
  );
  assert.deepEqual(modes, ["reasoning_content", "reasoning", "drop"]);
});

Deno.test("config reasoning_history: check names a value it does not take, and a provider type without it", () => {
  const parsed = parseConfigText(
    configText(
      `p0: { type: openai, base_url: "http://h/v1", reasoning_history: none }`,
      `p1: { type: anthropic, api_key: k, reasoning_history: drop }`,
    ),
    { source: "test.yaml", env: {} },
  );
  assert.ok(!parsed.ok);
  assert.deepEqual(parsed.issues.map((i) => [i.path, i.line, i.message]), [
    ["providers.p0.reasoning_history", 2, 'expected one of "reasoning_content"|"reasoning"|"drop"'],
    ["providers.p1.reasoning_history", 3, 'unknown key "reasoning_history"'],
  ]);
});

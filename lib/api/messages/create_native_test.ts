/** Which targets are served natively, and which client headers travel upstream with a native call. */
import assert from "node:assert/strict";
import type { ResolvedTarget } from "../../config/types.ts";
import { forwardedHeaders, isNativeMessagesTarget } from "./create_native.ts";

const target = (type: string, model: string) =>
  ({ providerConfig: { type }, model }) as unknown as ResolvedTarget;

Deno.test("messages native: Anthropic and Claude on Bedrock are native targets, the rest are translated", () => {
  assert.equal(isNativeMessagesTarget(target("anthropic", "claude-sonnet-4-5")), true);
  assert.equal(isNativeMessagesTarget(target("bedrock", "anthropic.claude-3-5-haiku-20241022-v1:0")), true);
  assert.equal(isNativeMessagesTarget(target("bedrock", "eu.anthropic.claude-sonnet-4-5-v1:0")), true);
  assert.equal(isNativeMessagesTarget(target("bedrock", "amazon.nova-pro-v1:0")), false);
  assert.equal(
    isNativeMessagesTarget(target("openai", "claude-sonnet-4-5")),
    false,
    "a Claude name elsewhere",
  );
  assert.equal(isNativeMessagesTarget(target("gemini", "gemini-2.5-pro")), false);
});

Deno.test("messages native: well-formed anthropic-version and anthropic-beta are forwarded, others are not", () => {
  assert.deepEqual(forwardedHeaders("2026-10-21", "interleaved-thinking-2025-05-14, files-api-2025-04-14"), {
    anthropicVersion: "2026-10-21",
    anthropicBeta: "interleaved-thinking-2025-05-14, files-api-2025-04-14",
  });
  assert.deepEqual(forwardedHeaders(null, null), { anthropicVersion: null, anthropicBeta: null });
  assert.deepEqual(forwardedHeaders("2023-06-01; x=1", "a b"), {
    anthropicVersion: null,
    anthropicBeta: null,
  });
  assert.deepEqual(forwardedHeaders(" ", " "), { anthropicVersion: null, anthropicBeta: null });
  assert.equal(forwardedHeaders("x".repeat(65), null).anthropicVersion, null);
  assert.equal(forwardedHeaders(null, `${"a,".repeat(1100)}a`).anthropicBeta, null, "bounded");
});

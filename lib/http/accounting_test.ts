/**
 * The chat-form token estimate that budgets reserve and TPM charges up front: prompt plus the output limit
 * for each of the `n` choices asked for; when a request's native texts are worth reading.
 */
import assert from "node:assert/strict";
import type { ResolvedContentRule, ResolvedTarget } from "../config/types.ts";
import type { ResolvedGuardrail } from "../guardrails/resolved.ts";
import { chatTokenEstimate, readsNativeTexts } from "./accounting.ts";

Deno.test("chatTokenEstimate: the output limit counts once per choice (n), whichever field carries it", () => {
  assert.equal(chatTokenEstimate(10, { max_tokens: 100 }), 110);
  assert.equal(chatTokenEstimate(10, { max_tokens: 100, n: 10 }), 1_010);
  assert.equal(chatTokenEstimate(10, { max_completion_tokens: 50, max_tokens: 100, n: 3 }), 160);
  assert.equal(chatTokenEstimate(10, { max_completion_tokens: 50, n: 1 }), 60);
});

Deno.test("chatTokenEstimate: without an output limit only the prompt counts, whatever n", () => {
  assert.equal(chatTokenEstimate(10, {}), 10);
  assert.equal(chatTokenEstimate(10, { n: 10 }), 10);
  assert.equal(chatTokenEstimate(10, undefined), 10);
  assert.equal(chatTokenEstimate(10, { max_tokens: null, n: 4 }), 10);
});

Deno.test("readsNativeTexts: only when something judges them (content rules, a guardrail) and a target is native", () => {
  const native = { provider: "claude" } as ResolvedTarget;
  const other = { provider: "openai" } as ResolvedTarget;
  const isNative = (target: ResolvedTarget) => target === native;
  const rule = { name: "r" } as ResolvedContentRule;
  const guard = (phase: "input" | "output") => ({ phases: new Set([phase]) }) as unknown as ResolvedGuardrail;
  const none = { guardrails: undefined };
  const model = (over: { contentRules?: ResolvedContentRule[]; guardrails?: ResolvedGuardrail[] } = {}) => ({
    contentRules: [],
    targets: [other, native],
    ...over,
  });
  // Nothing configured: nothing is walked.
  assert.equal(readsNativeTexts(model(), none, isNative), false);
  // An output guardrail sends the request over the chat form: the native texts name what that form leaves out.
  assert.equal(readsNativeTexts(model({ guardrails: [guard("output")] }), none, isNative), true);
  assert.equal(readsNativeTexts(model({ contentRules: [rule] }), none, isNative), true);
  assert.equal(readsNativeTexts(model({ guardrails: [guard("input")] }), none, isNative), true);
  assert.equal(readsNativeTexts(model(), { guardrails: [guard("input")] }, isNative), true);
  // No native target: the chat form holds every text a target reads.
  const translated = { ...model({ contentRules: [rule] }), targets: [other] };
  assert.equal(readsNativeTexts(translated, { guardrails: [guard("input")] }, isNative), false);
});

import assert from "node:assert/strict";
import type { ResolvedModel, ResolvedTarget, RoutedTarget } from "../config/types.ts";
import { type ClientTerms, GatewayError, invalidRequest } from "../errors.ts";
import type { ChatRequest } from "../openai/types.ts";
import type { RequestContext } from "./context.ts";
import {
  answeredTolerance,
  type ChatForm,
  chatFormServingTargets,
  chatWithout,
  droppedPaths,
  newTolerance,
  noteDropped,
  paramServingTargets,
  servingTargets,
} from "./tolerance.ts";

Deno.test("dropped paths: client text shown plain and bounded, so the x-gateway-dropped header always takes it", () => {
  const tolerance = newTolerance();
  tolerance.dropped.push(
    `x_${"a".repeat(120)}`,
    "naïve field",
    ...Array.from({ length: 40 }, (_, i) => `f${i}`),
  );
  const paths = droppedPaths(tolerance);
  assert.equal(paths.length, 33, "32 paths and a mark for the rest");
  assert.equal(paths[0].length, 96);
  assert.ok(paths[0].endsWith("..."), "a long path is cut");
  assert.equal(paths[1], "na?ve?field");
  assert.equal(paths.at(-1), "...");
  // A header value takes bytes up to 0xFF only: setting it after routing must not throw.
  const headers = new Headers();
  headers.set("x-gateway-dropped", paths.join(","));
  assert.equal(headers.get("x-gateway-dropped"), paths.join(","));
});

Deno.test("withheld params: a target that cannot take them gets the chat form without them, named as dropped", () => {
  const chat = { model: "m", messages: [{ role: "user", content: "hi" }], top_k: 64 } as ChatRequest;
  assert.equal(chatWithout(chat, []), chat);
  assert.equal(chatWithout(chat, ["seed"]), chat, "nothing to withhold: the same object");
  assert.deepEqual(chatWithout(chat, ["top_k"]), { model: "m", messages: chat.messages });
  assert.equal(chat.top_k, 64, "the client's chat form is left as it is");

  const takes = { provider: "vllm", model: "llama", providerConfig: { type: "openai" } } as RoutedTarget;
  const refuses = { provider: "az", model: "gpt-4o", providerConfig: { type: "azure" } } as RoutedTarget;
  const model = (targets: RoutedTarget[], strict = false) =>
    ({ alias: "a", strict, targets }) as unknown as ResolvedModel;
  const terms: ClientTerms = (err) =>
    err.param === "top_k" ? { param: "generationConfig.topK", message: "" } : undefined;
  const form: ChatForm = {
    chat,
    strictError: (path) => invalidRequest(`strict: ${path}`, path),
    clientTerms: terms,
    withheld: (target) => (target === refuses ? ["top_k"] : []),
  };
  const both = model([refuses, takes]);
  assert.equal(paramServingTargets(both, form), both, "a withheld param leaves no target out");
  assert.deepEqual(answeredTolerance(refuses, newTolerance(), form).dropped, ["generationConfig.topK"]);
  assert.deepEqual(answeredTolerance(takes, newTolerance(), form).dropped, []);
  // A strict alias refuses the drop: the target is left out, and with none left the 400 names the field.
  assert.deepEqual(paramServingTargets(model([refuses, takes], true), form).targets, [takes]);
  assert.throws(
    () => paramServingTargets(model([refuses], true), form),
    (err: unknown) => err instanceof GatewayError && err.param === "generationConfig.topK",
  );
});

Deno.test("serving targets: what native targets serve better goes to them first, the others after as fallbacks", () => {
  const native = { provider: "resp", model: "gpt", providerConfig: { type: "openai" } } as RoutedTarget;
  const chat = { provider: "claude", model: "sonnet", providerConfig: { type: "anthropic" } } as RoutedTarget;
  const model = (targets: RoutedTarget[], strict = false) =>
    ({ alias: "a", strict, targets }) as unknown as ResolvedModel;
  const speaks = (t: ResolvedTarget) => t === native;
  const strictError = (path: string) => invalidRequest(`strict: ${path}`, path);
  const builtIn = newTolerance();
  builtIn.native.push("tools[1]");

  // Translated first in the config: the native one still comes first, the translated one marked a fallback.
  const served = servingTargets(model([chat, native]), builtIn, speaks, strictError);
  assert.deepEqual(served.targets, [native, { ...chat, fallbackOnly: true }]);
  assert.equal(chat.fallbackOnly, undefined, "the configured target is left as it is");
  // Nothing native needed, or no native target: the alias as it is.
  const plain = model([chat, native]);
  assert.equal(servingTargets(plain, newTolerance(), speaks, strictError), plain);
  const translated = model([chat]);
  assert.equal(servingTargets(translated, builtIn, speaks, strictError), translated);

  // A strict alias refuses the drop: native targets only, and the 400 without one.
  assert.deepEqual(servingTargets(model([chat, native], true), builtIn, speaks, strictError).targets, [
    native,
  ]);
  assert.throws(
    () => servingTargets(model([chat], true), builtIn, speaks, strictError),
    (err: unknown) => err instanceof GatewayError && err.param === "tools[1]",
  );
  // What the model must read: native targets only too.
  const refused = newTolerance();
  refused.refusal = invalidRequest("a file by id", "input[0]");
  assert.deepEqual(servingTargets(model([chat, native]), refused, speaks, strictError).targets, [native]);
});

Deno.test("chat-form serving targets: a native target the guardrails send the chat form is judged by its rules", () => {
  const chat = { model: "m", messages: [{ role: "user", content: "hi" }], seed: 7 } as ChatRequest;
  // Claude's chat translation has no seed: refused under `error`, dropped and named under `drop`.
  const claude = {
    provider: "claude",
    model: "c",
    providerConfig: { type: "anthropic", unsupported_params: "error" },
  } as RoutedTarget;
  const claudeDrop = {
    provider: "claude-drop",
    model: "c",
    providerConfig: { type: "anthropic", unsupported_params: "drop" },
  } as RoutedTarget;
  const openai = { provider: "oa", model: "g", providerConfig: { type: "openai" } } as RoutedTarget;
  const model = (targets: RoutedTarget[]) =>
    ({ alias: "a", strict: false, targets }) as unknown as ResolvedModel;
  const form: ChatForm = {
    chat,
    native: (t) => t !== openai,
    strictError: (path) => invalidRequest(`strict: ${path}`, path),
    chatLoses: () => ["messages[0].content[1]"],
  };
  const ctx = (chatOnly: boolean | undefined) =>
    ({ guardrails: chatOnly === undefined ? undefined : { chatOnly } }) as unknown as RequestContext;
  const alias = model([claude, openai]);

  // Passed through (no guardrails, or none that need the chat form): the native target is not judged by it.
  assert.equal(chatFormServingTargets(ctx(undefined), alias, form), alias);
  assert.equal(chatFormServingTargets(ctx(false), alias, form), alias);
  assert.equal(
    chatFormServingTargets(ctx(true), alias, undefined),
    alias,
    "no chat form given: nothing judged",
  );
  assert.equal(
    chatFormServingTargets(ctx(true), alias, { ...form, native: undefined }),
    alias,
    "chat: none native",
  );
  // Sent the chat form: left out for the alias's other target, and the 400 when it is the only one.
  assert.deepEqual(chatFormServingTargets(ctx(true), alias, form).targets, [openai]);
  assert.throws(
    () => chatFormServingTargets(ctx(true), model([claude]), form),
    (err: unknown) => err instanceof GatewayError && err.param === "seed",
  );
  // A native target that drops it serves, and names it beside what the chat form holds nowhere.
  const dropping = model([claudeDrop, openai]);
  assert.equal(chatFormServingTargets(ctx(true), dropping, form), dropping);
  const answered = answeredTolerance(claudeDrop, newTolerance(), form);
  assert.deepEqual(answered.native, ["messages[0].content[1]"]);
  assert.deepEqual(answered.dropped, ["seed"]);
});

Deno.test("noting drops: what the output guardrails withheld is named after the target's own drops", () => {
  const ctx = (withheld?: string[]) =>
    ({ record: {}, guardrails: withheld && { withheld } }) as unknown as RequestContext;
  const tolerance = { ...newTolerance(), dropped: ["seed"] };

  const guarded = ctx(["logprobs", "top_logprobs"]);
  const headers = new Headers();
  noteDropped(guarded, headers, tolerance);
  assert.equal(headers.get("x-gateway-dropped"), "seed,logprobs,top_logprobs");
  assert.equal(guarded.record.dropped, "seed,logprobs,top_logprobs");

  // A target that got everything else: the withheld params alone.
  const alone = ctx(["logprobs"]);
  const only = new Headers();
  noteDropped(alone, only, newTolerance());
  assert.equal(only.get("x-gateway-dropped"), "logprobs");
  assert.equal(alone.record.dropped, "logprobs");

  // Nothing withheld and nothing dropped: no header, no record field.
  for (const plain of [ctx(), ctx([])]) {
    const none = new Headers();
    noteDropped(plain, none, newTolerance());
    assert.equal(none.has("x-gateway-dropped"), false);
    assert.equal(plain.record.dropped, undefined);
  }
});

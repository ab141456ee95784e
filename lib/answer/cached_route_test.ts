/**
 * What the cache keeps (`cacheable`) under an alias's settings, and the scope its keys are made in (`keyScope`).
 */
import assert from "node:assert/strict";
import type { ResolvedAliasCache, ResolvedModel } from "../config/types.ts";
import type { ClientContext } from "../http/context.ts";
import type { ChatCompletion, ChatRequest } from "../openai/types.ts";
import { asksUncacheable, cacheable, keyScope } from "./cached_route.ts";

function settings(overrides: Partial<ResolvedAliasCache> = {}): ResolvedAliasCache {
  return {
    ttlMs: 600_000,
    scope: "token",
    incomplete: false,
    toolCalls: false,
    n: false,
    version: "v1",
    semantic: null,
    ...overrides,
  };
}

const CHAT: ChatRequest = { model: "chat", messages: [{ role: "user", content: "hi" }] };

type Choice = ChatCompletion["choices"][number];

function choice(finish: string | null, message: Record<string, unknown> = {}, index = 0): Choice {
  return { index, message: { role: "assistant", content: "hello", ...message }, finish_reason: finish };
}

function completion(...choices: Choice[]): ChatCompletion {
  return { id: "chatcmpl-1", object: "chat.completion", created: 1, model: "m", choices };
}

const TOOL_CALL = { id: "call_1", type: "function", function: { name: "f", arguments: "{}" } };

Deno.test("cacheable: an answer that stopped is kept", () => {
  assert.equal(cacheable(completion(choice("stop")), CHAT, settings()), true);
  // an empty tool_calls list is no tool call
  assert.equal(cacheable(completion(choice("stop", { tool_calls: [] })), CHAT, settings()), true);
});

Deno.test("cacheable: answers cut by length or a filter only with incomplete", () => {
  for (const finish of ["length", "content_filter", null]) {
    assert.equal(cacheable(completion(choice(finish)), CHAT, settings()), false, String(finish));
    assert.equal(
      cacheable(completion(choice(finish)), CHAT, settings({ incomplete: true })),
      true,
      String(finish),
    );
  }
});

Deno.test("cacheable: answers ending in tool calls only with toolCalls", () => {
  const calls: [string, Choice][] = [
    ["finish_reason tool_calls", choice("tool_calls", { content: null, tool_calls: [TOOL_CALL] })],
    ["finish_reason tool_calls without the list", choice("tool_calls")],
    ["tool_calls with finish stop", choice("stop", { tool_calls: [TOOL_CALL] })],
    [
      "function_call",
      choice("function_call", { content: null, function_call: { name: "f", arguments: "{}" } }),
    ],
    ["function_call with finish stop", choice("stop", { function_call: { name: "f", arguments: "{}" } })],
  ];
  for (const [what, c] of calls) {
    assert.equal(cacheable(completion(c), CHAT, settings()), false, what);
    assert.equal(cacheable(completion(c), CHAT, settings({ toolCalls: true })), true, what);
    // incomplete alone does not let tool calls in
    assert.equal(cacheable(completion(c), CHAT, settings({ incomplete: true })), false, what);
  }
});

// A choice cut off in the middle of its tool calls is both: it needs both opt-ins (lib/cache/opt_ins.ts), as a
// native answer cut off in its calls does on every client API.
Deno.test("cacheable: an answer cut off in its tool calls only with both toolCalls and incomplete", () => {
  for (const finish of ["length", "content_filter", null]) {
    const cut = completion(choice(finish, { content: null, tool_calls: [TOOL_CALL] }));
    assert.equal(cacheable(cut, CHAT, settings()), false, String(finish));
    assert.equal(cacheable(cut, CHAT, settings({ toolCalls: true })), false, `${finish}, toolCalls alone`);
    assert.equal(cacheable(cut, CHAT, settings({ incomplete: true })), false, `${finish}, incomplete alone`);
    assert.equal(cacheable(cut, CHAT, settings({ toolCalls: true, incomplete: true })), true, String(finish));
  }
});

Deno.test("cacheable: with toolCalls, calls an entry replays as they came, custom ones too; no others", () => {
  const custom = { id: "call_2", type: "custom", custom: { name: "grep", input: "TODO" } };
  const ok = (calls: unknown[]) =>
    cacheable(
      completion(choice("tool_calls", { content: null, tool_calls: calls })),
      CHAT,
      settings({ toolCalls: true }),
    );
  assert.equal(ok([custom]), true);
  assert.equal(ok([TOOL_CALL, custom]), true);
  // Some servers leave a function call's `type` out.
  assert.equal(ok([{ id: "call_1", function: { name: "f", arguments: "{}" } }]), true);
  // A type an entry cannot replay; a nameless call (an entry written before custom calls were kept: a miss now).
  assert.equal(ok([{ id: "call_3", type: "mcp", mcp: { name: "x" } }]), false);
  assert.equal(ok([{ id: "call_1", type: "function", function: { name: "", arguments: "" } }]), false);
  assert.equal(ok([{ ...custom, custom: { input: "TODO" } }]), false);
});

Deno.test("cacheable: several choices, or n > 1 asked, only with n", () => {
  const two = completion(choice("stop"), choice("stop", {}, 1));
  assert.equal(cacheable(two, CHAT, settings()), false);
  assert.equal(cacheable(two, CHAT, settings({ n: true })), true);
  const asked: ChatRequest = { ...CHAT, n: 2 };
  assert.equal(cacheable(completion(choice("stop")), asked, settings()), false, "n: 2 asked, one given");
  assert.equal(cacheable(completion(choice("stop")), asked, settings({ n: true })), true);
  assert.equal(cacheable(completion(choice("stop")), { ...CHAT, n: 1 }, settings()), true, "n: 1 is one");
  // each choice must be cacheable on its own
  const mixed = completion(choice("stop"), choice("length", {}, 1));
  assert.equal(cacheable(mixed, CHAT, settings({ n: true })), false);
  assert.equal(cacheable(mixed, CHAT, settings({ n: true, incomplete: true })), true);
});

Deno.test("cacheable: a request asking for logprobs never is, nor is it looked up", () => {
  const logprobs: ChatRequest = { ...CHAT, logprobs: true, top_logprobs: 2 };
  const all = settings({ incomplete: true, toolCalls: true, n: true });
  assert.equal(cacheable(completion(choice("stop")), logprobs, all), false);
  assert.equal(cacheable(completion(choice("stop")), { ...CHAT, logprobs: false }, settings()), true);
  assert.equal(asksUncacheable(logprobs), true);
  assert.equal(asksUncacheable({ ...CHAT, logprobs: true }), true);
  assert.equal(asksUncacheable({ ...CHAT, top_logprobs: 3 }), true);
  assert.equal(asksUncacheable({ ...CHAT, logprobs: false, top_logprobs: 0 }), false);
});

Deno.test("cacheable: a spoken answer never is, nor is a request for one looked up", () => {
  const all = settings({ incomplete: true, toolCalls: true, n: true });
  const spoken = choice("stop", {
    content: null,
    audio: { id: "audio_1", data: "UklGRg==", transcript: "hi" },
  });
  assert.equal(cacheable(completion(spoken), CHAT, all), false);
  assert.equal(
    cacheable(completion(choice("stop", { audio: null })), CHAT, settings()),
    true,
    "audio: null is none",
  );
  assert.equal(asksUncacheable({ ...CHAT, modalities: ["text", "audio"] }), true);
  assert.equal(asksUncacheable({ ...CHAT, audio: { voice: "alloy", format: "wav" } }), true);
  assert.equal(asksUncacheable({ ...CHAT, modalities: ["text"] }), false);
  assert.equal(asksUncacheable(CHAT), false);
});

Deno.test("cacheable: a legacy function_call is a tool call; one ending in function_call without it is not whole", () => {
  const call = choice("function_call", { content: null, function_call: { name: "f", arguments: "{}" } });
  assert.equal(cacheable(completion(call), CHAT, settings()), false);
  assert.equal(cacheable(completion(call), CHAT, settings({ toolCalls: true })), true);
  // What an entry written before the call was kept holds: never served.
  const lost = choice("function_call", { content: "" });
  assert.equal(cacheable(completion(lost), CHAT, settings({ toolCalls: true, incomplete: true })), false);
});

Deno.test("cacheable: an answer without choices never is", () => {
  assert.equal(
    cacheable(completion(), CHAT, settings({ incomplete: true, toolCalls: true, n: true })),
    false,
  );
});

/** The fields keyScope reads, and no more. */
function context(id: string, environment: string): ClientContext {
  return { identity: { id, environment, name: "ci" } } as unknown as ClientContext;
}

const MODEL = { alias: "chat-default" } as unknown as ResolvedModel;

Deno.test("keyScope: the token's id, its environment, or shared", () => {
  const ctx = context("tok_abc", "production");
  assert.deepEqual(keyScope(ctx, MODEL, settings({ scope: "token" })), {
    scope: "tok:tok_abc",
    alias: "chat-default",
    version: "v1",
  });
  assert.deepEqual(keyScope(ctx, MODEL, settings({ scope: "environment", version: "v9" })), {
    scope: "env:production",
    alias: "chat-default",
    version: "v9",
  });
  assert.deepEqual(keyScope(ctx, MODEL, settings({ scope: "shared" })), {
    scope: "shared",
    alias: "chat-default",
    version: "v1",
  });
  // the token's id, never its name
  assert.equal(keyScope(context("tok_other", "production"), MODEL, settings()).scope, "tok:tok_other");
});

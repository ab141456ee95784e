/**
 * What a request whose answer is checked may not ask for (unread_output.ts), and how admission applies it
 * (`checkInput`): log probabilities withheld and kept to be named as dropped, spoken output refused.
 */
import assert from "node:assert/strict";
import type { ResolvedModel, ResolvedToken } from "../config/types.ts";
import type { JsonObject } from "../openai/types.ts";
import { PolicyDenied } from "../policy/denied.ts";
import { NO_SECRETS } from "../secrets/scrubber.ts";
import { checkInput, type RequestGuardrails } from "./request.ts";
import type { ResolvedGuardrail } from "./resolved.ts";
import { dropUnread, unreadDropped, withholdUnread } from "./unread_output.ts";

function guardrail(name: string, phase: "input" | "output", action: ResolvedGuardrail["action"]) {
  return {
    name,
    phases: new Set([phase]),
    action,
    reverse: false,
    message: null,
    pii: ["CREDIT_CARD"],
    service: null,
    timeoutMs: 0,
    onFailure: "fail_closed",
    scrubber: NO_SECRETS,
  } as const satisfies ResolvedGuardrail;
}

const OUT = [guardrail("no-cards", "output", "deny")];
const chat = (extra: JsonObject): JsonObject => ({
  model: "m",
  messages: [{ role: "user", content: "hi" }],
  ...extra,
});

/** The 400 `fn` throws: a denial by `rule`, naming `param`. */
function refusal(fn: () => unknown, param: string, rule = "guardrail:no-cards") {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof PolicyDenied);
    assert.equal(err.status, 400);
    assert.equal(err.rule, rule);
    assert.equal(err.code, "audio_output_not_checkable");
    assert.equal(err.param, param);
    assert.match(err.message, /guardrail no-cards/);
    return true;
  });
}

Deno.test("unread output: log probabilities are taken off the chat form and returned to be named", () => {
  const asked = chat({ logprobs: true, top_logprobs: 3, temperature: 0 });
  assert.deepEqual(withholdUnread(asked, OUT), ["logprobs", "top_logprobs"]);
  assert.deepEqual(asked, chat({ temperature: 0 }), "nothing else is touched");

  const onlyTop = chat({ logprobs: false, top_logprobs: 2 });
  assert.deepEqual(withholdUnread(onlyTop, OUT), ["logprobs", "top_logprobs"]);
  assert.equal("top_logprobs" in onlyTop, false, "no lone top_logprobs is left for the upstream to refuse");

  const lone = chat({ logprobs: true });
  assert.deepEqual(withholdUnread(lone, OUT), ["logprobs"]);

  // Asking for none changes nothing and names nothing.
  for (const none of [chat({}), chat({ logprobs: false }), chat({ logprobs: false, top_logprobs: 0 })]) {
    const before = structuredClone(none);
    assert.deepEqual(withholdUnread(none, OUT), []);
    assert.deepEqual(none, before);
  }
});

Deno.test("unread output: spoken output is refused, naming the param that asked for it", () => {
  refusal(
    () => withholdUnread(chat({ modalities: ["text", "audio"], audio: { voice: "alloy" } }), OUT),
    "modalities",
  );
  refusal(() => withholdUnread(chat({ modalities: ["audio"] }), OUT), "modalities");
  refusal(() => withholdUnread(chat({ audio: { voice: "alloy", format: "wav" } }), OUT), "audio");
  // The first output guardrail is the rule named.
  refusal(
    () => withholdUnread(chat({ audio: {} }), [...OUT, guardrail("moderation", "output", "flag")]),
    "audio",
  );
  // Text only, or no settings, is no request for speech.
  assert.deepEqual(withholdUnread(chat({ modalities: ["text"], audio: null }), OUT), []);
});

Deno.test("unread output: admission applies it only when an output guardrail checks the answer", async () => {
  const model = (guardrails: ResolvedGuardrail[]) =>
    ({ alias: "a", guardrails, contentRules: [] }) as unknown as ResolvedModel;
  const token = { name: "app" } as ResolvedToken;
  const admit = async (guardrails: ResolvedGuardrail[], body: JsonObject) => {
    let kept: RequestGuardrails | undefined;
    const signal = new AbortController().signal;
    await checkInput("chat", model(guardrails), token, body, signal, (s) => kept = s);
    return kept;
  };

  const checked = chat({ logprobs: true, top_logprobs: 1 });
  assert.deepEqual((await admit(OUT, checked))?.withheld, ["logprobs", "top_logprobs"]);
  assert.equal(checked.logprobs, undefined, "the chat form routed is the one admitted");

  // Input checks alone read no answer: the request keeps its log probabilities and may ask for speech.
  const inputOnly = [guardrail("cards-in", "input", "deny")];
  const kept = chat({ logprobs: true, modalities: ["text", "audio"] });
  assert.equal((await admit(inputOnly, kept))?.withheld, undefined);
  assert.equal(kept.logprobs, true);

  // Nothing withheld: no list kept.
  assert.equal((await admit(OUT, chat({})))?.withheld, undefined);

  // A request for speech is refused before any upstream is asked.
  await assert.rejects(
    admit(OUT, chat({ modalities: ["text", "audio"] })),
    (err: unknown) => err instanceof PolicyDenied && err.param === "modalities",
  );
});

// OpenRouter repeats the reasoning it sends as `reasoning` (read as reasoning_content) in `reasoning_details`:
// a copy no check reads, so a masked card there would reach the client whole.
Deno.test("unread output: a checked answer keeps only the fields the checks read (a vendor's reasoning_details goes)", () => {
  const details = [{ type: "reasoning.text", text: "The card is 4111 1111 1111 1111." }];
  const annotations = [{
    type: "url_citation",
    url_citation: { url: "https://example.com", title: "Example" },
  }];
  const completion = {
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: "Your card is <CREDIT_CARD_1>.",
        reasoning_content: "The card is <CREDIT_CARD_1>.",
        reasoning_details: details,
        annotations,
        tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }],
      },
      finish_reason: "stop",
    }],
  };
  dropUnread(completion);
  const message = JSON.parse(JSON.stringify(completion)).choices[0].message;
  assert.deepEqual(Object.keys(message), [
    "role",
    "content",
    "reasoning_content",
    "annotations",
    "tool_calls",
  ]);
  const chunk = {
    choices: [{ index: 0, delta: { reasoning_content: "<CREDIT_CARD_1>", reasoning_details: details } }],
  };
  dropUnread(chunk);
  assert.deepEqual(JSON.parse(JSON.stringify(chunk)).choices[0].delta, {
    reasoning_content: "<CREDIT_CARD_1>",
  });
});

Deno.test("unread output: a checked answer loses the logprobs and audio its upstream sent unasked", async () => {
  const logprobs = { content: [{ token: "4111", logprob: -1, bytes: [52, 49, 49, 49], top_logprobs: [] }] };
  const audio = { id: "a", data: "UklGRg==", transcript: "4111 1111 1111 1111" };
  const completion = {
    choices: [
      { index: 0, message: { role: "assistant", content: "hi", audio }, logprobs, finish_reason: "stop" },
      { index: 1, message: { role: "assistant", content: "ho" }, logprobs: null, finish_reason: "stop" },
      "not a choice",
    ],
  };
  dropUnread(completion);
  assert.equal(
    JSON.stringify(completion),
    JSON.stringify({
      choices: [
        { index: 0, message: { role: "assistant", content: "hi" }, logprobs: null, finish_reason: "stop" },
        { index: 1, message: { role: "assistant", content: "ho" }, logprobs: null, finish_reason: "stop" },
        "not a choice",
      ],
    }),
  );
  // Malformed answers are left to the checks' own handling.
  dropUnread({});
  dropUnread({ choices: "none" });

  const chunks = [
    { choices: [{ index: 0, delta: { content: "4111", audio: { transcript: "4111" } }, logprobs }] },
    { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
  ];
  let i = 0;
  let cancelled: unknown;
  const source = unreadDropped(
    {
      read: () => Promise.resolve(i < chunks.length ? { done: false, value: chunks[i++] } : { done: true }),
      cancel: (reason) => {
        cancelled = reason;
        return Promise.resolve();
      },
    } as Parameters<typeof unreadDropped<typeof chunks[number]>>[0],
  );
  const first = await source.read();
  assert.equal(
    JSON.stringify(first.value),
    `{"choices":[{"index":0,"delta":{"content":"4111"},"logprobs":null}]}`,
  );
  assert.deepEqual((await source.read()).value, chunks[1]);
  assert.equal((await source.read()).done, true);
  await source.cancel("gone");
  assert.equal(cancelled, "gone", "a cancel reaches the upstream");
});

import assert from "node:assert/strict";
import type { ResolvedContentRule } from "../../config/types.ts";
import { GatewayError } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import {
  clientEvent,
  clientResponse,
  type NativeFrame,
  nativeRequestBody,
  nativeUsage,
  redactNative,
} from "./native.ts";
import { nativeStreamBody, type NativeStreamOutcome } from "./native_stream.ts";
import { gatewayReasoningId, unreadableReasoningPaths } from "./gateway_reasoning.ts";

const FRAME: NativeFrame = {
  id: "resp_gw",
  alias: "my-alias",
  previousResponseId: "resp_gw_prev",
  scrub: (text) => text.replaceAll("sk-secret", "[redacted]"),
};

Deno.test("native body: the client's fields kept, model, limit and previous id rewritten", () => {
  const client = {
    model: "my-alias",
    input: "Hi",
    tools: [{ type: "web_search" }],
    include: ["reasoning.encrypted_content"],
    previous_response_id: "resp_gw_prev",
    stream: true,
  };
  const input = [{ type: "message", role: "user", content: "Hi" }];
  assert.deepEqual(
    nativeRequestBody(client, { model: "gpt-up", maxOutputTokens: 50, upstreamPrevious: "resp_up_1", input }),
    { ...client, model: "gpt-up", max_output_tokens: 50, previous_response_id: "resp_up_1" },
  );
  const rebuilt = nativeRequestBody(client, {
    model: "gpt-up",
    maxOutputTokens: null,
    history: {
      items: [
        { type: "message", role: "user", content: "Before", id: "msg_gw" },
        { type: "reasoning", id: "rs_other", summary: [], encrypted_content: "enc-other" },
        { type: "message", id: "msg_1", role: "assistant", content: [{ type: "output_text", text: "Ok" }] },
      ],
      nativeBy: [null, "other", "other"],
    },
    provider: "up",
    input,
  });
  assert.equal("previous_response_id" in rebuilt, false);
  assert.equal("max_output_tokens" in rebuilt, false);
  assert.deepEqual(rebuilt.input, [
    { type: "message", role: "user", content: "Before" },
    { type: "message", role: "assistant", content: [{ type: "output_text", text: "Ok" }] },
    ...input,
  ]);
  assert.equal(client.previous_response_id, "resp_gw_prev", "the client's body is not changed");
  // An item reference the gateway resolved goes upstream as the item it names.
  const resolved = {
    type: "message",
    role: "assistant",
    content: [{ type: "output_text", text: "Earlier" }],
  };
  const referencing = { model: "my-alias", input: [{ type: "item_reference", id: "msg_1" }] };
  assert.deepEqual(
    nativeRequestBody(referencing, { model: "gpt-up", maxOutputTokens: null, input: [resolved] }).input,
    [resolved],
  );
});

Deno.test("native body: reasoning this provider produced goes back to it with its encrypted content", () => {
  const reasoning = (id: string, encrypted?: string) => ({
    type: "reasoning",
    id,
    summary: [],
    ...(encrypted === undefined ? {} : { encrypted_content: encrypted }),
  });
  const history = {
    items: [
      reasoning("rs_1", "enc-1"),
      reasoning("rs_2", "enc-2"),
      reasoning("rs_3"),
      reasoning("rs_4", "x"),
    ],
    nativeBy: ["up", "other", "up", null],
  };
  const input = [{ type: "message", role: "user", content: "Go on." }];
  const body = nativeRequestBody({ model: "a", input }, {
    model: "m",
    maxOutputTokens: null,
    history,
    provider: "up",
    input,
  });
  // Another provider's, one without its content (nothing to read back) and a client's are left out; ids too.
  assert.deepEqual(body.input, [{ type: "reasoning", summary: [], encrypted_content: "enc-1" }, ...input]);
});

Deno.test("native body: the reasoning items the gateway made are left out of a native target's input", () => {
  const own = {
    type: "reasoning",
    id: gatewayReasoningId(),
    summary: [{ type: "summary_text", text: "Call it." }],
  };
  const upstream = { type: "reasoning", id: "rs_68af1c5b", summary: [], encrypted_content: "enc-1" };
  const input: JsonObject[] = [
    { type: "message", role: "user", content: "Hi" },
    own,
    { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
    { type: "function_call_output", call_id: "c1", output: "ok" },
    upstream,
  ];
  assert.match(String(own.id), /^rs_gw_[0-9a-f]{48}$/);
  assert.deepEqual(unreadableReasoningPaths(input, true), ["input[1]"]);
  const body = nativeRequestBody({ model: "a", input }, { model: "m", maxOutputTokens: null, input });
  assert.deepEqual(body.input, [input[0], input[2], input[3], upstream]);
  // Under `store: false` the upstream keeps nothing: no reasoning item without its encrypted content can be looked
  // up, whoever made it; one the upstream may hold (`store` on) goes as sent.
  const unmarked = { type: "reasoning", id: "rs_0e46c1c7", summary: [], encrypted_content: null };
  const later = [...input, unmarked];
  assert.deepEqual(unreadableReasoningPaths(later, false), ["input[1]", "input[5]"]);
  assert.deepEqual(unreadableReasoningPaths(later, true), ["input[1]"]);
  const notStored = nativeRequestBody({ model: "a", input: later, store: false }, {
    model: "m",
    maxOutputTokens: null,
    input: later,
  });
  assert.deepEqual(notStored.input, [input[0], input[2], input[3], upstream]);
});

Deno.test("native answer: the gateway's id, the alias, the client's previous id, an error scrubbed", () => {
  const upstream = {
    id: "resp_up",
    object: "response",
    model: "gpt-up",
    previous_response_id: "resp_up_0",
    status: "failed",
    error: {
      code: "server_error",
      message: "bad key sk-secret",
      param: "sk-secret",
      echoed: ["Bearer sk-secret"],
      "sk-secret": { "x-sk-secret": "refused" },
    },
    output: [{ id: "msg_up", type: "message", content: [{ type: "output_text", text: "Hi" }] }],
  };
  const out = clientResponse(upstream, FRAME);
  assert.deepEqual(
    [out.id, out.model, out.previous_response_id],
    ["resp_gw", "my-alias", "resp_gw_prev"],
  );
  assert.deepEqual(out.error, {
    code: "server_error",
    message: "bad key [redacted]",
    param: "[redacted]",
    echoed: ["Bearer [redacted]"],
    "[redacted]": { "x-[redacted]": "refused" },
  }, "every string of the error, keys too, not only its message");
  assert.deepEqual(out.output, upstream.output, "items keep the upstream's ids (later turns name them)");
  const event = clientEvent({ type: "response.created", sequence_number: 7, response: upstream }, FRAME, 0);
  assert.equal(event.sequence_number, 0);
  assert.equal((event.response as JsonObject).id, "resp_gw");
  assert.deepEqual(clientEvent({ type: "response.output_text.delta", delta: "x" }, FRAME, 3), {
    type: "response.output_text.delta",
    delta: "x",
    sequence_number: 3,
  });
});

Deno.test("native usage: the web searches a Response's output shows, failed calls left out", () => {
  const call = (status: string) => ({
    type: "web_search_call",
    id: "ws_1",
    status,
    action: { type: "search" },
  });
  const response = {
    output: [call("completed"), call("completed"), call("failed"), { type: "message", content: [] }],
    usage: { input_tokens: 9000, output_tokens: 300 },
  };
  assert.deepEqual(nativeUsage(response), { prompt: 9000, completion: 300, webSearches: 2 });
  assert.deepEqual(nativeUsage({ ...response, output: [] }), { prompt: 9000, completion: 300 });
});

Deno.test("native usage: read from the upstream, bounded to sane counts", () => {
  assert.deepEqual(nativeUsage({ usage: { input_tokens: 5, output_tokens: 2 } }), {
    prompt: 5,
    completion: 2,
  });
  for (
    const bad of [{}, { usage: null }, { usage: { input_tokens: -1, output_tokens: 2 } }, {
      usage: { input_tokens: "5", output_tokens: 2 },
    }]
  ) assert.equal(nativeUsage(bad), undefined);
  // The details are counts too: one that is not makes the whole usage untrusted (the gateway counts), as on
  // every other path, rather than pricing the request with its cached or reasoning part left out.
  const details = { input_tokens: 50, output_tokens: 20 };
  assert.deepEqual(
    nativeUsage({
      usage: {
        ...details,
        input_tokens_details: { cached_tokens: 40 },
        output_tokens_details: { reasoning_tokens: 10 },
      },
    }),
    { prompt: 50, completion: 20, cachedRead: 40, reasoning: 10 },
  );
  assert.equal(
    nativeUsage({ usage: { ...details, input_tokens_details: { cached_tokens: -40 } } }),
    undefined,
  );
  assert.equal(
    nativeUsage({ usage: { ...details, output_tokens_details: { reasoning_tokens: "10" } } }),
    undefined,
  );
});

Deno.test("native redaction: redact rules apply to instructions, string input and text parts", () => {
  const rules = [
    { name: "r", regex: /\d{4}-\d{4}/, action: "redact", message: null, replacement: "[card]" },
    { name: "d", regex: /never/, action: "deny", message: null, replacement: "" },
  ] as ResolvedContentRule[];
  const body = redactNative({
    instructions: "card 1234-5678",
    input: [
      { role: "user", content: [{ type: "input_text", text: "1111-2222 and 3333-4444" }] },
      { type: "function_call_output", call_id: "c", output: "1234-5678" },
      { role: "user", content: "never 1234-5678" },
    ],
  }, rules);
  assert.equal(body.instructions, "card [card]");
  const input = body.input as JsonObject[];
  assert.deepEqual(input[0].content, [{ type: "input_text", text: "[card] and [card]" }]);
  assert.equal(input[1].output, "[card]", "a tool output is judged in the chat form, as a tool message");
  assert.equal(input[2].content, "never [card]", "deny rules were judged on the chat form already");
  assert.deepEqual(redactNative({ input: "1234-5678" }, rules).input, "[card]");
});

/** Runs the native stream body over `events` (then `tail`: an error, or a clean end) and reads it. */
async function body(events: JsonObject[], tail?: Error) {
  const rest = events.slice(1);
  const source = new ReadableStream<JsonObject>({
    pull(controller) {
      const next = rest.shift();
      if (next) controller.enqueue(next);
      else if (tail) controller.error(tail);
      else controller.close();
    },
  }, { highWaterMark: 0 });
  let outcome: NativeStreamOutcome | undefined;
  let stored: [JsonObject, string | null] | undefined;
  const stream = nativeStreamBody({ first: events[0], rest: source.getReader() }, {
    frame: FRAME,
    startedAt: performance.now(),
    onEnd: (o) => outcome = o,
    onFinal: (response, upstreamId) => {
      stored = [response, upstreamId];
    },
  });
  const text = await new Response(stream).text();
  const frames = text.trim().split("\n\n").map((f) => JSON.parse(f.split("\n")[1].slice(6)) as JsonObject);
  return { frames, outcome: outcome!, stored };
}

const CREATED = {
  type: "response.created",
  sequence_number: 4,
  response: { id: "resp_up", status: "in_progress" },
};
const DELTA = { type: "response.output_text.delta", sequence_number: 9, item_id: "m", delta: "Hi" };

Deno.test("native stream: events forwarded renumbered, the final Response stored with the upstream id", async () => {
  const done = {
    type: "response.completed",
    response: { id: "resp_up", status: "completed", usage: { input_tokens: 3, output_tokens: 1 } },
  };
  const { frames, outcome, stored } = await body([CREATED, DELTA, done]);
  assert.deepEqual(frames.map((f) => f.sequence_number), [0, 1, 2]);
  assert.deepEqual(frames.map((f) => (f.response as JsonObject | undefined)?.id), [
    "resp_gw",
    undefined,
    "resp_gw",
  ]);
  assert.equal(outcome.end, "ok");
  assert.deepEqual(outcome.usage, { prompt: 3, completion: 1 });
  assert.deepEqual(outcome.texts.opening(), ["Hi"]);
  assert.equal(stored![1], "resp_up");
  assert.equal(stored![0].id, "resp_gw");
});

Deno.test("native stream: a failure after the start ends with error and response.failed, never cleanly", async () => {
  const cut = new GatewayError(502, "Provider ended early with sk-secret.", { code: "upstream_error" });
  const { frames, outcome, stored } = await body([CREATED, DELTA], cut);
  assert.deepEqual(frames.map((f) => f.type), [
    "response.created",
    "response.output_text.delta",
    "error",
    "response.failed",
  ]);
  assert.deepEqual(frames.map((f) => f.sequence_number), [0, 1, 2, 3]);
  const failed = frames[3].response as JsonObject;
  assert.deepEqual([failed.id, failed.status, failed.model], ["resp_gw", "failed", "my-alias"]);
  assert.equal(outcome.end, "error");
  // Stored as the client received it (OpenAI keeps a failed response), without the upstream's id: a later turn
  // resends the conversation rather than chain onto a failed upstream response.
  assert.deepEqual(stored, [failed, null], "a failed stream is stored as failed");
});

Deno.test("native stream: an upstream's response.failed is forwarded with its error scrubbed, the code included", async () => {
  const failed = {
    type: "response.failed",
    response: { id: "resp_up", status: "failed", error: { code: "sk-secret", message: "bad key sk-secret" } },
  };
  const { frames, outcome, stored } = await body([CREATED, failed]);
  assert.deepEqual(frames.map((f) => f.type), ["response.created", "response.failed"]);
  assert.deepEqual(stored, [frames[1].response, null], "stored as forwarded, without the upstream's id");
  assert.deepEqual((frames[1].response as JsonObject).error, {
    code: "[redacted]",
    message: "bad key [redacted]",
  });
  assert.equal(outcome.end, "error");
  // The code goes on into the usage record, the metrics and the trace.
  assert.equal(outcome.error?.code, "[redacted]");
  assert.equal(outcome.error?.message, "bad key [redacted]");
});

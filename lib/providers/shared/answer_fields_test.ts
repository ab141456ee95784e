import assert from "node:assert/strict";
import { createScrubber, type Scrubber } from "../../secrets/scrubber.ts";
import type { JsonObject } from "../../openai/types.ts";
import { fieldScrub, scrubAnswerFields } from "./answer_fields.ts";

const KEY = "sk-proj-Xq7vB2mNp4Lk9TzR8wYc3FhJ6dGs1AeU";
/** Any 8-character run of the key is a leak. */
const PIECE = KEY.slice(8, 20);
const scrubber = createScrubber([KEY]);

/** The paths of `value` whose strings still hold a run of the key. */
function leaks(value: unknown, at = ""): string[] {
  if (typeof value === "string") return value.includes(PIECE) ? [at] : [];
  if (Array.isArray(value)) return value.flatMap((item, i) => leaks(item, `${at}[${i}]`));
  if (typeof value === "object" && value !== null) {
    return Object.entries(value).flatMap(([k, v]) => leaks(v, at === "" ? k : `${at}.${k}`));
  }
  return [];
}

/** A scrubber counting its `test` calls. */
function counting(): { scrubber: Scrubber; tests: () => number } {
  let tests = 0;
  return { scrubber: { ...scrubber, test: (t) => (tests++, scrubber.test(t)) }, tests: () => tests };
}

Deno.test("answer fields: identifiers are scrubbed where each API keeps them; the content is left as the model said it", () => {
  const chunk = scrubAnswerFields({
    id: `chatcmpl-${KEY}`,
    model: `m-${KEY}`,
    system_fingerprint: `fp_${KEY}`,
    choices: [{ index: 0, delta: { content: `the key is ${KEY}` } }],
  }, scrubber);
  assert.deepEqual(chunk, {
    id: "chatcmpl-***",
    model: "m-***",
    system_fingerprint: "fp_***",
    choices: [{ index: 0, delta: { content: `the key is ${KEY}` } }],
  });
  const event = scrubAnswerFields({
    type: "response.completed",
    response: { id: `resp_${KEY}`, output: [{ id: `msg_${KEY}`, type: "message" }] },
  }, scrubber);
  assert.deepEqual(leaks(event), []);
  const start = scrubAnswerFields(
    { type: "message_start", message: { id: `msg_${KEY}`, model: "claude" } },
    scrubber,
  );
  assert.deepEqual(start, { type: "message_start", message: { id: "msg_***", model: "claude" } });
  const gemini = scrubAnswerFields({ responseId: KEY, modelVersion: "gem" }, scrubber);
  assert.deepEqual(gemini, { responseId: "***", modelVersion: "gem" });
});

Deno.test("answer fields: a chat completion's finish reason, service tier, usage and tool call ids are scrubbed, its content is not", () => {
  const said = {
    content: `text ${KEY}`,
    reasoning_content: `thought ${KEY}`,
    refusal: `no ${KEY}`,
    annotations: [{ type: "url_citation", url_citation: { url: `https://x/${KEY}` } }],
  };
  const call = { name: `tool_${KEY}`, arguments: `{"k":"${KEY}"}` };
  const completion = scrubAnswerFields({
    id: "c1",
    object: "chat.completion",
    model: "m",
    service_tier: KEY,
    provider: KEY,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        ...said,
        tool_calls: [{ id: `call_${KEY}`, type: "function", function: call }],
      },
      finish_reason: KEY,
      stop_reason: KEY,
      logprobs: { content: [{ token: KEY, logprob: -1, bytes: [1] }] },
    }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, note: KEY, details: { tier: [KEY] } },
  }, scrubber);
  assert.deepEqual(leaks(completion).sort(), [
    "choices[0].logprobs.content[0].token",
    "choices[0].message.annotations[0].url_citation.url",
    "choices[0].message.content",
    "choices[0].message.reasoning_content",
    "choices[0].message.refusal",
    "choices[0].message.tool_calls[0].function.arguments",
    "choices[0].message.tool_calls[0].function.name",
  ]);
  assert.equal(completion.choices[0].message.tool_calls[0].id, "call_***");
  assert.equal(completion.choices[0].finish_reason, "***");
  const chunk = scrubAnswerFields({
    id: "c1",
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: `call_${KEY}`, function: call }] } }],
  }, scrubber);
  assert.deepEqual(leaks(chunk).sort(), [
    "choices[0].delta.tool_calls[0].function.arguments",
    "choices[0].delta.tool_calls[0].function.name",
  ]);
});

Deno.test("answer fields: a Messages answer's stop reason, container, usage, tool_use ids and event types are scrubbed, its content is not", () => {
  const message = scrubAnswerFields({
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: "claude",
    content: [
      { type: "text", text: `text ${KEY}`, citations: [{ cited_text: KEY }] },
      { type: "thinking", thinking: KEY, signature: KEY },
      { type: "tool_use", id: `toolu_${KEY}`, name: "f", input: { k: KEY } },
      { type: "web_search_tool_result", tool_use_id: `srvtoolu_${KEY}`, content: [{ type: KEY, url: "u" }] },
    ],
    stop_reason: KEY,
    stop_sequence: KEY,
    container: { id: KEY, expires_at: "2025-01-01T00:00:00Z" },
    usage: { input_tokens: 1, output_tokens: 1, service_tier: KEY },
  }, scrubber);
  assert.deepEqual(leaks(message).sort(), [
    "content[0].citations[0].cited_text",
    "content[0].text",
    "content[1].signature",
    "content[1].thinking",
    "content[2].input.k",
  ]);
  assert.equal(message.content[2].id, "toolu_***");
  const scrub = fieldScrub(scrubber);
  const events: JsonObject[] = [
    {
      type: "content_block_start",
      index: 0,
      content_block: { type: "tool_use", id: `toolu_${KEY}`, input: {} },
    },
    { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: KEY } },
    {
      type: "message_delta",
      delta: { stop_reason: KEY, stop_sequence: null, container: { id: KEY } },
      usage: { service_tier: KEY },
    },
    { type: "message_stop", "amazon-bedrock-invocationMetrics": { inputTokenCount: 1, note: KEY } },
    { type: `ping_${KEY}`, note: KEY, nested: { deeper: [KEY] } },
  ];
  for (const event of events) scrub(event);
  assert.deepEqual(leaks(events), ["[1].delta.partial_json"]);
  assert.deepEqual(events[4], { type: "ping_***", note: "***", nested: { deeper: ["***"] } });
});

Deno.test("answer fields: a Response's incomplete reason, tier, user, usage, call ids and event types are scrubbed, its content is not", () => {
  const response = {
    id: "resp_1",
    object: "response",
    status: "incomplete",
    model: "m",
    output: [
      {
        id: "fc_1",
        type: "function_call",
        status: "completed",
        call_id: `call_${KEY}`,
        name: "f",
        arguments: KEY,
      },
      {
        id: "rs_1",
        type: "reasoning",
        encrypted_content: KEY,
        summary: [{ type: "summary_text", text: KEY }],
      },
      {
        id: "msg_1",
        type: "message",
        role: "assistant",
        content: [{ type: "output_text", text: KEY, logprobs: [] }],
      },
    ],
    incomplete_details: { reason: KEY },
    service_tier: KEY,
    user: KEY,
    metadata: { note: KEY },
    usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2, note: KEY },
  };
  const content = [
    "output[0].arguments",
    "output[1].encrypted_content",
    "output[1].summary[0].text",
    "output[2].content[0].text",
  ];
  const whole = scrubAnswerFields(structuredClone(response), scrubber, "response");
  assert.deepEqual(leaks(whole).sort(), content);
  assert.equal(whole.output[0].call_id, "call_***");
  const scrub = fieldScrub(scrubber);
  const events: JsonObject[] = [
    { type: "response.created", response: structuredClone(response) },
    {
      type: "response.output_item.added",
      item: { type: "function_call", call_id: `call_${KEY}`, arguments: "" },
    },
    { type: "response.function_call_arguments.delta", item_id: "fc_1", delta: KEY, obfuscation: KEY },
    { type: `response.${KEY}`, sequence_number: 3, detail: { note: KEY } },
  ];
  for (const event of events) scrub(event);
  assert.deepEqual(leaks(events).sort(), [...content.map((at) => `[0].response.${at}`), "[2].delta"]);
  assert.deepEqual(events[3], { type: "response.***", sequence_number: 3, detail: { note: "***" } });
});

Deno.test("answer fields: a Gemini answer's finish reason and message, safety ratings, prompt feedback and call ids are scrubbed, its content is not", () => {
  const answer = scrubAnswerFields({
    candidates: [{
      content: {
        role: "model",
        parts: [{ text: KEY }, { functionCall: { id: KEY, name: "f", args: { k: KEY } } }, {
          thoughtSignature: KEY,
        }],
      },
      finishReason: KEY,
      finishMessage: `because ${KEY}`,
      safetyRatings: [{ category: KEY, probability: KEY }],
      citationMetadata: { citationSources: [{ uri: KEY }] },
      index: 0,
    }],
    promptFeedback: { blockReason: KEY, safetyRatings: [{ category: KEY }] },
    usageMetadata: { promptTokenCount: 1, promptTokensDetails: [{ modality: KEY, tokenCount: 1 }] },
    modelVersion: "gem",
    responseId: "r",
  }, scrubber);
  assert.deepEqual(leaks(answer).sort(), [
    "candidates[0].citationMetadata.citationSources[0].uri",
    "candidates[0].content.parts[0].text",
    "candidates[0].content.parts[1].functionCall.args.k",
    "candidates[0].content.parts[2].thoughtSignature",
  ]);
});

Deno.test("answer fields: a stream's repeated clean values are tested once, and nothing is asked without a secret", () => {
  const { scrubber: counted, tests } = counting();
  const scrub = fieldScrub(counted);
  for (let i = 0; i < 100; i++) {
    scrub({
      id: "chatcmpl-1",
      model: "m",
      service_tier: "default",
      choices: [{ index: 0, delta: { content: `word ${i}` }, finish_reason: "length" }],
    } as JsonObject);
  }
  assert.equal(tests(), 4, "id, model, service_tier and finish_reason, once each");
  // An Anthropic stream: the event's type and its delta's type are kept apart, so neither is tested again.
  const before = tests();
  for (let i = 0; i < 100; i++) {
    scrub({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: `word ${i}` } });
  }
  assert.equal(tests() - before, 2);
  const none = { id: `x-${KEY}`, finish_reason: KEY };
  assert.equal(scrubAnswerFields(none, createScrubber([])).id, `x-${KEY}`);
  assert.equal(scrubAnswerFields(none, undefined).finish_reason, KEY);
});

Deno.test("answer fields: the settings a Response repeats are scrubbed at any depth, keys too, whole or in an event; an event's own text is the model's", () => {
  // A tool's parameter schema holding the key in a property name and a description, `depth` objects down.
  const schema = (depth: number): JsonObject => {
    let inner: JsonObject = { type: "object", properties: { [KEY]: { type: "string", description: KEY } } };
    for (let i = 0; i < depth; i++) {
      inner = { type: "object", properties: { a: { type: "array", items: inner } } };
    }
    return inner;
  };
  const settings = {
    instructions: [{ type: "message", role: "developer", content: [{ type: "input_text", text: KEY }] }],
    metadata: { [KEY]: "v", note: KEY },
    tools: [{ type: "function", name: "f", description: KEY, parameters: schema(40) }],
    tool_choice: { type: "function", name: KEY },
    text: { format: { type: "json_schema", name: KEY, schema: schema(2) }, verbosity: KEY },
    reasoning: { effort: KEY, summary: KEY },
    prompt: { id: KEY, variables: { who: KEY } },
    user: KEY,
    prompt_cache_key: KEY,
    safety_identifier: KEY,
    truncation: KEY,
    billing: { payer: KEY },
    temperature: 1,
  };
  const response = {
    id: "resp_1",
    object: "response",
    status: "completed",
    model: "m",
    output: [],
    ...settings,
  };
  const whole = scrubAnswerFields(structuredClone(response), scrubber, "response");
  assert.deepEqual(leaks(whole), []);
  assert.ok(!JSON.stringify(whole).includes(PIECE), "no key of it holds the key");
  assert.deepEqual(whole.metadata, { note: "***", "***": "v" });
  assert.equal(whole.temperature, 1);
  const scrub = fieldScrub(scrubber);
  const events: JsonObject[] = [
    { type: "response.created", response: structuredClone(response) },
    { type: "response.output_text.done", item_id: "msg_1", text: `the key is ${KEY}` },
    { type: "response.completed", response: structuredClone(response) },
  ];
  for (const event of events) scrub(event);
  assert.deepEqual(leaks(events), ["[1].text"]);
  assert.ok(!JSON.stringify([events[0], events[2]]).includes(PIECE));
  // A Messages answer repeats its request's context editing: scrubbed as well, its text not.
  const message = scrubAnswerFields({
    type: "message",
    content: [{ type: "text", text: KEY }],
    context_management: { applied_edits: [{ type: KEY }] },
  }, scrubber);
  assert.deepEqual(leaks(message), ["content[0].text"]);
});

Deno.test("answer fields: a Response's settings repeated in a stream are tested once each, and a clean one is left as it was", () => {
  const { scrubber: counted, tests } = counting();
  const scrub = fieldScrub(counted);
  const instructions = "You are a coding agent. ".repeat(400);
  const tools = [{ type: "function", name: "f", parameters: { type: "object", properties: { a: {} } } }];
  const response = () => ({ id: "resp_1", object: "response", model: "m", output: [], instructions, tools });
  const created = { type: "response.created", response: response() };
  scrub(created);
  const first = tests();
  scrub({ type: "response.in_progress", response: response() });
  scrub({ type: "response.completed", response: response() });
  // Each later event tests its own type only: the tools' short keys and strings (type, "function", name, "f",
  // parameters, "object", properties, a) tested clean in the first, and the Response's id, object, model and its
  // long instructions are unchanged.
  assert.equal(tests() - first, 2);
  assert.deepEqual(created.response, response());
});

Deno.test("answer fields: a Gemini stream's usage and safety ratings are tested once per stream, not per chunk; a secret among them is still masked", () => {
  const { scrubber: counted, tests } = counting();
  const scrub = fieldScrub(counted);
  const chunk = (i: number, extra: Record<string, unknown> = {}) => ({
    candidates: [{
      content: { role: "model", parts: [{ text: `word ${i}` }] },
      safetyRatings: [
        { category: "HARM_CATEGORY_HATE_SPEECH", probability: "NEGLIGIBLE" },
        { category: "HARM_CATEGORY_DANGEROUS_CONTENT", probability: "NEGLIGIBLE" },
      ],
    }],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: i, totalTokenCount: 10 + i, ...extra },
    modelVersion: "gemini-2.5-flash",
  });
  scrub(chunk(0) as JsonObject);
  const first = tests();
  for (let i = 1; i <= 100; i++) scrub(chunk(i) as JsonObject);
  assert.equal(tests() - first, 0, "every key and name was seen clean in the first chunk");
  const hostile = chunk(101, { [KEY]: 1, note: `by ${KEY}` }) as JsonObject;
  scrub(hostile);
  assert.ok(!JSON.stringify(hostile).includes(KEY), JSON.stringify(hostile));
});

Deno.test("answer fields: an answer passed through as its text is masked when the text hides the key in escapes", () => {
  const escaped = [...KEY].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("");
  for (
    const text of [
      `{"id":"resp_1","object":"response","metadata":{"note":"${escaped}"},"output":[]}`,
      `{"id":"resp_1","object":"response","metadata":{"${escaped}":"v"},"output":[]}`,
      `{"id":"resp_1","object":"response","metadata":{"note":"by ${KEY}"},"output":[]}`,
    ]
  ) {
    const answer = scrubAnswerFields(JSON.parse(text), scrubber, "response", text);
    assert.deepEqual(leaks(answer), [], text);
    assert.ok(!Object.keys(answer.metadata).some((key) => key.includes(PIECE)), text);
  }
  const clean = `{"id":"resp_1","object":"response","metadata":{"note":"fine"},"output":[]}`;
  assert.deepEqual(scrubAnswerFields(JSON.parse(clean), scrubber, "response", clean), JSON.parse(clean));
});

/** The native Responses pieces of the OpenAI and Azure adapters: requests, the event stage, token counting. */
import assert from "node:assert/strict";
import { configSchema, type OpenAIProviderConfig } from "../../config/schema.ts";
import { GatewayError } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import { sseParseTransformer } from "../../sse/parse.ts";
import { runStages } from "../../../tests/helpers/run_stages.ts";
import type { ResolvedTarget } from "../../config/types.ts";
import type { OpenAIBeta, ResponsesCall } from "../types.ts";
import { openAIAdapter } from "./adapter.ts";
import { countTokensBody, inputTokensOf, responsesEventTransformer } from "./responses.ts";

function openai(extra: Record<string, unknown>): OpenAIProviderConfig {
  const parsed = configSchema.parse({
    providers: {
      p: { type: "openai", base_url: "https://api.example.com/v1/", api_key: "sk-secret-1", ...extra },
    },
    models: {},
  });
  return parsed.providers.p as OpenAIProviderConfig;
}

const call = (config: OpenAIProviderConfig, openaiBeta: OpenAIBeta | null = null): ResponsesCall => ({
  target: { provider: "p", providerConfig: config, model: "gpt-up" } as unknown as ResolvedTarget,
  signal: new AbortController().signal,
  requestId: "req_1",
  openaiBeta,
});

/** A recorded-shape OpenAI Responses stream (event lines, sequence numbers), as the bytes arrive. */
const STREAM = [
  'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_up","object":"response","status":"in_progress","output":[]}}',
  'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hé ☀"}',
  'event: response.completed\ndata: {"type":"response.completed","sequence_number":2,"response":{"id":"resp_up","object":"response","status":"completed","output":[],"usage":{"input_tokens":3,"output_tokens":2,"total_tokens":5}}}',
  "",
].join("\n\n");

async function events(text: string, split = 0): Promise<JsonObject[]> {
  const bytes = new TextEncoder().encode(text);
  const parts = split > 0 ? [bytes.slice(0, split), bytes.slice(split)] : [bytes];
  const out: JsonObject[] = [];
  for await (
    const e of runStages(parts, sseParseTransformer(), responsesEventTransformer("p", ["sk-secret-1"]))
  ) {
    out.push(e);
  }
  return out;
}

async function failure(text: string): Promise<GatewayError> {
  try {
    await events(text);
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    return err;
  }
  throw new Error("the stream did not fail");
}

Deno.test("openai native responses: only with native_responses, to {base}/responses with the chat headers", () => {
  assert.equal(openAIAdapter(openai({})).responsesRequest, undefined);
  assert.equal(openAIAdapter(openai({})).countTokensRequest, undefined);
  const config = openai({ native_responses: true, headers: { "OpenAI-Organization": "org-1" } });
  const adapter = openAIAdapter(config);
  const body = { model: "gpt-up", input: "hi", stream: true, tools: [{ type: "web_search" }] };
  const request = adapter.responsesRequest!(body, call(config));
  assert.equal(request.url, "https://api.example.com/v1/responses");
  assert.equal(request.headers.accept, "text/event-stream");
  assert.equal(request.headers["OpenAI-Organization"], "org-1");
  assert.equal(request.headers["x-client-request-id"], "req_1");
  assert.equal("authorization" in request.headers, false, "the key is added by authorize, last");
  assert.deepEqual(JSON.parse(String(request.body)), body);
  assert.equal(adapter.authorize(request), request);
  assert.equal(request.headers.authorization, "Bearer sk-secret-1");
});

Deno.test("openai native responses: the client's beta opt-in goes as sent, its names after the operator's", () => {
  const config = openai({
    native_responses: true,
    headers: { "OpenAI-Beta": "ops_beta=v2, responses_multi_agent=v1" },
  });
  const adapter = openAIAdapter(config);
  const beta = { header: "responses_multi_agent=v1,new_beta=v1", query: true };
  const body = { model: "gpt-up", input: "hi" };
  for (
    const [request, path] of [
      [adapter.responsesRequest!(body, call(config, beta)), "responses"],
      [adapter.compactRequest!(body, call(config, beta)), "responses/compact"],
      [
        adapter.countTokensRequest!(
          { chat: { model: "a", messages: [] }, responses: body, openaiBeta: beta },
          call(config),
        )!,
        "responses/input_tokens",
      ],
    ] as const
  ) {
    assert.equal(request.url, `https://api.example.com/v1/${path}?beta=true`);
    assert.equal(request.headers["openai-beta"], "ops_beta=v2,responses_multi_agent=v1,new_beta=v1");
    assert.equal("OpenAI-Beta" in request.headers, false, "one header, not two spellings of it");
  }
  const plain = adapter.responsesRequest!(body, call(config, { header: null, query: true }));
  assert.equal(plain.url, "https://api.example.com/v1/responses?beta=true");
  assert.equal(
    plain.headers["OpenAI-Beta"],
    "ops_beta=v2, responses_multi_agent=v1",
    "the operator's as set",
  );
  const none = adapter.responsesRequest!(body, call(config));
  assert.equal(none.url, "https://api.example.com/v1/responses");
});

Deno.test("openai native responses: the event stage gives each event's object, at every split", async () => {
  const whole = await events(STREAM);
  assert.deepEqual(whole.map((e) => e.type), [
    "response.created",
    "response.output_text.delta",
    "response.completed",
  ]);
  assert.equal(whole[1].delta, "Hé ☀");
  const bytes = new TextEncoder().encode(STREAM).length;
  for (let at = 1; at < bytes; at += 7) assert.deepEqual(await events(STREAM, at), whole, `split at ${at}`);
});

Deno.test("openai native responses: an error event, a cut and a typeless event fail the stream", async () => {
  const error = await failure(
    'event: response.created\ndata: {"type":"response.created","response":{"id":"r"}}\n\n' +
      'event: error\ndata: {"type":"error","code":"rate_limit_exceeded","message":"slow down, key sk-secret-1","param":null}\n\n',
  );
  assert.equal(error.code, "rate_limit_exceeded");
  assert.doesNotMatch(error.message, /sk-secret-1/, "the upstream's secrets are scrubbed");
  assert.match(error.message, /slow down/);

  const cut = await failure('event: response.created\ndata: {"type":"response.created","response":{}}\n\n');
  assert.equal(cut.status, 502);
  assert.match(cut.message, /before it was complete/);

  const typeless = await failure('data: {"sequence_number":0}\n\n');
  assert.equal(typeless.code, "upstream_invalid_response");
  const notObject = await failure("data: [1,2]\n\n");
  assert.equal(notObject.code, "upstream_invalid_response");
});

Deno.test("openai native responses: token counting sends TokenCountsBody fields and reads input_tokens", () => {
  const config = openai({ native_responses: true });
  const adapter = openAIAdapter(config);
  const chat = { model: "a", messages: [{ role: "user", content: "hi" }] };
  assert.equal(adapter.countTokensRequest!({ chat }, call(config)), null, "no Responses body, no count");
  const responses = {
    model: "gpt-up",
    input: "hi",
    stream: true,
    store: false,
    tools: [],
    instructions: "x",
  };
  const request = adapter.countTokensRequest!({ chat, responses }, call(config))!;
  assert.equal(request.url, "https://api.example.com/v1/responses/input_tokens");
  assert.deepEqual(JSON.parse(String(request.body)), {
    model: "gpt-up",
    input: "hi",
    tools: [],
    instructions: "x",
  });
  assert.deepEqual(countTokensBody({ chat }), null);
  assert.equal(inputTokensOf({ object: "response.input_tokens", input_tokens: 42 }, "p"), 42);
  for (const bad of [{}, { input_tokens: "42" }, { input_tokens: -1 }, { input_tokens: 1.5 }]) {
    assert.throws(() => inputTokensOf(bad, "p"), (err) => err instanceof GatewayError && err.status === 502);
  }
});

Deno.test("openai native responses: a final event whose response is not a Response fails the stream as the upstream's", async () => {
  const created = 'event: response.created\ndata: {"type":"response.created","response":{"id":"r"}}\n\n';
  for (const type of ["response.completed", "response.incomplete", "response.failed"]) {
    for (const response of [null, [], "done", { usage: { input_tokens: 3, output_tokens: 4 } }, undefined]) {
      const event = JSON.stringify({ type, sequence_number: 1, response });
      const error = await failure(`${created}event: ${type}\ndata: ${event}\n\n`);
      assert.equal(error.status, 502, `${type} ${JSON.stringify(response)}`);
      assert.equal(error.code, "upstream_invalid_response", `${type} ${JSON.stringify(response)}`);
    }
    // The Response a whole answer must be passes.
    const good = JSON.stringify({ type, response: { id: "r", object: "response", status: "x", output: [] } });
    assert.equal((await events(`${created}event: ${type}\ndata: ${good}\n\n`)).length, 2, type);
  }
});

Deno.test("openai native responses: a whole answer that is an error body, not a Response or compaction, is the upstream's error", () => {
  const adapter = openAIAdapter(openai({ native_responses: true }));
  const c = call(openai({ native_responses: true }));
  const check = adapter.errorBody!;
  const read = (json: Record<string, unknown>) => {
    check(json, c);
    return json;
  };
  assert.throws(
    () => read({ error: { code: 429, message: "Rate limit exceeded with sk-secret-1" } }),
    (err: GatewayError) => {
      assert.equal(err.status, 429);
      assert.equal(err.code, "rate_limit_exceeded");
      assert.ok(!err.message.includes("sk-secret-1"), err.message);
      return true;
    },
  );
  // A Response is the answer whatever its `error` says (a failed response carries its own), and so is a
  // compaction; anything else without an error is left for the client API's check.
  const failed = {
    object: "response",
    status: "failed",
    output: [],
    error: { code: "server_error", message: "x" },
  };
  assert.equal(read(failed), failed);
  const compaction = { object: "response.compaction", output: [], error: null };
  assert.equal(read(compaction), compaction);
  const odd = { object: "list" };
  assert.equal(read(odd), odd);
});

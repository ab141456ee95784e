/**
 * An upstream that reports no usage has the request's prompt counted by the gateway (`tokens_estimated`): every
 * text the model reads, whichever client API sent it and whether the target is translated or native. Tool
 * definitions (a function's schema and description, a custom tool's grammar, OpenAI's legacy `functions`) are
 * read by the model as its messages are, and a legacy `function_call` in the history as a tool call is: left
 * out, a request with large tools would be recorded (and settled against token limits and budgets) as a few
 * tokens.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { JsonObject } from "../../lib/openai/types.ts";
import type { UsageRecord } from "../../lib/usage/record.ts";
import { type InProcessGateway, inProcessGateway } from "../helpers/in_process.ts";

const TOKEN = "gw-prompt-usage-0123456789";
/** A text long enough that leaving it out shows: about 40 tokens. */
const TEXT = "Looks up the current weather and a five day forecast for a city, with wind speed, humidity, " +
  "pressure and the chance of rain for each day, in the units the caller asks for.";
const GRAMMAR = 'start: "add " NUMBER " and " NUMBER\nNUMBER: /[0-9]+/\n// ' + TEXT;

/** An upstream (chat completions, and the Responses API) answering "ok" without any usage. */
function startUpstream() {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (request) => {
    if (new URL(request.url).pathname.endsWith("/responses")) {
      const item = {
        id: "msg_1",
        type: "message",
        role: "assistant",
        content: [{ type: "output_text", text: "ok" }],
      };
      return Response.json({
        id: "resp_u",
        object: "response",
        created_at: 1,
        model: "m",
        status: "completed",
        output: [item],
      });
    }
    const message = { role: "assistant", content: "ok" };
    return Response.json({
      id: "chatcmpl-u",
      object: "chat.completion",
      created: 1,
      model: "m",
      choices: [{ index: 0, message, finish_reason: "stop" }],
    });
  });
  return { baseURL: `http://127.0.0.1:${server.addr.port}/v1`, stop: () => server.shutdown() };
}

function gateway(baseURL: string): InProcessGateway {
  return inProcessGateway(`
providers:
  up: { type: openai, base_url: "${baseURL}", api_key: sk-scripted-0123456789 }
  native: { type: openai, base_url: "${baseURL}", api_key: sk-scripted-0123456789, native_responses: true }
models:
  chat: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ] }
  resp-native: { type: chat, targets: [ { provider: native, model: m, retries: 0 } ] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
}

/** The prompt tokens the usage record of one request to `path` says. */
async function promptOf(path: string, body: JsonObject): Promise<number> {
  const up = startUpstream();
  try {
    const gw = gateway(up.baseURL);
    const res = await gw.fetch(path, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ store: path.endsWith("/responses") ? false : undefined, ...body }),
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert.equal(gw.records.length, 1);
    const record: UsageRecord = gw.records[0];
    assert.equal(record.tokens_estimated, true);
    return record.prompt_tokens;
  } finally {
    await up.stop();
  }
}

/** Asserts that `more`'s prompt counts at least as many tokens more than `less`'s as {@linkcode TEXT} has. */
async function countsMore(path: string, more: JsonObject, less: JsonObject) {
  const [withIt, without] = [await promptOf(path, more), await promptOf(path, less)];
  assert(withIt - without >= 30, `${withIt} tokens with it, ${without} without`);
}

const USER = { role: "user", content: "weather in Oslo?" };
const FUNCTION = { name: "get_weather", description: TEXT, parameters: { type: "object" } };

Deno.test("prompt usage: chat completions count the tool definitions", async () => {
  await countsMore(
    "/v1/chat/completions",
    { model: "chat", messages: [USER], tools: [{ type: "function", function: FUNCTION }] },
    { model: "chat", messages: [USER] },
  );
});

Deno.test("prompt usage: chat completions count a custom tool's grammar", async () => {
  const custom = (format?: JsonObject) => ({
    type: "custom",
    custom: { name: "math", ...(format && { format }) },
  });
  await countsMore(
    "/v1/chat/completions",
    {
      model: "chat",
      messages: [USER],
      tools: [custom({ type: "grammar", grammar: { syntax: "lark", definition: GRAMMAR } })],
    },
    { model: "chat", messages: [USER], tools: [custom()] },
  );
});

Deno.test("prompt usage: chat completions count legacy functions and a function_call in the history", async () => {
  await countsMore(
    "/v1/chat/completions",
    { model: "chat", messages: [USER], functions: [FUNCTION] },
    { model: "chat", messages: [USER] },
  );
  const history = (call: JsonObject) => [
    USER,
    { role: "assistant", content: null, ...call },
    { role: "function", name: "get_weather", content: "sunny" },
  ];
  await countsMore(
    "/v1/chat/completions",
    { model: "chat", messages: history({ function_call: { name: "get_weather", arguments: TEXT } }) },
    { model: "chat", messages: history({ function_call: { name: "get_weather", arguments: "{}" } }) },
  );
});

for (const model of ["chat", "resp-native"]) {
  Deno.test(`prompt usage: Responses count function and custom tools (${model})`, async () => {
    await countsMore(
      "/v1/responses",
      { model, input: "weather in Oslo?", tools: [{ type: "function", ...FUNCTION }] },
      { model, input: "weather in Oslo?" },
    );
    const format = { type: "grammar", syntax: "lark", definition: GRAMMAR };
    await countsMore(
      "/v1/responses",
      { model, input: "add", tools: [{ type: "custom", name: "math", format }] },
      { model, input: "add", tools: [{ type: "custom", name: "math" }] },
    );
  });
}

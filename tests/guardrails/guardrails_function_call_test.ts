/**
 * Guardrails on the deprecated `function_call` (a client that asks with `functions` still gets it, and may send
 * it back as history), which reaches the model and the client as any tool call does: its arguments are checked
 * in the request (deny, mask), in a JSON answer and in a stream (deny, and masked values given back under
 * `reverse`, held text included).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { JsonObject } from "../../lib/openai/types.ts";
import { type InProcessGateway, inProcessGateway } from "../helpers/in_process.ts";

const TOKEN = "gw-guardrails-function-call-0123456789";
const CARD = "4111 1111 1111 1111";
const EMAIL = "alice.smith@example.com";

/** An upstream answering every request with one `function_call` whose arguments are `args(body)`'s pieces. */
function startFunctionCallUpstream(args: (body: JsonObject) => string[]) {
  const seen: JsonObject[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const body = await request.json() as JsonObject;
    seen.push(body);
    const pieces = args(body);
    const base = { id: "chatcmpl-fc", created: 1, model: "m" };
    if (body.stream !== true) {
      const message = {
        role: "assistant",
        content: null,
        function_call: { name: "send", arguments: pieces.join("") },
      };
      return Response.json({
        ...base,
        object: "chat.completion",
        choices: [{ index: 0, message, finish_reason: "function_call" }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      });
    }
    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${
        JSON.stringify({
          ...base,
          object: "chat.completion.chunk",
          choices: [{ index: 0, delta, finish_reason: finish }],
        })
      }\n\n`;
    const sse = [
      chunk({ role: "assistant", content: null, function_call: { name: "send", arguments: "" } }),
      ...pieces.map((piece) => chunk({ function_call: { arguments: piece } })),
      chunk({}, "function_call"),
      "data: [DONE]\n\n",
    ];
    return new Response(sse.join(""), { headers: { "content-type": "text/event-stream" } });
  });
  return { baseURL: `http://127.0.0.1:${server.addr.port}/v1`, seen, stop: () => server.shutdown() };
}

function gateway(baseURL: string): InProcessGateway {
  return inProcessGateway(`
providers:
  up: { type: openai, base_url: "${baseURL}", api_key: sk-scripted-0123456789 }
guardrails:
  no-cards-in: { type: pii, entities: [CREDIT_CARD], phase: input, action: deny }
  no-cards-out: { type: pii, entities: [CREDIT_CARD], phase: output, action: deny }
  hide-mail: { type: pii, entities: [EMAIL], phase: input, action: mask, reverse: true }
models:
  in: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ], guardrails: [no-cards-in] }
  out: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ], guardrails: [no-cards-out] }
  # The output check holds the answer's text back (a 256-character window) until the choice finishes.
  mail: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ], guardrails: [hide-mail, no-cards-out] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
}

function post(gw: InProcessGateway, body: JsonObject): Promise<Response> {
  return gw.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ functions: [{ name: "send", parameters: { type: "object" } }], ...body }),
  });
}

/** A stream's `function_call` arguments joined, whether it ended with [DONE], and whether it had an error. */
function streamedArguments(sse: string): { args: string; done: boolean; error: boolean } {
  let args = "";
  let error = false;
  for (const line of sse.split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const event = JSON.parse(line.slice(6));
    if (event.error) error = true;
    for (const choice of event.choices ?? []) args += choice.delta?.function_call?.arguments ?? "";
  }
  return { args, done: sse.includes("data: [DONE]"), error };
}

Deno.test("function_call guardrails: a card in an earlier turn's function_call arguments is refused", async () => {
  const up = startFunctionCallUpstream(() => ["{}"]);
  try {
    const res = await post(gateway(up.baseURL), {
      model: "in",
      messages: [
        { role: "user", content: "pay" },
        {
          role: "assistant",
          content: null,
          function_call: { name: "send", arguments: `{"card":"${CARD}"}` },
        },
        { role: "function", name: "send", content: "done" },
      ],
    });
    const json = await res.json();
    assert.equal(res.status, 400, JSON.stringify(json));
    assert.equal(json.error.code, "content_policy_violation");
    assert.equal(json.error.param, "messages[1].function_call.arguments");
    assert.equal(up.seen.length, 0);
  } finally {
    await up.stop();
  }
});

Deno.test("function_call guardrails: an answer's function_call with a card is withheld, JSON and streamed", async () => {
  const up = startFunctionCallUpstream(() => ['{"card":"4111 1111', ` 1111 1111"}`]);
  const gw = gateway(up.baseURL);
  try {
    const whole = await post(gw, { model: "out", messages: [{ role: "user", content: "pay" }] });
    const text = await whole.text();
    assert.equal(whole.status, 400, text);
    assert(!text.includes("4111"), text);

    const streamed = await post(gw, {
      model: "out",
      stream: true,
      messages: [{ role: "user", content: "pay" }],
    });
    const sse = await streamed.text();
    assert(!sse.includes("4111"), sse);
    const { done, error } = streamedArguments(sse);
    assert(error && !done, `the stream ends with an error event, not [DONE]: ${sse}`);
  } finally {
    await up.stop();
  }
});

Deno.test("function_call guardrails: a masked email never reaches the upstream and comes back in the answer's function_call", async () => {
  // The upstream calls the function with what it read in the last user message, split mid-placeholder.
  const up = startFunctionCallUpstream((body) => {
    const messages = body.messages as JsonObject[];
    const args = JSON.stringify({ to: messages.at(-1)!.content });
    return [args.slice(0, 10), args.slice(10)];
  });
  const gw = gateway(up.baseURL);
  const messages = [
    { role: "user", content: "mail it" },
    { role: "assistant", content: null, function_call: { name: "send", arguments: `{"to":"${EMAIL}"}` } },
    { role: "function", name: "send", content: "bounced" },
    { role: "user", content: EMAIL },
  ];
  try {
    const whole = await post(gw, { model: "mail", messages });
    assert.equal(whole.status, 200);
    const message = (await whole.json()).choices[0].message;
    assert.equal(message.function_call.arguments, JSON.stringify({ to: EMAIL }));

    const streamed = await post(gw, { model: "mail", stream: true, messages });
    const { args, done } = streamedArguments(await streamed.text());
    assert(done);
    assert.equal(args, JSON.stringify({ to: EMAIL }));

    for (const seen of up.seen) {
      const sent = JSON.stringify(seen);
      assert(!sent.includes(EMAIL), `the upstream got the address: ${sent}`);
      const legacy = (seen.messages as JsonObject[])[1].function_call as JsonObject;
      assert.equal(legacy.arguments, `{"to":"<EMAIL_1>"}`);
    }
  } finally {
    await up.stop();
  }
});

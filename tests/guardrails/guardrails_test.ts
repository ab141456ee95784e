/**
 * Guardrails over real sockets (issue 27, acceptance 2 and 3): built-in PII guardrails on the request and the
 * answer, on chat, Responses and Messages, JSON and streamed, tool-call arguments included. A masked value
 * never reaches the upstream and comes back to the client intact, however the stream's chunks split its
 * placeholder; a denied request gets its API's own error shape; an answer refused mid-stream ends with the
 * API's error event, never a clean end.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { TestGateway } from "../helpers/gateway.ts";
import { type ScriptedChat, startScriptedChat } from "../helpers/scripted_chat.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";

const TOKEN = "gw-guardrails-token-0123456789abcdef";
const EMAIL = "alice.smith@example.com";
const ADMIN = "gw-guardrails-admin-0123456789abcdef";
const CARD = "4111 1111 1111 1111";

function config(up: ScriptedChat): string {
  return `
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-scripted-0123456789 }
guardrails:
  no-cards: { type: pii, entities: [CREDIT_CARD], phase: both, action: deny }
  mask-emails: { type: pii, entities: [EMAIL], phase: input, action: mask, reverse: true }
  mask-answer-emails: { type: pii, entities: [EMAIL], phase: output, action: mask }
models:
  chat-guarded:
    type: chat
    targets: [ { provider: up, model: scripted, retries: 0 } ]
    guardrails: [no-cards, mask-emails]
  chat-both-masks:
    type: chat
    targets: [ { provider: up, model: scripted, retries: 0 } ]
    guardrails: [mask-emails, mask-answer-emails]
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: ops, token: ${ADMIN} }
`;
}

async function post(gw: TestGateway, path: string, body: Record<string, unknown>): Promise<Response> {
  return await fetch(`${gw.baseURL}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      "content-type": "application/json",
      "anthropic-version": "2023-06-01",
    },
    body: JSON.stringify(body),
  });
}

/** The text of a chat SSE stream's content deltas, and whether it ended with [DONE]. */
function chatStreamText(sse: string): { text: string; done: boolean; error: unknown } {
  let text = "";
  let error: unknown = undefined;
  for (const line of sse.split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const event = JSON.parse(line.slice(6));
    if (event.error) error = event.error;
    for (const c of event.choices ?? []) if (typeof c.delta?.content === "string") text += c.delta.content;
  }
  return { text, done: sse.includes("data: [DONE]"), error };
}

function withGateway(fn: (gw: TestGateway, up: ScriptedChat) => Promise<void>) {
  return withFakeGateway(startScriptedChat, config, fn);
}

/** The upstream answers by quoting the placeholder it was sent, split into two chunks at `at`. */
function echoPlaceholder(up: ScriptedChat, at: number) {
  up.answer = (body) => {
    const messages = body.messages as { content: string }[];
    const placeholder = /<EMAIL_\d+>/.exec(messages.at(-1)!.content)?.[0] ?? "<none>";
    const text = `Reply to ${placeholder} today.`;
    return { content: [text.slice(0, at), text.slice(at)] };
  };
}

Deno.test("guardrails: a masked email never reaches the upstream and comes back whole, at every chunk split", async () => {
  await withGateway(async (gw, up) => {
    const expected = `Reply to ${EMAIL} today.`;
    for (let at = 0; at <= "Reply to <EMAIL_1> today.".length; at++) {
      echoPlaceholder(up, at);
      const r = await post(gw, "/chat/completions", {
        model: "chat-guarded",
        stream: true,
        messages: [{ role: "user", content: `Write to ${EMAIL} please` }],
      });
      assert.equal(r.status, 200);
      const { text, done } = chatStreamText(await r.text());
      assert.equal(text, expected, `split at ${at}`);
      assert.ok(done);
    }
    assert.ok(up.seen.every((b) => !JSON.stringify(b).includes(EMAIL)), "the upstream never saw the address");
    assert.match(JSON.stringify(up.seen[0]), /<EMAIL_1>/);

    // JSON answers, Responses and Messages get it back too.
    echoPlaceholder(up, 3);
    const chat = await (await post(gw, "/chat/completions", {
      model: "chat-guarded",
      messages: [{ role: "user", content: `Write to ${EMAIL}` }],
    })).json();
    assert.equal(chat.choices[0].message.content, expected);
    const responses =
      await (await post(gw, "/responses", { model: "chat-guarded", input: `Write to ${EMAIL}` })).json();
    assert.equal(responses.output_text ?? responses.output[0].content[0].text, expected);
    const messages = await (await post(gw, "/messages", {
      model: "chat-guarded",
      max_tokens: 50,
      messages: [{ role: "user", content: `Write to ${EMAIL}` }],
    })).json();
    assert.equal(messages.content[0].text, expected);
    assert.ok(up.seen.every((b) => !JSON.stringify(b).includes(EMAIL)));
  });
});

Deno.test("guardrails: an address the output guardrail masks stays masked; only the request's own come back", async () => {
  await withGateway(async (gw, up) => {
    // The model writes another address and quotes the request's placeholder.
    up.answer = () => ({ content: ["Write to bob.private@corp-mail.org ", "about <EMAIL_1>."] });
    const request = { model: "chat-both-masks", messages: [{ role: "user", content: `Mail ${EMAIL}` }] };
    const json = await (await post(gw, "/chat/completions", request)).json();
    const streamed = chatStreamText(
      await (await post(gw, "/chat/completions", { ...request, stream: true })).text(),
    );
    for (const text of [json.choices[0].message.content as string, streamed.text]) {
      assert.ok(!text.includes("bob.private@corp-mail.org"), text);
      assert.match(text, /^Write to <EMAIL_\d+> about alice\.smith@example\.com\.$/);
    }
  });
});

Deno.test("guardrails: what the model says in its reasoning is checked as its answer is", async () => {
  await withGateway(async (gw, up) => {
    up.answer = () => ({ reasoning: ["The card is 4111 1111 ", "1111 1111, so"], content: ["Done."] });
    const request = { model: "chat-guarded", messages: [{ role: "user", content: "Think." }] };
    const json = await post(gw, "/chat/completions", request);
    assert.equal(json.status, 400, await json.clone().text());
    assert.equal((await json.json()).error.code, "content_policy_violation");
    const streamed = chatStreamText(
      await (await post(gw, "/chat/completions", { ...request, stream: true })).text(),
    );
    assert.ok(streamed.error, "the stream ends with the error event");
    assert.ok(!streamed.done);
  });
});

Deno.test("guardrails: a card number in the request is refused in each API's own shape; none reaches the upstream", async () => {
  await withGateway(async (gw, up) => {
    const text = `Charge ${CARD} for the order`;
    const chat = await post(gw, "/chat/completions", {
      model: "chat-guarded",
      messages: [{ role: "user", content: text }],
    });
    assert.equal(chat.status, 400);
    const chatError = (await chat.json()).error;
    assert.equal(chatError.code, "content_policy_violation");
    assert.match(chatError.message, /guardrail no-cards .*CREDIT_CARD/);
    assert.ok(!chatError.message.includes("4111"));
    assert.equal(chatError.param, "messages[0].content", "a request's refusal names where it found it");
    const responses = await post(gw, "/responses", { model: "chat-guarded", input: text, stream: true });
    assert.equal(responses.status, 400);
    assert.equal((await responses.json()).error.code, "content_policy_violation");
    const messages = await post(gw, "/messages", {
      model: "chat-guarded",
      max_tokens: 10,
      messages: [{ role: "user", content: text }],
    });
    assert.equal(messages.status, 400);
    const body = await messages.json();
    assert.equal(body.type, "error");
    assert.equal(body.error.type, "invalid_request_error");
    // In a plain-text document the model reads, too.
    const document = await post(gw, "/messages", {
      model: "chat-guarded",
      max_tokens: 10,
      messages: [{
        role: "user",
        content: [
          { type: "document", source: { type: "text", media_type: "text/plain", data: text } },
          { type: "text", text: "Summarise this." },
        ],
      }],
    });
    assert.equal(document.status, 400, await document.clone().text());
    // In a tool call's arguments of the conversation, too.
    const tool = await post(gw, "/chat/completions", {
      model: "chat-guarded",
      messages: [
        { role: "user", content: "pay" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: "c1",
            type: "function",
            function: { name: "pay", arguments: `{"card":"${CARD}"}` },
          }],
        },
        { role: "tool", tool_call_id: "c1", content: "done" },
      ],
    });
    assert.equal(tool.status, 400);
    await tool.body?.cancel();
    assert.equal(up.seen.length, 0, "no refused request reached the upstream");
  });
});

Deno.test("guardrails: a card number in the answer ends the stream with the error event, split at every offset", async () => {
  await withGateway(async (gw, up) => {
    const answer = `Your card is ${CARD}, thanks.`;
    let endedWithError = 0;
    for (let at = 1; at < answer.length; at += 3) {
      up.answer = () => ({ content: [answer.slice(0, at), answer.slice(at)] });
      const r = await post(gw, "/chat/completions", {
        model: "chat-guarded",
        stream: true,
        messages: [{ role: "user", content: "what is my card" }],
      });
      const sse = await r.text();
      if (r.status === 400) continue; // refused before the stream started (the first chunk held it all)
      const { text, done, error } = chatStreamText(sse);
      assert.ok(!done, `split at ${at}: never a clean end`);
      assert.ok(error, `split at ${at}: an error event`);
      assert.ok(!text.includes("4111"), `split at ${at}: no digit of the card reached the client`);
      endedWithError++;
    }
    assert.ok(endedWithError > 0, "streams that had started ended with the error event");
    // JSON: the whole answer is refused; tool-call arguments in the answer too.
    up.answer = () => ({ content: [answer] });
    const json = await post(gw, "/chat/completions", {
      model: "chat-guarded",
      messages: [{ role: "user", content: "x" }],
    });
    assert.equal(json.status, 400);
    // The refusal names no parameter: the answer is none of the request's (OpenAI's `param` names one).
    assert.equal((await json.json()).error.param, null);
    const responses = await post(gw, "/responses", { model: "chat-guarded", input: "x" });
    assert.equal(responses.status, 400);
    const refused = (await responses.json()).error;
    assert.equal(refused.code, "content_policy_violation");
    assert.equal(refused.param, null);
    up.answer = () => ({ toolArguments: ['{"card":"', CARD.slice(0, 7), CARD.slice(7), '"}'] });
    const tool = await post(gw, "/chat/completions", {
      model: "chat-guarded",
      stream: true,
      messages: [{ role: "user", content: "x" }],
      tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object" } } }],
    });
    const sse = await tool.text();
    assert.ok(!sse.includes("4111 1111"), "no card in the streamed arguments");
    assert.ok(!sse.includes("data: [DONE]"));
  });
});

Deno.test("guardrails: Responses and Messages streams refused mid-answer end with their own error events", async () => {
  await withGateway(async (gw, up) => {
    up.answer = () => ({ content: ["Hello there. ", "Your card is 4111 1111", " 1111 1111, thanks."] });
    const responses = await post(gw, "/responses", { model: "chat-guarded", input: "card?", stream: true });
    assert.equal(responses.status, 200);
    const rsse = await responses.text();
    assert.match(rsse, /event: response\.failed|"type":"response\.failed"/);
    assert.ok(!rsse.includes("response.completed"), "never a clean end");
    assert.ok(!rsse.includes("4111"));
    const messages = await post(gw, "/messages", {
      model: "chat-guarded",
      max_tokens: 50,
      stream: true,
      messages: [{ role: "user", content: "card?" }],
    });
    assert.equal(messages.status, 200);
    const msse = await messages.text();
    assert.match(msse, /event: error/);
    assert.ok(!msse.includes("message_stop"), "never a clean end");
    assert.ok(!msse.includes("4111"));
  });
});

Deno.test("guardrails: every outcome is in the usage record by guardrail, action and type, never the text", async () => {
  await withGateway(async (gw, up) => {
    echoPlaceholder(up, 4);
    await (await post(gw, "/chat/completions", {
      model: "chat-guarded",
      messages: [{ role: "user", content: `Write to ${EMAIL}` }],
    })).body?.cancel();
    await (await post(gw, "/chat/completions", {
      model: "chat-guarded",
      messages: [{ role: "user", content: `Charge ${CARD}` }],
    })).body?.cancel();
    // Both were JSON answers, whose records are queued before they are sent; `/admin/requests` stores what is
    // queued before it reads, so one call finds them.
    const records = async (guardrail: string) => {
      const r = await fetch(`${gw.url}/admin/requests?guardrail=${guardrail}`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      return (await r.json()).data as Record<string, unknown>[];
    };
    const [masked] = await records("mask-emails");
    assert.equal(masked.outcome, "modify");
    assert.equal(masked.rule, "guardrail:mask-emails");
    assert.deepEqual(masked.guardrails, [{
      name: "mask-emails",
      phase: "input",
      action: "mask",
      types: ["EMAIL"],
    }]);
    const [denied] = await records("no-cards");
    assert.equal(denied.outcome, "deny");
    assert.equal(denied.rule, "guardrail:no-cards");
    assert.equal(denied.status, 400);
    const explained = await (await fetch(`${gw.url}/admin/explain?token=app&model=chat-guarded`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    })).json();
    assert.deepEqual(
      explained.guardrails.map((
        g: { rule: string; phases: string[]; action: string },
      ) => [g.rule, g.phases, g.action]),
      [["guardrail:no-cards", ["input", "output"], "deny"], ["guardrail:mask-emails", ["input"], "mask"]],
    );
    const everything = JSON.stringify([masked, denied]) + JSON.stringify(gw.logs);
    assert.ok(
      !everything.includes(EMAIL) && !everything.includes("4111"),
      "no matched text in records or logs",
    );
  });
});

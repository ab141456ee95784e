/**
 * Input guardrails on what a conversation's earlier assistant turns said besides their content: a chat
 * message's `reasoning_content` and refusal (field or part), and a Responses `reasoning` item's summary, sent
 * in the request or re-sent from a stored response by `previous_response_id`. Each reaches the model as
 * history, so a `deny` refuses it and a `mask` keeps its value from the upstream, as for any message text.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { type InProcessGateway, inProcessGateway } from "../helpers/in_process.ts";
import { type ScriptedChat, startScriptedChat } from "../helpers/scripted_chat.ts";

const TOKEN = "gw-guardrails-history-0123456789abcdef";
const CARD = "4111 1111 1111 1111";
const EMAIL = "alice.smith@example.com";

function gateway(up: ScriptedChat): InProcessGateway {
  return inProcessGateway(`
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-scripted-0123456789 }
guardrails:
  no-cards: { type: pii, entities: [CREDIT_CARD], phase: input, action: deny }
  hide-mail: { type: pii, entities: [EMAIL], phase: input, action: mask, reverse: true }
models:
  g: { type: chat, targets: [ { provider: up, model: scripted, retries: 0 } ], guardrails: [no-cards, hide-mail] }
  plain: { type: chat, targets: [ { provider: up, model: scripted, retries: 0 } ] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
}

async function post(gw: InProcessGateway, path: string, body: unknown) {
  const res = await gw.fetch(path, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

/** A chat conversation whose earlier assistant turn is `assistant`. */
function chatWith(assistant: Record<string, unknown>) {
  return {
    model: "g",
    messages: [{ role: "user", content: "x" }, { role: "assistant", ...assistant }, {
      role: "user",
      content: "y",
    }],
  };
}

Deno.test("guardrails history: a card in an assistant turn's reasoning or refusal is refused before the upstream", async () => {
  const up = startScriptedChat();
  const gw = gateway(up);
  try {
    const cases: [string, string, unknown, string][] = [
      [
        "chat reasoning_content",
        "/v1/chat/completions",
        chatWith({ content: "ok", reasoning_content: `card ${CARD}` }),
        "messages[1].reasoning_content",
      ],
      [
        "chat refusal field",
        "/v1/chat/completions",
        chatWith({ content: null, refusal: `card ${CARD}` }),
        "messages[1].refusal",
      ],
      [
        "chat refusal part",
        "/v1/chat/completions",
        chatWith({ content: [{ type: "refusal", refusal: `card ${CARD}` }] }),
        "messages[1].content[0].refusal",
      ],
      ["Responses reasoning item", "/v1/responses", {
        model: "g",
        input: [
          { role: "user", content: "x" },
          { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: `card ${CARD}` }] },
          { role: "assistant", content: "ok" },
          { role: "user", content: "y" },
        ],
      }, "messages[1].reasoning_content"],
    ];
    for (const [name, path, body, param] of cases) {
      const { status, json } = await post(gw, path, body);
      assert.equal(status, 400, `${name}: ${JSON.stringify(json)}`);
      assert.equal(json.error.code, "content_policy_violation", name);
      if (path === "/v1/chat/completions") assert.equal(json.error.param, param, name);
    }
    assert.equal(up.seen.length, 0, "no refused request reached the upstream");
  } finally {
    await up.stop();
  }
});

Deno.test("guardrails history: an email in an assistant turn's reasoning reaches the upstream masked", async () => {
  const up = startScriptedChat();
  const gw = gateway(up);
  try {
    const { status } = await post(
      gw,
      "/v1/chat/completions",
      chatWith({ content: "ok", reasoning_content: `mail ${EMAIL}` }),
    );
    assert.equal(status, 200);
    const sent = up.seen[0].messages as Record<string, unknown>[];
    assert.equal(sent[1].reasoning_content, "mail <EMAIL_1>");
  } finally {
    await up.stop();
  }
});

Deno.test("guardrails history: a stored response's reasoning re-sent by previous_response_id is checked", async () => {
  const up = startScriptedChat();
  const gw = gateway(up);
  try {
    // Stored through an alias without guardrails, so its reasoning keeps the card.
    up.answer = () => ({ reasoning: [`the card is ${CARD}`], content: ["noted"] });
    const first = await post(gw, "/v1/responses", { model: "plain", input: "remember it", store: true });
    assert.equal(first.status, 200, JSON.stringify(first.json));
    up.answer = () => ({ content: ["ok"] });
    const before = up.seen.length;
    const next = await post(gw, "/v1/responses", {
      model: "g",
      input: "go on",
      previous_response_id: first.json.id,
    });
    assert.equal(next.status, 400, JSON.stringify(next.json));
    assert.equal(next.json.error.code, "content_policy_violation");
    assert.equal(up.seen.length, before, "the refused request never reached the upstream");
  } finally {
    await up.stop();
  }
});

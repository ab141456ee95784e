/**
 * An input guardrail that changes a text the chat form holds (a user's words, a tool result) on a request bound
 * for a target that speaks its API natively (Responses to an OpenAI target with `native_responses`, Messages to
 * Claude, the Gemini API to Gemini): the client's body is still passed through, with the change made where the
 * native body holds that text, so what only the native target reads (a Responses reasoning item and a plain-text
 * file, a Messages document of content blocks or of plain text, a tool result's document, a Gemini model turn's
 * thought) reaches it. A change the native body cannot carry exactly (tool-call arguments, which the chat form
 * re-serializes) is served over the chat form as before, and the answer names what that form went without in
 * `x-gateway-dropped`. A fake webhook guardrail replaces `MASKMARK`; the built-in masker masks e-mail addresses.
 */
import assert from "node:assert/strict";
import {
  anthropic,
  contentDocument,
  decoded,
  droppedOf,
  LOOKUP,
  MASK,
  MASKED,
  postGemini,
  postResponses,
  textFile,
  withGateway,
} from "./masked_native_gateway.ts";
import { TEST_TOKEN } from "../helpers/gateway.ts";

Deno.test("guardrails masked native: a masked chat text keeps the Responses passthrough, its reasoning item and plain-text file sent", async () => {
  await withGateway(async (gw, fakes) => {
    const res = await postResponses(gw, [
      { role: "user", content: "plan it" },
      {
        type: "reasoning",
        id: "rs_kept",
        summary: [{ type: "summary_text", text: "I planned the reply." }],
        encrypted_content: "enc-opaque-state",
      },
      {
        role: "user",
        content: [
          { type: "input_text", text: `hi ${MASK}` },
          { type: "input_file", filename: "notes.txt", file_data: textFile("the notes say hello") },
        ],
      },
    ]);
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(res.headers.get("x-gateway-dropped"), null);
    assert.equal((await res.json()).object, "response");
    assert.equal(fakes.chat.requests.length, 0, "nothing went over the chat form");
    const sent = fakes.responses.requests.at(-1)!;
    const body = decoded(sent.body);
    assert.ok(!body.includes(MASK), body);
    assert.ok(body.includes(`hi ${MASKED}`), body);
    assert.ok(body.includes("rs_kept") && body.includes("enc-opaque-state"), `reasoning item sent: ${body}`);
    assert.ok(body.includes("I planned the reply."), body);
    assert.ok(body.includes("the notes say hello"), `plain-text file sent: ${body}`);
    assert.equal(gw.records.at(-1)!.outcome, "modify");
    assert.equal(gw.records.at(-1)!.rule, "guardrail:hook");
  });
});

Deno.test("guardrails masked native: a masked e-mail keeps the Messages passthrough: its documents are sent, a text document is no 400", async () => {
  await withGateway(async (gw, fakes) => {
    const client = anthropic(gw);
    // A document of content blocks, and one in a tool result: only Claude reads them.
    const message = await client.messages.create({
      model: "chat-claude-pii",
      max_tokens: 50,
      tools: [LOOKUP],
      messages: [
        {
          role: "user",
          content: [contentDocument("the policy of the house"), {
            type: "text",
            text: "write to bob@example.com",
          }],
        },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "lookup", input: {} }] },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "t1", content: [contentDocument("record 42")] }],
        },
      ],
    });
    assert.equal(message.type, "message");
    let body = decoded(fakes.claude.requests.at(-1)!.body);
    assert.ok(!body.includes("bob@example.com"), body);
    assert.ok(body.includes("write to <EMAIL_1>"), body);
    assert.ok(body.includes('"type":"content"') && body.includes("the policy of the house"), body);
    assert.ok(body.includes("record 42"), `the tool result's document is sent: ${body}`);

    // A plain-text document: the chat form's `file` part, which Anthropic's chat translation refuses.
    const withText = await client.messages.create(
      {
        model: "chat-claude-pii",
        max_tokens: 50,
        messages: [{
          role: "user",
          content: [
            { type: "document", source: { type: "text", media_type: "text/plain", data: "meeting at noon" } },
            { type: "text", text: "tell carol@example.com" },
          ],
        }],
      },
    ).withResponse();
    assert.equal(withText.data.type, "message");
    assert.equal(withText.response.headers.get("x-gateway-dropped"), null);
    body = decoded(fakes.claude.requests.at(-1)!.body);
    assert.ok(!body.includes("carol@example.com"), body);
    assert.ok(body.includes('"type":"text","media_type":"text/plain","data":"meeting at noon"'), body);
    assert.equal(gw.records.at(-1)!.rule, "guardrail:contacts");
  });
});

Deno.test("guardrails masked native: a masked chat text keeps the Gemini passthrough, the model turn's thought sent", async () => {
  await withGateway(async (gw, fakes) => {
    const res = await postGemini(gw, [
      { role: "user", parts: [{ text: "hi" }] },
      { role: "model", parts: [{ text: "pondering the greeting", thought: true }, { text: "hello" }] },
      { role: "user", parts: [{ text: `again ${MASK}` }] },
    ]);
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(res.headers.get("x-gateway-dropped"), null);
    await res.body?.cancel();
    const body = decoded(fakes.gemini.requests.at(-1)!.body);
    assert.ok(!body.includes(MASK), body);
    assert.ok(body.includes(`again ${MASKED}`), body);
    assert.ok(body.includes("pondering the greeting"), `the thought is sent: ${body}`);
  });
});

Deno.test("guardrails masked native: a change the native body cannot carry goes over the chat form, which names what it went without", async () => {
  await withGateway(async (gw, fakes) => {
    // Responses: a tool call's arguments masked; a reasoning item no assistant turn follows has no chat form.
    const resp = await postResponses(gw, [
      { role: "user", content: "look it up" },
      { type: "function_call", call_id: "c1", name: "lookup", arguments: `{"q":"${MASK}"}` },
      { type: "function_call_output", call_id: "c1", output: "found" },
      {
        type: "reasoning",
        id: "rs_lost",
        summary: [{ type: "summary_text", text: "weighing the result" }],
        encrypted_content: "enc-lost-state",
      },
      { role: "user", content: "thanks" },
    ]);
    assert.equal(resp.status, 200, await resp.clone().text());
    await resp.body?.cancel();
    const chat = decoded(fakes.chat.requests.at(-1)!.body);
    assert.ok(!chat.includes(MASK), chat);
    assert.ok(chat.includes(MASKED), chat);
    const respDropped = droppedOf(resp);
    assert.deepEqual(respDropped, ["input[3].summary[0].text", "input[3].encrypted_content"]);
    assert.equal(gw.records.at(-1)!.dropped, respDropped.join(","));

    // Messages: a tool call's input masked; a tool result's document of content blocks has no chat form.
    const before = fakes.claude.requests.length;
    const messages = await anthropic(gw).messages.create({
      model: "chat-claude",
      max_tokens: 50,
      tools: [LOOKUP],
      messages: [
        { role: "user", content: "look it up" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "lookup", input: { q: MASK } }] },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "t1", content: [contentDocument("record 7")] }],
        },
      ],
    }).withResponse();
    assert.equal(messages.data.type, "message");
    assert.equal(fakes.claude.requests.length, before + 1);
    const claude = decoded(fakes.claude.requests.at(-1)!.body);
    assert.ok(!claude.includes(MASK), claude);
    assert.ok(!claude.includes("record 7"), claude);
    assert.deepEqual(droppedOf(messages.response), [
      "messages.2.content.0.content.0.source.type",
      "messages.2.content.0.content.0.source.content.0.text",
    ]);

    // Gemini: a function call's arguments masked; a model turn's thought has no chat form.
    const gem = await postGemini(gw, [
      { role: "user", parts: [{ text: "look it up" }] },
      {
        role: "model",
        parts: [{ text: "pondering the lookup", thought: true }, {
          functionCall: { name: "lookup", args: { q: MASK } },
        }],
      },
      { role: "user", parts: [{ functionResponse: { name: "lookup", response: { found: true } } }] },
    ]);
    assert.equal(gem.status, 200, await gem.clone().text());
    await gem.body?.cancel();
    const gemini = decoded(fakes.gemini.requests.at(-1)!.body);
    assert.ok(!gemini.includes(MASK), gemini);
    assert.deepEqual(droppedOf(gem), ["contents[1].parts[0].text"]);
  });
});

Deno.test("guardrails masked native: masked values given back, or an answer checked, keep the chat form, which names what it went without", async () => {
  await withGateway(async (gw, fakes) => {
    // `reverse`: the answer's placeholders are restored in the chat form's chunks. Its plain-text document goes
    // to Claude as one (no 400 for a `file` part); the one of content blocks has no chat form.
    const messages = await anthropic(gw).messages.create({
      model: "chat-claude-back",
      max_tokens: 50,
      messages: [{
        role: "user",
        content: [
          contentDocument("the policy of the house"),
          { type: "document", source: { type: "text", media_type: "text/plain", data: "meeting at noon" } },
          { type: "text", text: "write to bob@example.com" },
        ],
      }],
    }).withResponse();
    assert.equal(messages.data.type, "message");
    const claude = decoded(fakes.claude.requests.at(-1)!.body);
    assert.ok(!claude.includes("bob@example.com") && !claude.includes("the policy of the house"), claude);
    assert.ok(claude.includes('"type":"text","media_type":"text/plain","data":"meeting at noon"'), claude);
    assert.deepEqual(droppedOf(messages.response), [
      "messages.0.content.0.source.type",
      "messages.0.content.0.source.content.0.text",
    ]);

    // An output check reads the chat form's chunks: nothing of the request changed, the thought is left out.
    const gem = await gw.fetch("/v1beta/models/chat-gem-out:generateContent", {
      method: "POST",
      headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
      body: JSON.stringify({
        contents: [
          { role: "user", parts: [{ text: "hi" }] },
          { role: "model", parts: [{ text: "pondering the greeting", thought: true }, { text: "hello" }] },
          { role: "user", parts: [{ text: "again" }] },
        ],
      }),
    });
    assert.equal(gem.status, 200, await gem.clone().text());
    await gem.body?.cancel();
    assert.ok(!decoded(fakes.gemini.requests.at(-1)!.body).includes("pondering"));
    assert.deepEqual(droppedOf(gem), ["contents[1].parts[0].text"]);
    assert.equal(gw.records.at(-1)!.dropped, "contents[1].parts[0].text");
  });
});

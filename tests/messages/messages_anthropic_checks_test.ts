/**
 * What Anthropic refuses with a 400 and a translated target would answer anyway, through `POST /v1/messages`
 * over real sockets (lib/api/messages/anthropic_checks.ts): an empty user turn, an empty text block, a tool name
 * outside `^[a-zA-Z0-9_-]{1,128}$` or given twice, an image whose base64 data is not base64. An alias with no
 * Claude target answers Anthropic's 400 `invalid_request_error` naming the field, and calls no upstream; one with
 * a Claude target sends the request there as sent, for Anthropic to judge. Claude Code's recorded request and a
 * conversation ending with an empty assistant turn (a prefill) are still served.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { ANTHROPIC_OK, GEMINI_OK, json, withMixedVendors } from "../helpers/mixed_vendors.ts";

const RECORDED: { headers: Record<string, string>; body: Record<string, unknown> } = JSON.parse(
  Deno.readTextFileSync(new URL("../agents/recorded/claude_code.json", import.meta.url)),
);

async function post(gw: TestGateway, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const response = await fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: {
      "anthropic-version": "2023-06-01",
      ...headers,
      "x-api-key": TEST_TOKEN,
      "content-type": "application/json",
    },
    body: JSON.stringify({ max_tokens: 100, ...body }),
  });
  return { status: response.status, text: await response.text() };
}

const HI = { role: "user", content: "hi" };
const SCHEMA = { type: "object", properties: {} };

/** Each request Anthropic refuses, and the field its 400 names. */
const CASES: [string, Record<string, unknown>][] = [
  ["messages.0.content", { messages: [{ role: "user", content: "" }] }],
  ["messages.0.content.0.text", { messages: [{ role: "user", content: [{ type: "text", text: "" }] }] }],
  ["tools.0.name", { messages: [HI], tools: [{ name: "f g!", input_schema: SCHEMA }] }],
  ["tools.0.name", { messages: [HI], tools: [{ name: "x".repeat(129), input_schema: SCHEMA }] }],
  ["tools.1.name", {
    messages: [HI],
    tools: [{ name: "f", input_schema: SCHEMA }, { name: "f", input_schema: SCHEMA }],
  }],
  ["messages.0.content.0.source.data", {
    messages: [{
      role: "user",
      content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "!!!" } }],
    }],
  }],
];

Deno.test("messages anthropic checks: what Anthropic refuses is its 400 on a translated alias, Anthropic's to judge on a Claude one", async () => {
  await withMixedVendors(async (gw, up) => {
    for (const [field, body] of CASES) {
      const before = up.requests.length;
      const refused = await post(gw, { model: "chat-only-gemini", ...body });
      assert.equal(refused.status, 400, `${field}: ${refused.text}`);
      const error = JSON.parse(refused.text);
      assert.equal(error.type, "error");
      assert.equal(error.error.type, "invalid_request_error");
      assert.ok(error.error.message.startsWith(`${field}: `), error.error.message);
      assert.equal(up.requests.length, before, `${field}: no upstream is called`);

      // An alias with a Claude target sends it there, as sent.
      up.next = json(ANTHROPIC_OK);
      const native = await post(gw, { model: "chat-mixed-anthropic", ...body });
      assert.equal(native.status, 200, `${field}: ${native.text}`);
      assert.equal(up.requests.length, before + 1);
      assert.match(up.requests.at(-1)!.path, /\/v1\/messages$/);
    }
  });
});

Deno.test("messages anthropic checks: Claude Code's request and a final empty assistant turn are served on a translated alias", async () => {
  await withMixedVendors(async (gw, up) => {
    up.next = json(GEMINI_OK);
    const recorded = await post(
      gw,
      { ...RECORDED.body, model: "chat-only-gemini", stream: false },
      RECORDED.headers,
    );
    assert.equal(recorded.status, 200, recorded.text);
    const prefill = await post(gw, {
      model: "chat-only-gemini",
      messages: [HI, { role: "assistant", content: "" }],
    });
    assert.equal(prefill.status, 200, prefill.text);
    // Whitespace, a valid base64 image and distinct valid names pass as they did.
    const fine = await post(gw, {
      model: "chat-only-gemini",
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "look" },
          { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
        ],
      }],
      tools: [{ name: "get_weather", input_schema: SCHEMA }, {
        name: "mcp__srv__do-it",
        input_schema: SCHEMA,
      }],
    });
    assert.equal(fine.status, 200, fine.text);
  });
});

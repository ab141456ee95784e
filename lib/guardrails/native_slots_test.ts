import assert from "node:assert/strict";
import type { ResolvedContentRule } from "../config/types.ts";
import { redactedBody } from "../policy/content_rules.ts";
import type { TextSlot } from "../policy/text_slots.ts";
import { nativeSlots } from "./native_slots.ts";

const ssn: ResolvedContentRule = {
  name: "ssn",
  regex: /\b\d{3}-\d{2}-\d{4}\b/g,
  action: "redact",
  message: null,
  replacement: "[SSN]",
};

function chatSlot(text: string): TextSlot {
  return { param: "messages[0].content", text, write() {} };
}

Deno.test("native slots: only the texts no chat slot holds are judged, each once, as the content rules left them", () => {
  const chat = [chatSlot("hello"), chatSlot("ssn [SSN]")];
  const native = nativeSlots(
    [
      { param: "messages.0.content", text: "hello" },
      { param: "messages.0.content.1.source.content.0.text", text: "a document" },
      { param: "messages.1.content.0.source.content.0.text", text: "a document" },
      // Redacted first, as the chat slots were: then it is the chat form's text.
      { param: "system", text: "ssn 111-22-3333" },
    ],
    [ssn],
    chat,
    "messages",
  );
  assert.deepEqual(native.slots.map(({ param, text }) => ({ param, text })), [
    { param: "messages.0.content.1.source.content.0.text", text: "a document" },
  ]);
  assert.deepEqual(native.changes(), { unplaced: false });
});

Deno.test("native slots: what the guardrails changed, keyed by the text as the native body holds it", () => {
  const chat = [chatSlot("mail bob@example.com"), chatSlot("fine")];
  const native = nativeSlots(
    [
      { param: "messages.0.content", text: "mail bob@example.com" },
      { param: "messages.0.content.1.source.content.0.text", text: "doc bob@example.com" },
      { param: "messages.0.content.2.source.content.0.text", text: "untouched" },
    ],
    [],
    chat,
    "messages",
  );
  // Only the native-only text changed: the native body can carry every change.
  native.slots[0].text = "doc <EMAIL_1>";
  assert.deepEqual(native.changes(), {
    rewrites: new Map([["doc bob@example.com", "doc <EMAIL_1>"]]),
    unplaced: false,
  });
  // A chat text changed too: its native twin is rewritten alike, and the native body carries the change.
  chat[0].text = "mail <EMAIL_1>";
  const changes = native.changes();
  assert.equal(changes.unplaced, false);
  assert.deepEqual(
    changes.rewrites,
    new Map([
      ["mail bob@example.com", "mail <EMAIL_1>"],
      ["doc bob@example.com", "doc <EMAIL_1>"],
    ]),
  );
  // The native body is built with them, after the content rules' redactions.
  const body = {
    messages: [{ role: "user", content: "mail bob@example.com" }, { role: "user", content: "untouched" }],
  };
  const slotsOf = (b: typeof body) =>
    b.messages.map((m, i): TextSlot => ({
      param: `messages.${i}.content`,
      text: m.content,
      write: (t) => m.content = t,
    }));
  const rewritten = redactedBody(body, (b) => slotsOf(b as typeof body), [], changes.rewrites);
  assert.deepEqual(rewritten.messages, [
    { role: "user", content: "mail <EMAIL_1>" },
    { role: "user", content: "untouched" },
  ]);
  assert.equal(body.messages[0].content, "mail bob@example.com", "the client's body is left as sent");
});

Deno.test("native slots: nothing changed, nothing to rewrite, and a body without redactions is itself", () => {
  const native = nativeSlots([{ param: "input[0].summary[0].text", text: "thought" }], [], [], "responses");
  assert.equal(native.slots.length, 1);
  assert.deepEqual(native.changes(), { unplaced: false });
  const body = { input: "x" };
  assert.equal(redactedBody(body, () => [], [], undefined), body);
});

function slotAt(param: string, text: string): TextSlot {
  return { param, text, write() {} };
}

Deno.test("native slots: a chat change the native body cannot hold exactly is unplaced", () => {
  const cases: { name: string; endpoint: "messages" | "responses"; chat: TextSlot[]; native: string[] }[] = [
    // The chat form joined two native texts into one.
    {
      name: "joined",
      endpoint: "messages",
      chat: [slotAt("messages[0].content", "one\n\ntwo bob")],
      native: ["one", "two bob"],
    },
    // A tool call's arguments, even when a native text happens to hold the same text.
    {
      name: "tool arguments",
      endpoint: "responses",
      chat: [slotAt("messages[1].tool_calls[0].function.arguments", "bob")],
      native: ["bob"],
    },
    // A Messages thinking block's text is signed: no native text is its twin.
    {
      name: "thinking",
      endpoint: "messages",
      chat: [slotAt("messages[1].reasoning_content", "bob")],
      native: ["bob"],
    },
    // The chat form holds the text twice, the native body once: one of them has no twin there.
    {
      name: "more often in the chat form",
      endpoint: "responses",
      chat: [slotAt("messages[0].content", "bob"), slotAt("messages[1].reasoning_content", "bob")],
      native: ["bob"],
    },
  ];
  for (const c of cases) {
    const native = nativeSlots(c.native.map((text, i) => ({ param: `n${i}`, text })), [], c.chat, c.endpoint);
    for (const slot of c.chat) slot.text = slot.text.replace("bob", "<NAME_1>");
    assert.equal(native.changes().unplaced, true, c.name);
  }
  // A Responses reasoning text is its item's summary: placed.
  const chat = [slotAt("messages[1].reasoning_content", "bob")];
  const native = nativeSlots([{ param: "input[0].summary[0].text", text: "bob" }], [], chat, "responses");
  chat[0].text = "<NAME_1>";
  assert.deepEqual(native.changes(), { rewrites: new Map([["bob", "<NAME_1>"]]), unplaced: false });
});

Deno.test("native slots: two chat slots of one text changed apart cannot be told apart natively", () => {
  const chat = [slotAt("messages[0].content", "bob"), slotAt("messages[1].content", "bob")];
  const native = nativeSlots(
    [{ param: "a", text: "bob" }, { param: "b", text: "bob" }],
    [],
    chat,
    "messages",
  );
  chat[0].text = "<NAME_1>";
  assert.equal(native.changes().unplaced, true, "one changed, one not");
  chat[1].text = "<NAME_1>";
  assert.deepEqual(native.changes(), { rewrites: new Map([["bob", "<NAME_1>"]]), unplaced: false });
});

Deno.test("native slots: what the chat form holds nowhere, whole or inside a text it joined", () => {
  const chat = [
    slotAt("messages[0].content", "system one\n\nsystem two"),
    slotAt("messages[1].content", "hi"),
  ];
  const native = nativeSlots(
    [
      { param: "system.0.text", text: "system one" },
      { param: "system.1.text", text: "system two" },
      { param: "messages.0.content", text: "hi" },
      { param: "messages.0.content.1.source.content.0.text", text: "a document" },
      { param: "messages.0.content.2.source.content.0.text", text: "a document" },
      { param: "messages.0.content.3.text", text: "" },
      { param: "system", text: "ssn 111-22-3333" },
    ],
    [ssn],
    chat,
    "messages",
  );
  assert.deepEqual(native.lost(), [
    "messages.0.content.1.source.content.0.text",
    "messages.0.content.2.source.content.0.text",
    "system",
  ]);
});

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
  );
  assert.deepEqual(native.slots.map(({ param, text }) => ({ param, text })), [
    { param: "messages.0.content.1.source.content.0.text", text: "a document" },
  ]);
  assert.deepEqual(native.changes(), { chatChanged: false });
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
  );
  // Only the native-only text changed: the native body can carry every change.
  native.slots[0].text = "doc <EMAIL_1>";
  assert.deepEqual(native.changes(), {
    rewrites: new Map([["doc bob@example.com", "doc <EMAIL_1>"]]),
    chatChanged: false,
  });
  // A chat text changed too: its native twin is rewritten alike, and the change is the chat form's.
  chat[0].text = "mail <EMAIL_1>";
  const changes = native.changes();
  assert.equal(changes.chatChanged, true);
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
  const native = nativeSlots([{ param: "input[0].summary[0].text", text: "thought" }], [], []);
  assert.equal(native.slots.length, 1);
  assert.deepEqual(native.changes(), { chatChanged: false });
  const body = { input: "x" };
  assert.equal(redactedBody(body, () => [], [], undefined), body);
});

/**
 * Captured messages within `max_content_size`: at most that many UTF-8 bytes, still the JSON the GenAI
 * conventions describe (a backend parses it), cut inside a text on a code point boundary and marked.
 */
import assert from "node:assert/strict";
import { capturedJson, type CapturedMessage } from "./captured_content.ts";

const noScrub = (text: string) => text;
const bytes = (text: string) => new TextEncoder().encode(text).length;
const user = (content: string): CapturedMessage => ({ role: "user", parts: [{ type: "text", content }] });
/** A high surrogate without its low half: what a cut through an astral character leaves. */
const LONE_HIGH = /[\ud800-\udbff](?![\udc00-\udfff])/;

Deno.test("captured content: within the limit, the messages as they are", () => {
  const messages = [user("Hi"), { role: "assistant", parts: [{ type: "generic", content: { x: 1 } }] }];
  assert.equal(capturedJson(messages, 1024, noScrub), JSON.stringify(messages));
});

Deno.test("captured content: past the limit, valid JSON of at most that many UTF-8 bytes, cut on a code point", () => {
  for (const text of ["漢字".repeat(400), "😀a".repeat(300), 'é"\\\n'.repeat(200)]) {
    for (let limit = 80; limit <= 300; limit += 7) {
      const json = capturedJson([user(text), user("later")], limit, noScrub);
      assert.ok(bytes(json) <= limit, `${bytes(json)} bytes for a limit of ${limit}`);
      const parsed = JSON.parse(json) as {
        role: string;
        parts: { content: string; truncated?: boolean }[];
      }[];
      assert.equal(parsed.length, 1, "the message after the cut is left out");
      const part = parsed[0].parts[0];
      assert.ok(text.startsWith(part.content), "a prefix of the text");
      assert.ok(!LONE_HIGH.test(part.content), "no half of a surrogate pair");
      assert.equal(part.truncated, true);
    }
  }
});

Deno.test("captured content: a part that cannot be cut is left out, and the last part kept is marked", () => {
  const messages: CapturedMessage[] = [
    user("first"),
    { role: "user", parts: [{ type: "generic", content: { image: "x".repeat(500) } }] },
  ];
  const parsed = JSON.parse(capturedJson(messages, 120, noScrub));
  assert.deepEqual(parsed, [{ role: "user", parts: [{ type: "text", content: "first", truncated: true }] }]);
});

Deno.test("captured content: every string is scrubbed before it is measured and cut", () => {
  const secret = "sk-captured-secret-0123456789";
  const scrub = (text: string) => text.replaceAll(secret, "***");
  const json = capturedJson(
    [user(`key ${secret}`), { role: "user", parts: [{ type: "generic", content: { [secret]: [secret] } }] }],
    1024,
    scrub,
  );
  assert.ok(!json.includes(secret), json);
  assert.ok(json.includes("key ***"));
});

Deno.test("captured content: a long reasoning part after the answer is cut like a text, the answer kept whole", () => {
  const answer = "Hi there.";
  const messages: CapturedMessage[] = [{
    role: "assistant",
    parts: [{ type: "text", content: answer }, { type: "reasoning", content: "Let me think. ".repeat(200) }],
  }];
  const json = capturedJson(messages, 300, noScrub);
  assert.ok(bytes(json) <= 300, `${bytes(json)} bytes`);
  const [message] = JSON.parse(json) as { parts: { type: string; content: string; truncated?: boolean }[] }[];
  assert.deepEqual(message.parts[0], { type: "text", content: answer });
  assert.equal(message.parts[1].type, "reasoning");
  assert.ok(message.parts[1].content.startsWith("Let me think."), message.parts[1].content);
  assert.equal(message.parts[1].truncated, true);
});

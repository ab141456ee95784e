/**
 * A Bedrock event-stream frame whose checksums are right but whose header is not UTF-8 is the upstream's
 * corruption, like a bad checksum: a 502 `upstream_invalid_response` that routing falls over from, never the
 * gateway's own 500.
 */
import assert from "node:assert/strict";
import { crc32 } from "../../lib/providers/bedrock/crc32.ts";
import { eventFrame } from "../helpers/fake_bedrock.ts";
import { FAKE_ANSWER, FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";

/** An event frame, valid CRCs, whose `:event-type` value is the bytes ff fe 41. */
function notUtf8Frame(): Uint8Array {
  const enc = new TextEncoder();
  const header = (name: string, value: Uint8Array) => {
    const n = enc.encode(name);
    return [n.length, ...n, 7, value.length >> 8, value.length & 0xff, ...value];
  };
  const block = new Uint8Array([
    ...header(":event-type", new Uint8Array([0xff, 0xfe, 0x41])),
    ...header(":message-type", enc.encode("event")),
  ]);
  const payload = enc.encode("{}");
  const frame = new Uint8Array(16 + block.length + payload.length);
  const view = new DataView(frame.buffer);
  view.setUint32(0, frame.length);
  view.setUint32(4, block.length);
  view.setUint32(8, crc32(frame.subarray(0, 8)));
  frame.set(block, 12);
  frame.set(payload, 12 + block.length);
  view.setUint32(frame.length - 4, crc32(frame.subarray(0, frame.length - 4)));
  return frame;
}

Deno.test("bedrock frames: a header that is not UTF-8 is a 502 the next target recovers from", async () => {
  const raw = startRawUpstream();
  const good = startFakeOpenAI();
  const gw = await startGateway(`
providers:
  bed:
    type: bedrock
    region: us-east-1
    base_url: "${raw.url}"
    access_key_id: AKIAFRAMETESTEXAMPLE
    secret_access_key: frameTestSecretAccessKey0123456789abcdef
  good: { type: openai, base_url: "${good.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-bed: { type: chat, targets: [{ provider: bed, model: "amazon.nova-lite-v1:0", retries: 0 }] }
  chat-two:
    type: chat
    targets: [{ provider: bed, model: "amazon.nova-lite-v1:0", retries: 0 }, { provider: good, model: gpt-ok }]
${TEST_TOKENS_YAML}`);
  const ask = async (model: string) => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model, stream: true, messages: [{ role: "user", content: "Hi" }] }),
    });
    return { status: res.status, text: await res.text() };
  };
  try {
    raw.next = {
      headers: { "content-type": "application/vnd.amazon.eventstream" },
      chunks: [notUtf8Frame(), eventFrame("messageStart", { role: "assistant" })],
    };
    const alone = await ask("chat-bed");
    assert.equal(alone.status, 502, alone.text);
    assert.equal(JSON.parse(alone.text).error.code, "upstream_invalid_response");
    assert.match(JSON.parse(alone.text).error.message, /not valid UTF-8/);
    assert.ok(!gw.logs.some((l) => l.msg === "unhandled_error"), "not the gateway's own error");

    const two = await ask("chat-two");
    assert.equal(two.status, 200, two.text);
    assert.ok(two.text.includes(FAKE_ANSWER.slice(0, 5)), two.text.slice(0, 400));
    assert.match(two.text, /\[DONE\]/);
  } finally {
    await gw.stop();
    await raw.stop();
    await good.stop();
  }
});

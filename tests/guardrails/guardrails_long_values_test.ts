/**
 * Output guardrails on a stream, for values longer than the 256-character window: a private key (kilobytes)
 * and a long JWT must be checked whole, as in the JSON answer, however the stream was cut — held until they end
 * (up to a cap of 16 KiB), and past the cap masked or refused through their end, never let out in pieces.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { TestGateway } from "../helpers/gateway.ts";
import { type ScriptedChat, startScriptedChat } from "../helpers/scripted_chat.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";

const TOKEN = "gw-guardrails-long-values-0123456789";
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** A PEM private key of `lines` lines of 64 base64 characters, each line different. */
function pemKey(lines: number): { key: string; lines: string[] } {
  const body = Array.from({ length: lines }, (_, i) => {
    const line = Array.from({ length: 64 }, (_, j) => ALPHABET[(i * 7 + j * 13) % 64]).join("");
    return line.slice(0, 56) + String(i).padStart(8, "0"); // unique per line, so a leaked line is found
  });
  return { key: `-----BEGIN PRIVATE KEY-----\n${body.join("\n")}\n-----END PRIVATE KEY-----`, lines: body };
}

function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function withGateway(fn: (gw: TestGateway, up: ScriptedChat) => Promise<void>) {
  return withFakeGateway(startScriptedChat, (up) => `
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-scripted-0123456789 }
guardrails:
  mask-keys: { type: pii, entities: [PRIVATE_KEY], phase: output, action: mask }
  deny-keys: { type: pii, entities: [PRIVATE_KEY], phase: output, action: deny }
  mask-jwt: { type: pii, entities: [JWT], phase: output, action: mask }
  deny-jwt: { type: pii, entities: [JWT], phase: output, action: deny }
models:
  mask-keys: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ], guardrails: [mask-keys] }
  deny-keys: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ], guardrails: [deny-keys] }
  mask-jwt: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ], guardrails: [mask-jwt] }
  deny-jwt: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ], guardrails: [deny-jwt] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`, fn);
}

function post(gw: TestGateway, model: string, stream: boolean): Promise<Response> {
  return fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model, stream, messages: [{ role: "user", content: "go" }] }),
  });
}

/** A chat stream's content joined, whether it ended with [DONE], and whether it carried an error event. */
async function streamed(res: Response): Promise<{ text: string; done: boolean; error: boolean }> {
  let text = "";
  let error = false;
  const sse = await res.text();
  for (const line of sse.split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const event = JSON.parse(line.slice(6));
    if (event.error) error = true;
    for (const c of event.choices ?? []) if (typeof c.delta?.content === "string") text += c.delta.content;
  }
  return { text, done: sse.includes("data: [DONE]"), error };
}

Deno.test("long values: a private key masked on a stream is one placeholder, as in the JSON answer", async () => {
  const { key, lines } = pemKey(24);
  const answer = `Here is the key:\n${key}\nDone, and some text after it.`;
  await withGateway(async (gw, up) => {
    up.answer = () => ({ content: [answer] });
    const whole = await (await post(gw, "mask-keys", false)).json();
    const expected = "Here is the key:\n<PRIVATE_KEY_1>\nDone, and some text after it.";
    assert.equal(whole.choices[0].message.content, expected);
    for (const size of [3, 40, 500]) {
      up.answer = () => ({ content: pieces(answer, size) });
      const { text, done } = await streamed(await post(gw, "mask-keys", true));
      assert(done);
      assert.deepEqual(lines.filter((l) => text.includes(l)), [], `key lines leaked at chunk size ${size}`);
      assert.equal(text, expected, `chunk size ${size}`);
    }
  });
});

Deno.test("long values: a private key past the 16 KiB cap is masked through its END line, nothing leaks", async () => {
  const { key, lines } = pemKey(300); // about 19.5 KiB
  const answer = `Key:\n${key}\nDone.`;
  await withGateway(async (gw, up) => {
    up.answer = () => ({ content: pieces(answer, 50) });
    const { text, done } = await streamed(await post(gw, "mask-keys", true));
    assert(done);
    assert.deepEqual(lines.filter((l) => text.includes(l)), []);
    assert.equal(text, "Key:\n<PRIVATE_KEY_1>\nDone.");
  });
});

Deno.test("long values: a private key under deny refuses the stream, as the JSON answer", async () => {
  const { key, lines } = pemKey(24);
  await withGateway(async (gw, up) => {
    up.answer = () => ({ content: pieces(`Here is the key:\n${key}\nDone.`, 40) });
    const whole = await post(gw, "deny-keys", false);
    assert.equal(whole.status, 400);
    assert.equal((await whole.json()).error.code, "content_policy_violation");
    const { text, done, error } = await streamed(await post(gw, "deny-keys", true));
    assert(error && !done);
    assert.deepEqual(lines.filter((l) => text.includes(l)), []);
  });
});

const b64u = (s: string) => btoa(s).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
/** A JWT of 410 characters, as identity providers issue them: longer than the window. */
const JWT = [
  b64u(JSON.stringify({ alg: "RS256", typ: "JWT", kid: "key-2024-01" })),
  b64u(JSON.stringify({
    sub: "user-1234567890",
    name: "Alice Example",
    email_verified: true,
    iss: "https://auth.example.com/",
    aud: "api://default",
    scp: ["openid", "profile", "email", "offline_access"],
    iat: 1700000000,
    exp: 1700003600,
  })),
  "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5cSflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
].join(".");
const SIGNATURE = JWT.slice(JWT.lastIndexOf(".") + 1);

Deno.test("long values: a JWT longer than the window under deny refuses the stream, as the JSON answer", async () => {
  assert(JWT.length > 256);
  await withGateway(async (gw, up) => {
    up.answer = () => ({ content: pieces(`Your token is ${JWT} - keep it safe.`, 20) });
    const whole = await post(gw, "deny-jwt", false);
    assert.equal(whole.status, 400);
    assert.equal((await whole.json()).error.code, "content_policy_violation");
    const { text, done, error } = await streamed(await post(gw, "deny-jwt", true));
    assert(error && !done, "the stream ends with an error event, not [DONE]");
    assert(!text.includes(JWT.slice(0, 20)) && !text.includes(SIGNATURE.slice(0, 20)), text);
  });
});

Deno.test("long values: a JWT longer than the window under mask is one placeholder, as in the JSON answer", async () => {
  await withGateway(async (gw, up) => {
    const answer = `Your token is ${JWT} - keep it safe.`;
    up.answer = () => ({ content: [answer] });
    const whole = await (await post(gw, "mask-jwt", false)).json();
    assert.equal(whole.choices[0].message.content, "Your token is <JWT_1> - keep it safe.");
    up.answer = () => ({ content: pieces(answer, 20) });
    const { text, done } = await streamed(await post(gw, "mask-jwt", true));
    assert(done);
    assert.equal(text, "Your token is <JWT_1> - keep it safe.");
  });
});

import assert from "node:assert/strict";
import { type ChatCompletionChunk, isObject } from "../openai/types.ts";
import { createMasker } from "./mask.ts";
import { guardChunks, OUTPUT_CAP, OUTPUT_LANES_MAX } from "./output.ts";
import { GatewayError } from "../errors.ts";
import type { RequestGuardrails } from "./request.ts";
import type { GuardrailAction, ResolvedGuardrail } from "./resolved.ts";
import { outputBuiltin } from "./guardrail_test_helpers.ts";

function guardrail(action: GuardrailAction, pii: string[]): ResolvedGuardrail {
  return outputBuiltin(`${action}-${pii.join("-")}`, action, pii);
}

function chunk(content: string | null, finish: string | null = null): ChatCompletionChunk {
  const delta = content === null ? {} : { content };
  return {
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}

/**
 * `text` streamed in pieces of `size` through `action` on `pii`: the content the client gets, or the denial.
 * The content of every chunk is recorded, so a test can see no chunk carried a piece of a value.
 */
async function stream(
  text: string,
  size: number,
  action: GuardrailAction,
  pii: string[],
): Promise<{ text: string; pieces: string[]; denied: boolean }> {
  const chunks = [chunk("")];
  for (let i = 0; i < text.length; i += size) chunks.push(chunk(text.slice(i, i + size)));
  chunks.push(chunk(null, "stop"));
  const state: RequestGuardrails = {
    masker: createMasker(),
    outcomes: [],
    output: [guardrail(action, pii)],
    reverse: false,
    chatOnly: true,
    unplaced: false,
  };
  let next = 1;
  const source = {
    read: () =>
      Promise.resolve(
        next < chunks.length
          ? { done: false as const, value: chunks[next++] }
          : { done: true as const, value: undefined },
      ),
    cancel: () => Promise.resolve(),
  };
  const pieces: string[] = [];
  const take = (c: ChatCompletionChunk) => {
    const delta = c.choices[0]?.delta;
    const content = isObject(delta) ? delta.content : undefined;
    if (typeof content === "string" && content !== "") pieces.push(content);
  };
  try {
    const guarded = await guardChunks({ first: chunks[0], rest: source }, state, {
      alias: "a",
      token: "t",
      signal: new AbortController().signal,
    });
    take(guarded.first);
    for (let r = await guarded.rest.read(); !r.done; r = await guarded.rest.read()) take(r.value);
  } catch {
    return { text: pieces.join(""), pieces, denied: true };
  }
  return { text: pieces.join(""), pieces, denied: false };
}

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** A PEM private key of `n` lines of 64 base64 characters, each line different (it ends in its number). */
function pemKey(n: number): { key: string; lines: string[] } {
  const lines = Array.from({ length: n }, (_, i) => {
    const line = Array.from({ length: 56 }, (_, j) => ALPHABET[(i * 7 + j * 13) % 64]).join("");
    return line + String(i).padStart(8, "0");
  });
  return { key: `-----BEGIN PRIVATE KEY-----\n${lines.join("\n")}\n-----END PRIVATE KEY-----`, lines };
}

/**
 * The key lines whose material the client got: in a piece, a line's first or last 12 characters, or 6 or more
 * characters of a line, alone.
 */
function leaked(pieces: readonly string[], lines: readonly string[]): string[] {
  return lines.filter((line) =>
    pieces.some((p) =>
      p.includes(line.slice(0, 12)) || p.includes(line.slice(-12)) ||
      (p.trim().length >= 6 && line.includes(p.trim()))
    )
  );
}

Deno.test("output stream: a private key under mask is one placeholder however the stream was cut", async () => {
  const { key, lines } = pemKey(24);
  const text = `Here is the key:\n${key}\nDone, and more text after it.`;
  for (const size of [1, 7, 40, 300, 5000]) {
    const got = await stream(text, size, "mask", ["PRIVATE_KEY"]);
    assert.ok(!got.denied);
    assert.deepEqual(leaked(got.pieces, lines), [], `size ${size}`);
    assert.equal(
      got.text,
      "Here is the key:\n<PRIVATE_KEY_1>\nDone, and more text after it.",
      `size ${size}`,
    );
  }
});

Deno.test("output stream: a private key past the cap is masked through its END line; what follows flows", async () => {
  const { key, lines } = pemKey(Math.ceil(OUTPUT_CAP / 65) + 40);
  assert.ok(key.length > OUTPUT_CAP + 2000);
  const text = `Key:\n${key}\nDone.\n${key.slice(0, 200)}`;
  for (const size of [13, 50, 4096]) {
    const got = await stream(text, size, "mask", ["PRIVATE_KEY"]);
    assert.deepEqual(leaked(got.pieces, lines), [], `size ${size}`);
    assert.equal(got.text, "Key:\n<PRIVATE_KEY_1>\nDone.\n<PRIVATE_KEY_2>", `size ${size}`);
  }
  const denied = await stream(text, 50, "deny", ["PRIVATE_KEY"]);
  assert.ok(denied.denied);
  assert.deepEqual(leaked(denied.pieces, lines), []);
});

const b64u = (s: string) => btoa(s).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");

/** A JWT of about `length` characters (its payload padded): real ones are often longer than the window. */
function longJwt(length: number): string {
  const header = b64u(JSON.stringify({ alg: "RS256", typ: "JWT" }));
  const payload = b64u(JSON.stringify({ sub: "user-1", pad: "p".repeat(Math.max(0, length * 0.75 - 120)) }));
  return `${header}.${payload}.${"SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c".repeat(2)}`;
}

Deno.test("output stream: a JWT longer than the window is refused under deny, as the JSON answer is", async () => {
  const token = longJwt(600);
  assert.ok(token.length > 512);
  for (const size of [1, 20, 300]) {
    const got = await stream(`Your token is ${token} - keep it safe.`, size, "deny", ["JWT"]);
    assert.ok(got.denied, `size ${size}`);
    assert.ok(!got.text.includes("eyJ"), `size ${size}: ${got.text}`);
  }
});

Deno.test("output stream: a JWT longer than the window is masked whole, the text after it flows", async () => {
  const token = longJwt(2000);
  for (const size of [4, 64, 3000]) {
    const got = await stream(`A: ${token}, B: ${token}.`, size, "mask", ["JWT"]);
    assert.equal(got.text, "A: <JWT_1>, B: <JWT_1>.", `size ${size}`);
  }
});

Deno.test("output stream: a JWT-like run past the cap is masked or refused, never released in pieces", async () => {
  const token = longJwt(OUTPUT_CAP + 3000);
  const text = `go ${token} done`;
  const signature = token.slice(token.lastIndexOf(".") + 1);
  const masked = await stream(text, 100, "mask", ["JWT"]);
  assert.equal(masked.text, "go <JWT_1> done");
  assert.ok(!masked.pieces.some((p) => signature.includes(p.trim()) && p.trim().length >= 6));
  const denied = await stream(text, 100, "deny", ["JWT"]);
  assert.ok(denied.denied);
  assert.ok(!denied.text.includes("eyJ"));
});

/** `chunks` through a mask guardrail on emails: the chunks the client gets, and the error that ended them. */
async function guarded(
  chunks: ChatCompletionChunk[],
): Promise<{ out: ChatCompletionChunk[]; error?: unknown }> {
  const state: RequestGuardrails = {
    masker: createMasker(),
    outcomes: [],
    output: [guardrail("mask", ["EMAIL"])],
    reverse: false,
    chatOnly: true,
    unplaced: false,
  };
  let next = 1;
  const source = {
    read: () =>
      Promise.resolve(
        next < chunks.length
          ? { done: false as const, value: chunks[next++] }
          : { done: true as const, value: undefined },
      ),
    cancel: () => Promise.resolve(),
  };
  const out: ChatCompletionChunk[] = [];
  try {
    const g = await guardChunks({ first: chunks[0], rest: source }, state, {
      alias: "a",
      token: "t",
      signal: new AbortController().signal,
    });
    out.push(g.first);
    for (let r = await g.rest.read(); !r.done; r = await g.rest.read()) out.push(r.value);
  } catch (error) {
    return { out, error };
  }
  return { out };
}

function choiceChunk(index: number, delta: Record<string, unknown>, finish: string | null = null) {
  return { ...chunk(null), choices: [{ index, delta, finish_reason: finish }] } as ChatCompletionChunk;
}

/** What the client read of choice `index`: its content and each tool call's arguments, joined. */
function readChoice(out: readonly ChatCompletionChunk[], index: number) {
  let content = "";
  const args: string[] = [];
  for (const c of out) {
    for (const choice of c.choices) {
      if (choice.index !== index || !isObject(choice.delta)) continue;
      if (typeof choice.delta.content === "string") content += choice.delta.content;
      for (const call of Array.isArray(choice.delta.tool_calls) ? choice.delta.tool_calls : []) {
        const i = call.index ?? 0;
        args[i] = (args[i] ?? "") + (call.function?.arguments ?? "");
      }
    }
  }
  return { content, args };
}

Deno.test("output stream: each choice's lanes end with it, content and tool calls, one choice left to the end", async () => {
  const call = (i: number, args: string) => ({ tool_calls: [{ index: i, function: { arguments: args } }] });
  const { out, error } = await guarded([
    choiceChunk(0, { content: "mail bob@exa" }),
    choiceChunk(1, call(0, '{"to":"ann@exa')),
    choiceChunk(1, call(1, '{"cc":"joe@')),
    choiceChunk(0, { content: "mple.com now" }, "stop"),
    choiceChunk(1, call(0, 'mple.org"}')),
    choiceChunk(1, call(1, 'example.net"}')),
  ]);
  assert.equal(error, undefined);
  assert.deepEqual(readChoice(out, 0), { content: "mail <EMAIL_1> now", args: [] });
  assert.deepEqual(readChoice(out, 1), { content: "", args: ['{"to":"<EMAIL_2>"}', '{"cc":"<EMAIL_3>"}'] });
  // Choice 1 never finished: what its lanes held came in a chunk of its own, after the upstream's last.
  assert.equal(out.length, 7);
});

Deno.test("output stream: an upstream opening ever more choices ends with a 502 at the lanes' bound", async () => {
  const chunks = [chunk("")];
  for (let i = 0; i <= OUTPUT_LANES_MAX; i++) chunks.push(choiceChunk(i, { content: "hello" }));
  const { out, error } = await guarded(chunks);
  assert.ok(error instanceof GatewayError, String(error));
  assert.equal(error.status, 502);
  assert.match(error.message, /more than 1024 texts/);
  // The first chunk, then every choice under the bound went through: a real answer (n ≤ 128, a few lanes
  // each) never meets it.
  assert.equal(out.length, 1 + OUTPUT_LANES_MAX);
});

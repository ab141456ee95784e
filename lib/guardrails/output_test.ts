import assert from "node:assert/strict";
import { type ChatCompletionChunk, isObject } from "../openai/types.ts";
import { NO_SECRETS } from "../secrets/scrubber.ts";
import { createMasker } from "./mask.ts";
import { guardChunks, OUTPUT_CAP } from "./output.ts";
import type { RequestGuardrails } from "./request.ts";
import type { GuardrailAction, ResolvedGuardrail } from "./resolved.ts";

function guardrail(action: GuardrailAction, pii: string[]): ResolvedGuardrail {
  return {
    name: `${action}-${pii.join("-")}`,
    phases: new Set(["output"]),
    action,
    reverse: false,
    message: null,
    pii,
    service: null,
    timeoutMs: 1000,
    onFailure: "fail_open",
    scrubber: NO_SECRETS,
  };
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

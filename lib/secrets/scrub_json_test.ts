import assert from "node:assert/strict";
import { jsonMayHold, parseScrubbed } from "./scrub_json.ts";
import { createScrubber } from "./scrubber.ts";

const scrub = (text: string) => text.replaceAll("sk-secret", "***");

Deno.test("scrub json: keys and values at any depth are scrubbed, order and other types kept", () => {
  const text = JSON.stringify({
    a: "bad sk-secret",
    "sk-secret": { "x-sk-secret": ["sk-secret", 1, true, null], n: 2 },
    z: [{ "sk-secret": "v" }],
  });
  const out = parseScrubbed(text, scrub);
  assert.equal(
    JSON.stringify(out),
    '{"a":"bad ***","***":{"x-***":["***",1,true,null],"n":2},"z":[{"***":"v"}]}',
  );
});

Deno.test("scrub json: keys that scrub alike keep the later value; a __proto__ key stays plain data", () => {
  const colliding = parseScrubbed('{"sk-secret":1,"***":2}', scrub) as Record<string, unknown>;
  assert.deepEqual(colliding, { "***": 2 });
  const proto = parseScrubbed('{"__proto__":{"polluted":"sk-secret"},"sk-secret":0}', scrub) as object;
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
  assert.deepEqual(Object.keys(proto), ["__proto__", "***"]);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

/** Deterministic pseudo-random numbers (mulberry32), so a failure replays. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every string and key in `value`, at any depth. */
function stringsOf(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  if (typeof value === "object" && value !== null) {
    return Object.entries(value).flatMap(([key, item]) => [key, ...stringsOf(item)]);
  }
  return [];
}

const SECRETS = [
  "sk-proj-Xq7vB2mNp4Lk9TzR8wYc3FhJ6dGs1AeU",
  "hunter22x",
  "correct-horse-battery-staple",
  'pa"ss\\word-0123456789',
];
const scrubber = createScrubber(SECRETS);

Deno.test("jsonMayHold: a clean text without escapes is clean; one with a secret, escaped or not, may hold one", () => {
  assert.equal(jsonMayHold(JSON.stringify({ a: "clean", b: ["x", { c: 1 }] }), scrubber), false);
  assert.equal(jsonMayHold(JSON.stringify({ a: `x ${SECRETS[0]}` }), scrubber), true);
  assert.equal(jsonMayHold(JSON.stringify({ [SECRETS[1]]: 1 }), scrubber), true);
  // Written with escapes, no run of the key stands in the text as sent.
  const escaped = `{"a":"${
    [...SECRETS[0]].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")
  }"}`;
  assert.equal(scrubber.test(escaped), false);
  assert.equal(jsonMayHold(escaped, scrubber), true);
  // A part of a passphrase after a newline: `\n` as sent puts a word character (`n`) before it, no boundary.
  const newline = JSON.stringify({ a: "sent\nhorse-battery" });
  assert.equal(scrubber.test(newline), false);
  assert.equal(scrubber.test(JSON.parse(newline).a), true);
  assert.equal(jsonMayHold(newline, scrubber), true);
});

Deno.test("jsonMayHold: whenever a string or key of a JSON text holds a secret, the text may hold one", () => {
  const next = random(0x7a11);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)];
  /** Half the texts are plain: no character that JSON escapes, none escaped, so the scan alone answers. */
  let plain = false;
  const PLAIN = [..."abcXYZ019 -_:/.é"];
  const ANY = [...PLAIN, '"', "\\", "\n", "\t"];
  const noise = (n: number) => Array.from({ length: n }, () => pick(plain ? PLAIN : ANY)).join("");
  const pieces = SECRETS.flatMap((s) => [s, s.slice(2), s.slice(0, -2), s.toLowerCase(), "horse-battery"]);
  const piece = () => pick(pieces.filter((p) => !plain || !/["\\]/.test(p)));
  const string = () =>
    `${noise(Math.floor(next() * 4))}${next() < 0.3 ? piece() : ""}${noise(Math.floor(next() * 4))}`;
  const value = (depth: number): unknown => {
    const kind = next();
    if (depth > 2 || kind < 0.4) return string();
    if (kind < 0.6) return Math.floor(next() * 100);
    if (kind < 0.8) return Array.from({ length: Math.floor(next() * 4) }, () => value(depth + 1));
    return Object.fromEntries(
      Array.from({ length: Math.floor(next() * 4) }, () => [string(), value(depth + 1)]),
    );
  };
  /** A string as JSON text, some characters escaped as an upstream may: `\u` for any, `\/`. */
  const quoted = (text: string) =>
    `"${
      [...text].map((c) => {
        const r = plain ? 1 : next();
        if (r < 0.1) return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
        if (c === "/" && r < 0.5) return "\\/";
        return JSON.stringify(c).slice(1, -1);
      }).join("")
    }"`;
  /** `v` as JSON text, its strings and keys {@linkcode quoted}. */
  const serialized = (v: unknown): string => {
    if (typeof v === "string") return quoted(v);
    if (Array.isArray(v)) return `[${v.map(serialized).join(",")}]`;
    if (typeof v === "object" && v !== null) {
      return `{${Object.entries(v).map(([k, item]) => `${quoted(k)}:${serialized(item)}`).join(",")}}`;
    }
    return JSON.stringify(v);
  };
  /** Texts without a backslash: [holding a secret, clean]. */
  const scanned = [0, 0];
  let spared = 0;
  for (let i = 0; i < 4_000; i++) {
    plain = next() < 0.5;
    const text = serialized({ a: value(0) });
    const held = stringsOf(JSON.parse(text)).some((s) => scrubber.test(s));
    if (held) assert.equal(jsonMayHold(text, scrubber), true, text);
    if (text.includes("\\")) continue;
    scanned[held ? 0 : 1]++;
    // A match across a string's end is no leak, only a walk that finds nothing: rare, and never counted here.
    if (!held && !jsonMayHold(text, scrubber)) spared++;
  }
  // The scan decided often either way, besides the texts with escapes, and spared the walk of clean ones.
  assert.ok(scanned[0] > 300 && scanned[1] > 300, `plain texts with a secret and without: ${scanned}`);
  assert.ok(spared >= 0.9 * scanned[1], `${spared} of ${scanned[1]} clean plain texts found clean`);
});

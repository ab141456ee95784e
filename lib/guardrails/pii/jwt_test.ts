import assert from "node:assert/strict";
import { jwt } from "./jwt.ts";

const b64u = (s: string) => btoa(s).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
const HEADER = b64u(JSON.stringify({ alg: "RS256", typ: "JWT", kid: "key-2024-01" }));
const PAYLOAD = b64u(JSON.stringify({ sub: "user-1234567890", scp: ["openid", "profile", "email"], exp: 1 }));
const TOKEN = `${HEADER}.${PAYLOAD}.${"SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c".repeat(4)}`;
const long = jwt.long!;

Deno.test("jwt: unfinished is a run from `eyJ` to the end of the text that may still be a JWT", () => {
  const text = `token: ${TOKEN}`;
  const at = text.indexOf("eyJ");
  for (const cut of [at + 3, at + 40, at + HEADER.length + 1, at + HEADER.length + 30, text.length]) {
    assert.equal(long.unfinished(text.slice(0, cut)), at, `cut at ${cut}`);
  }
  assert.equal(long.unfinished(`${text}.`), at, "a full stop may still be followed by the token's end");
  assert.equal(long.unfinished(`${text} and more`), -1, "ended by a space");
  assert.equal(long.unfinished(`${text}.x`), -1, "four segments: no JWT");
  assert.equal(long.unfinished(`eyJnot-json.${PAYLOAD}`), -1, "a header that does not decode");
  assert.equal(long.unfinished(`xeyJ${HEADER}`), -1, "glued to the text before it");
  assert.equal(long.unfinished("plain text"), -1);
});

Deno.test("jwt: rest is where the run of token characters ends", () => {
  assert.deepEqual(long.rest("abc_-.def rest"), { end: 9, ended: true });
  assert.deepEqual(long.rest("abc_-.def"), { end: 9, ended: false });
  assert.deepEqual(long.rest(`"}`), { end: 0, ended: true });
});

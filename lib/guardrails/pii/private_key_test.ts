import assert from "node:assert/strict";
import { privateKey } from "./private_key.ts";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const LINES = Array.from(
  { length: 6 },
  (_, i) => Array.from({ length: 64 }, (_, j) => ALPHABET[(i * 7 + j * 13) % 64]).join(""),
);
const BEGIN = "-----BEGIN RSA PRIVATE KEY-----";
const END = "-----END RSA PRIVATE KEY-----";
const KEY = `${BEGIN}\n${LINES.join("\n")}\n${END}`;
const long = privateKey.long!;

Deno.test("private key: unfinished is where a key begins whose END line has not come", () => {
  const text = `Here: ${KEY}\nand more`;
  assert.equal(long.unfinished(text), -1, "a whole key is finished");
  const at = text.indexOf(BEGIN);
  for (
    const cut of [at + BEGIN.length, at + BEGIN.length + 10, at + BEGIN.length + 200, text.indexOf(END) + 5]
  ) {
    assert.equal(long.unfinished(text.slice(0, cut)), at, `cut at ${cut}`);
  }
  // A second key after a whole one, still open.
  assert.equal(long.unfinished(`${KEY}\n${KEY.slice(0, 100)}`), KEY.length + 1);
  // A header line cut by the text's end may still be followed by material.
  assert.equal(long.unfinished(`${BEGIN}\nProc-Type: 4,ENCRY`), 0);
});

Deno.test("private key: unfinished is -1 for a BEGIN line that is no key, and for no BEGIN", () => {
  assert.equal(long.unfinished(`the file starts with ${BEGIN} and ends with ...`), -1);
  assert.equal(long.unfinished(`${BEGIN}\n...\n`), -1);
  assert.equal(long.unfinished(LINES.join("\n")), -1);
  assert.equal(long.unfinished("-----BEGIN PUBLIC KEY-----\nMIIB"), -1);
});

Deno.test("private key: rest finds the END line in the text that continues a key", () => {
  const continued = `${LINES[4]}\n${LINES[5]}\n${END}\nDone.`;
  assert.deepEqual(long.rest(continued), { end: continued.indexOf(END) + END.length, ended: true });
  const material = `${LINES[4]}\n${LINES[5]}`;
  assert.deepEqual(long.rest(material), { end: material.length, ended: false });
  // What may start the END line stays, to be read again with the text after it.
  for (const cut of [1, 5, 9, END.length - 1]) {
    const partial = `${material}\n${END.slice(0, cut)}`;
    assert.deepEqual(long.rest(partial), { end: material.length + 1, ended: false }, END.slice(0, cut));
  }
});

Deno.test("private key: find still masks a key without its END through the end of the text", () => {
  const text = `x ${KEY.slice(0, 300)}`;
  assert.deepEqual(privateKey.find(text), [{ type: "PRIVATE_KEY", start: 2, end: text.length }]);
  assert.deepEqual(privateKey.find(`${BEGIN}\nProc-Type: 4,ENCRY`), []);
});

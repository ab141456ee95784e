import assert from "node:assert/strict";
import { customInput, CustomInputReader } from "./custom_input.ts";

const PATCH = '*** Begin Patch\n*** Add File: a.txt\n+say "hi" \\ tab\there ☕ 😀\n*** End Patch';

/** What the reader shows when `args` arrives cut at `cut`: the pieces, and whether it found the input. */
function read(args: string, cut: number): { pieces: string[]; found: boolean; decoded: string } {
  const reader = new CustomInputReader();
  const pieces = [reader.push(args.slice(0, cut)), reader.push(args.slice(cut))];
  return { pieces, found: reader.found, decoded: reader.decoded };
}

Deno.test("custom input: the input string is decoded from its JSON as it streams, cut anywhere", () => {
  // Escapes of every kind, \u ones (a surrogate pair among them), and another key before it.
  const args = `{"note": {"input": "not this"}, "input": ${
    JSON.stringify(PATCH).replace("☕", "\\u2615").replace("😀", "\\ud83d\\ude00")
  }, "after": 1}`;
  for (let cut = 0; cut <= args.length; cut++) {
    const { pieces, found, decoded } = read(args, cut);
    assert.equal(pieces.join(""), PATCH, `cut at ${cut}`);
    assert.equal(decoded, PATCH);
    assert.ok(found);
    // A surrogate pair is never split between two deltas.
    for (const piece of pieces) assert.ok(!/[\ud800-\udbff]$/.test(piece), `cut at ${cut}`);
  }
  assert.equal(customInput(args), PATCH);
});

Deno.test("custom input: arguments without a string input are the input as they are, shown at the end", () => {
  for (const args of ["*** Begin Patch", '{"patch": "x"}', '{"input": 3}', "", '["input"]']) {
    const reader = new CustomInputReader();
    assert.equal(reader.push(args), "", args);
    assert.equal(reader.found, false, args);
    assert.equal(customInput(args), args);
  }
});

Deno.test("custom input: arguments cut off mid-input give the input as far as it went", () => {
  const reader = new CustomInputReader();
  assert.equal(reader.push('{"input": "*** Begin\\nPat'), "*** Begin\nPat");
  assert.equal(reader.complete, false);
  assert.equal(customInput('{"input": "*** Begin\\nPat'), "*** Begin\nPat");
  assert.equal(reader.push('ch"}'), "ch");
  assert.equal(reader.complete, true);
});

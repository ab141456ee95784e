import assert from "node:assert/strict";
import { countTokens as wholeCount } from "gpt-tokenizer/encoding/o200k_base";
import { countTokens, promptTexts, requestTexts, tokenizerPieces } from "./estimate.ts";
import { countWith } from "./tokenizer.ts";

Deno.test("countTokens: a long text of words counts exactly as the whole text does, in pieces", async () => {
  const text = "The quick brown fox, it's said,  jumps over 12345 lazy dogs.\n\n\tAgain: ".repeat(2_000) +
    "é😀 ".repeat(500);
  const pieces = tokenizerPieces(text);
  assert.ok(pieces.length > 10);
  assert.equal(pieces.join(""), text);
  for (const piece of pieces) assert.ok(piece.length <= 2_000);
  assert.equal(await countTokens([text]), wholeCount(text));
});

Deno.test("countTokens: 1 MB without a space is counted quickly, not in minutes", async () => {
  const run = "z".repeat(1 << 20);
  // The tokenizer's BPE is quadratic in a run without spaces (64 K of one letter took 3 s, 1 MB minutes): what
  // keeps it quick is that it is never handed more than 2,000 characters at once. Seen on the count the worker
  // runs (countWith), not on a clock.
  let longest = 0;
  const counted = countWith((text) => {
    longest = Math.max(longest, text.length);
    return text.length > 2_000 ? 0 : wholeCount(text); // a longer one would take minutes, and fails below
  }, [run]);
  assert.ok(longest <= 2_000, `the tokenizer was handed ${longest} characters at once`);
  // The whole run is 2 letters a token; pieces of 2,000 letters each split evenly.
  assert.equal(counted, run.length / 2);
  assert.equal(await countTokens([run]), run.length / 2);
  const astral = "😀".repeat(5_000);
  assert.equal(tokenizerPieces(astral).join(""), astral);
  for (const piece of tokenizerPieces(astral)) assert.ok(piece.isWellFormed());
});

Deno.test("requestTexts: a custom tool's call in the history counts its input", () => {
  const texts = requestTexts({
    model: "m",
    messages: [{
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "call_0", type: "function", function: { name: "ls", arguments: "{}" } },
        { id: "call_1", type: "custom", custom: { name: "grep", input: "TODO" } },
      ],
    }],
  });
  assert.deepEqual(texts, ["{}", "TODO"]);
});

Deno.test("promptTexts: the messages' texts, a legacy function_call's arguments, tool and function definitions", () => {
  const tool = {
    type: "custom",
    custom: { name: "math", format: { type: "grammar", grammar: { definition: "g" } } },
  };
  const fn = { name: "get_weather", parameters: { type: "object" } };
  const texts = promptTexts({
    model: "m",
    messages: [
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: null,
        function_call: { name: "get_weather", arguments: '{"city":"Oslo"}' },
      },
    ],
    tools: [tool],
    functions: [fn],
    response_format: { type: "json_schema", json_schema: { name: "s" } },
  });
  assert.deepEqual(texts, [
    "hi",
    '{"city":"Oslo"}',
    JSON.stringify(tool),
    JSON.stringify(fn),
    JSON.stringify({ name: "s" }),
  ]);
});

import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { textSlots } from "../../policy/text_slots.ts";
import {
  expectedResults,
  MAX_MODERATION_INPUTS,
  moderationTexts,
  parseModerationRequest,
} from "./request.ts";

function refusal(body: Record<string, unknown>): GatewayError {
  try {
    parseModerationRequest(body);
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    return err;
  }
  throw new Error(`accepted ${JSON.stringify(body)}`);
}

Deno.test("moderations request: the three input forms are accepted, other fields kept", () => {
  const image = { type: "image_url", image_url: { url: "https://example.com/a.png" } };
  for (
    const input of [
      "a text",
      "",
      ["one", "two"],
      [{ type: "text", text: "hi" }, image],
    ]
  ) {
    const parsed = parseModerationRequest({ model: "mod", input, extra: true });
    assert.deepEqual(parsed, { model: "mod", input, extra: true });
  }
  assert.deepEqual(parseModerationRequest({ model: "mod", input: "x", user: null }), {
    model: "mod",
    input: "x",
  });
});

Deno.test("moderations request: bad bodies are 400s naming the param", () => {
  const cases: [Record<string, unknown>, string, string][] = [
    [{ model: "mod" }, "input", "missing_required_parameter"],
    [{ model: "mod", input: null }, "input", "invalid_type"],
    [{ model: "mod", input: 42 }, "input", "invalid_type"],
    [{ model: "mod", input: [] }, "input", "empty_array"],
    [{ model: "mod", input: ["ok", 3] }, "input[1]", "invalid_type"],
    [{ model: "mod", input: [{ type: "text" }] }, "input[0].text", "missing_required_parameter"],
    [
      { model: "mod", input: [{ type: "image_url", image_url: {} }] },
      "input[0].image_url.url",
      "missing_required_parameter",
    ],
    [{ model: "mod", input: [{ type: "audio", audio: "x" }] }, "input[0].type", "invalid_value"],
    [{ model: 7, input: "x" }, "model", "invalid_type"],
    [{ model: "", input: "x" }, "model", "invalid_value"],
  ];
  for (const [body, param, code] of cases) {
    const err = refusal(body);
    assert.equal(err.status, 400, JSON.stringify(body));
    assert.equal(err.param, param, JSON.stringify(body));
    assert.equal(err.code, code, JSON.stringify(body));
  }
  const tooMany = refusal({
    model: "mod",
    input: Array.from({ length: MAX_MODERATION_INPUTS + 1 }, () => "x"),
  });
  assert.equal(tooMany.param, "input");
  assert.equal(tooMany.status, 400);
});

Deno.test("moderations request: a missing model says the gateway needs a moderation alias", () => {
  const err = refusal({ input: "x" });
  assert.equal(err.param, "model");
  assert.equal(err.code, "missing_required_parameter");
  assert.match(err.message, /no default moderation model/);
});

Deno.test("moderations request: texts, expected results and text slots", () => {
  const parts = parseModerationRequest({
    model: "m",
    input: [{ type: "text", text: "hello" }, { type: "image_url", image_url: { url: "data:x" } }],
  });
  assert.deepEqual(moderationTexts(parts), ["hello"]);
  assert.equal(expectedResults(parts), null);
  const strings = parseModerationRequest({ model: "m", input: ["a", "b"] });
  assert.deepEqual(moderationTexts(strings), ["a", "b"]);
  assert.equal(expectedResults(strings), 2);
  assert.equal(expectedResults(parseModerationRequest({ model: "m", input: "a" })), 1);

  // Content rules and input guardrails read (and may rewrite) the same texts.
  const slots = textSlots("moderations", parts);
  assert.deepEqual(slots.map((s) => [s.param, s.text]), [["input[0].text", "hello"]]);
  slots[0].write("[redacted]");
  assert.deepEqual(moderationTexts(parts), ["[redacted]"]);
  assert.deepEqual(textSlots("moderations", strings).map((s) => s.param), ["input[0]", "input[1]"]);
});

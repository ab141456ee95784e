/**
 * A conversation's history replayed to Gemini as a client sends it back: tool calls the gateway did not mint
 * (another vendor's, a fallback's), and tool calls with no `tools` in the request.
 */
import assert from "node:assert/strict";
import type { ChatRequest } from "../../openai/types.ts";
import { FOREIGN_CALL_SIGNATURE } from "../thought_signatures.ts";
import { toGeminiRequest } from "./request.ts";
import { type GeminiPart, toolCallIdFor } from "./types.ts";

/** opencode's compaction request: the session's tool use, then the ask for a summary, and no tools. */
const COMPACTION = [
  { role: "user", content: "list files" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "call_1", type: "function", function: { name: "bash", arguments: '{"cmd":"ls"}' } }],
  },
  { role: "tool", tool_call_id: "call_1", content: "a.txt b.txt" },
  { role: "user", content: "Summarize the conversation so far." },
] as ChatRequest["messages"];

Deno.test("gemini request: a tool history without tools declares none (Gemini takes function parts without them)", () => {
  // Google's own Gemini CLI sends its history so, without tools, to have it summarized.
  const body = toGeminiRequest({ model: "alias", messages: COMPACTION });
  assert.equal(body.tools, undefined);
  assert.equal(body.toolConfig, undefined);
  const contents = body.contents as { role: string; parts: Record<string, unknown>[] }[];
  assert.deepEqual(contents.map((c) => c.role), ["user", "model", "user"]);
  assert.ok("functionCall" in contents[1].parts[0]);
  assert.deepEqual(contents[2].parts, [
    { functionResponse: { name: "bash", response: { content: "a.txt b.txt" } } },
    { text: "Summarize the conversation so far." },
  ]);
});

/** The history of one tool loop whose call ids came from elsewhere (Claude's, here) and one the gateway minted. */
function loop(ids: string[], text: string | null = null) {
  return [
    { role: "user", content: "Weather in Paris and Rome?" },
    {
      role: "assistant",
      content: text,
      tool_calls: ids.map((id, i) => ({
        id,
        type: "function",
        function: { name: "get_weather", arguments: JSON.stringify({ city: ["Paris", "Rome"][i] }) },
      })),
    },
    ...ids.map((id) => ({ role: "tool", tool_call_id: id, content: "sunny" })),
  ] as ChatRequest["messages"];
}

const modelTurn = (messages: ChatRequest["messages"]) =>
  (toGeminiRequest({ model: "alias", messages }).contents as { role: string; parts: GeminiPart[] }[])
    .filter((c) => c.role === "model");

Deno.test("gemini request: a replayed call the gateway did not mint gets Google's placeholder signature, on the first call", () => {
  for (const ids of [["toolu_01ABC"], ["toolu_01ABC", "toolu_02DEF"], ["call_plain", "call_other"]]) {
    const [turn] = modelTurn(loop(ids));
    assert.equal(turn.parts[0].thoughtSignature, FOREIGN_CALL_SIGNATURE, ids.join());
    assert.equal(FOREIGN_CALL_SIGNATURE, "skip_thought_signature_validator");
    // Parallel calls carry one signature, on the first (as Gemini's own answers do).
    for (const part of turn.parts.slice(1)) assert.equal(part.thoughtSignature, undefined, ids.join());
  }
  // Text before the calls: the first function call is signed, not the text.
  const [withText] = modelTurn(loop(["toolu_01ABC"], "Let me check."));
  assert.deepEqual(withText.parts[0], { text: "Let me check." });
  assert.equal(withText.parts[1].thoughtSignature, FOREIGN_CALL_SIGNATURE);
  // Every model turn with calls is signed; one without calls is left alone.
  const two = modelTurn(
    [
      ...loop(["toolu_1"]),
      { role: "assistant", content: "It is sunny." },
      { role: "user", content: "And tomorrow?" },
      ...loop(["toolu_2"]).slice(1),
    ] as ChatRequest["messages"],
  );
  assert.deepEqual(two.map((t) => t.parts[0].thoughtSignature), [
    FOREIGN_CALL_SIGNATURE,
    undefined,
    FOREIGN_CALL_SIGNATURE,
  ]);
});

Deno.test("gemini request: a call the gateway minted keeps its own signature", () => {
  const signature = "AY89a18iOcFus5wr5bW5xN6zZ4aUiCyhgmg6HE2YjtYDV/dwZ5oZlZHeTmiUKv34qq0=";
  const [turn] = modelTurn(loop([toolCallIdFor(signature, () => "call_aaa"), "call_bbb"]));
  assert.equal(turn.parts[0].thoughtSignature, signature);
  assert.equal(turn.parts[1].thoughtSignature, undefined);
});

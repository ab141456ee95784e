/**
 * A conversation's history replayed to Gemini as a client sends it back: tool calls the gateway did not mint
 * (another vendor's, a fallback's), and tool calls with no `tools` in the request.
 */
import assert from "node:assert/strict";
import type { ChatRequest } from "../../openai/types.ts";
import { toGeminiRequest } from "./request.ts";

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

/**
 * `claudeHistoryLeavesThinkingOff` says of the chat messages what the turns each Claude translation sends say:
 * read off the Anthropic and Converse turns themselves, for histories where the two differ from the chat
 * messages (blank turns left out, system messages moved into `system`, neighbouring turns merged).
 */
import assert from "node:assert/strict";
import type { ChatMessage, JsonObject } from "../../openai/types.ts";
import { toAnthropicMessages } from "../anthropic/request.ts";
import { toConverseMessages } from "../bedrock/request.ts";
import { claudeHistoryLeavesThinkingOff } from "./claude_history.ts";

const CALL = { id: "call_1", type: "function", function: { name: "f", arguments: "{}" } };
const user = (content: unknown) => ({ role: "user", content });
const assistant = (content: unknown, tool_calls?: unknown[]) => ({ role: "assistant", content, tool_calls });

/** Each history, and whether thinking is left off once it is sent. */
const HISTORIES: [string, JsonObject[], boolean][] = [
  ["ends with the user", [user("Hi")], false],
  ["ends with a prefill", [user("Hi"), assistant("Autumn")], true],
  ["ends with a blank assistant turn", [user("Hi"), assistant("")], false],
  ["ends with a whitespace assistant part", [user("Hi"), assistant([{ type: "text", text: " \n" }])], false],
  ["ends with a blank refusal part", [user("Hi"), assistant([{ type: "refusal", refusal: " " }])], false],
  ["ends with a refusal", [user("Hi"), assistant([{ type: "refusal", refusal: "No." }])], true],
  ["ends with assistant null content", [user("Hi"), assistant(null)], false],
  [
    "prefill, then a system message",
    [user("Hi"), assistant("Autumn"), { role: "system", content: "Brief." }],
    true,
  ],
  [
    "prefill, then a developer message",
    [user("Hi"), assistant("A"), { role: "developer", content: "B" }],
    true,
  ],
  ["prefill, then a blank user turn", [user("Hi"), assistant("Autumn"), user(" ")], true],
  [
    "prefill, then a blank user part",
    [user("Hi"), assistant("Autumn"), user([{ type: "text", text: "" }])],
    true,
  ],
  ["blank call-less assistant", [user("Hi"), assistant(" ", []), user("Go")], false],
  ["a tool call, blank text", [user("Hi"), assistant("", [CALL])], true],
  ["a tool result after a call", [user("Hi"), assistant(null, [CALL]), {
    role: "tool",
    tool_call_id: "call_1",
    content: "",
  }], true],
  [
    "a tool loop over, answered",
    [
      user("Hi"),
      assistant(null, [CALL]),
      { role: "tool", tool_call_id: "call_1", content: "ok" },
      assistant("Done"),
      user("Thanks"),
    ],
    false,
  ],
  [
    "a call merged into a later assistant turn",
    [user("Hi"), assistant(null, [CALL]), user(""), assistant("More"), user("Go on")],
    true,
  ],
  ["only system messages", [{ role: "system", content: "You are terse." }], false],
];

/** Whether sent turns leave thinking off: a final assistant turn, or a last assistant turn that uses a tool. */
function turnsLeaveThinkingOff(turns: { role: string }[], usesTool: (turn: never) => boolean): boolean {
  if (turns.at(-1)?.role === "assistant") return true;
  const last = turns.findLast((t) => t.role === "assistant");
  return last !== undefined && usesTool(last as never);
}

Deno.test("claude history: thinking is left off exactly when the turns each translation sends leave it off", () => {
  for (const [name, messages, off] of HISTORIES) {
    assert.equal(claudeHistoryLeavesThinkingOff(messages), off, name);
    const anthropic = toAnthropicMessages(messages).messages;
    const anthropicOff = turnsLeaveThinkingOff(
      anthropic,
      (m: { content: unknown }) => Array.isArray(m.content) && m.content.some((b) => b.type === "tool_use"),
    );
    assert.equal(anthropicOff, off, `${name} (Anthropic)`);
    const converse = toConverseMessages(messages as ChatMessage[], "anthropic.claude-sonnet-4-5").turns;
    const converseOff = turnsLeaveThinkingOff(
      converse,
      (t: { content: JsonObject[] }) => t.content.some((b) => "toolUse" in b),
    );
    assert.equal(converseOff, off, `${name} (Converse)`);
  }
});

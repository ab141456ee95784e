/**
 * Participant names (`messages[].name`) have no field at Anthropic, Gemini or Bedrock: each translated target
 * names the ones it goes without, whatever `unsupported_params`; OpenAI-compatible targets get them as sent.
 */
import assert from "node:assert/strict";
import { providerSchema } from "../../config/provider_schema.ts";
import type { ResolvedTarget } from "../../config/types.ts";
import type { ChatRequest } from "../../openai/types.ts";
import { chatParamsOn } from "../capabilities.ts";
import { messageNamesDropped } from "./message_names.ts";

function target(raw: Record<string, unknown>, model: string): ResolvedTarget {
  return { provider: "p", model, providerConfig: providerSchema.parse(raw) } as ResolvedTarget;
}

const GROUP_CHAT: ChatRequest = {
  model: "m",
  messages: [
    { role: "system", name: "moderator", content: "Answer each participant." },
    { role: "user", name: "alice", content: "My favourite colour is red." },
    { role: "user", name: "bob", content: "What is my favourite colour?" },
    { role: "assistant", content: "Bob, you have not said." },
    { role: "user", name: "", content: "Who asked?" },
  ],
};

Deno.test("message names: each translated target names the participant names it goes without, in any mode", () => {
  const names = ["messages[0].name", "messages[1].name", "messages[2].name"];
  for (const mode of ["error", "drop"]) {
    const translated = [
      target({ type: "anthropic", api_key: "k", unsupported_params: mode }, "claude-sonnet-4-5"),
      target({ type: "gemini", api_key: "k", unsupported_params: mode }, "gemini-2.5-flash"),
      ...["us.anthropic.claude-sonnet-4-5-20250929-v1:0", "amazon.nova-pro-v1:0"].map((model) =>
        target({
          type: "bedrock",
          region: "us-east-1",
          access_key_id: "a",
          secret_access_key: "s",
          unsupported_params: mode,
        }, model)
      ),
    ];
    for (const t of translated) {
      assert.deepEqual(chatParamsOn(t, GROUP_CHAT), { dropped: names }, `${t.model} ${mode}`);
    }
    // Beside a parameter the target drops, both are named.
    const seeded = { ...GROUP_CHAT, seed: 7 };
    const anthropic = target({ type: "anthropic", api_key: "k", unsupported_params: "drop" }, "claude");
    assert.deepEqual(chatParamsOn(anthropic, seeded), { dropped: ["seed", ...names] });
  }
  // OpenAI-compatible targets send them as they came.
  const openai = target({ type: "openai", base_url: "http://127.0.0.1:1/v1" }, "gpt");
  assert.equal(chatParamsOn(openai, GROUP_CHAT), null);
});

Deno.test("message names: a tool or legacy function message's name is the function's, not a participant's", () => {
  const messages = [
    { role: "user", content: "Weather?" },
    { role: "tool", tool_call_id: "call_1", name: "get_weather", content: "sunny" },
    { role: "function", name: "get_weather", content: "sunny" },
  ];
  assert.deepEqual(messageNamesDropped(messages), []);
});

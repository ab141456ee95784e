/**
 * Shared by the stored-response stores' tests: a stored response with message items, at a fixed time.
 *
 * @module
 */
import type { JsonObject } from "../openai/types.ts";
import type { StoredResponse } from "./responses_store.ts";

export const NOW = Date.UTC(2025, 5, 1) / 1000;
export const DAY = 86_400;

export const message = (id: string, role: string, text: string): JsonObject => ({
  id,
  type: "message",
  role,
  content: [{ type: role === "assistant" ? "output_text" : "input_text", text }],
});

/** A stored response with `inputs` (item ids) as user messages and `outputs` as assistant messages. */
export function response(
  id: string,
  overrides: Partial<StoredResponse> & { inputs?: string[]; outputs?: string[] } = {},
): StoredResponse {
  const { inputs = [`${id}_in`], outputs = [`${id}_out`], ...rest } = overrides;
  return {
    id,
    owner: "alice",
    environment: "prod",
    created_at: NOW,
    alias: "chat-default",
    provider: "openai",
    native: false,
    upstream_id: null,
    previous_response_id: null,
    input_items: inputs.map((item) => message(item, "user", `said ${item}`)),
    response: {
      id,
      object: "response",
      created_at: NOW,
      status: "completed",
      model: "chat-default",
      output: outputs.map((item) => message(item, "assistant", `answered ${item}`)),
    },
    ...rest,
  };
}

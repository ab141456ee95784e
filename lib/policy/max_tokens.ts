/**
 * A token's ceiling on completion length: `max_tokens` / `max_completion_tokens` above it are lowered to it,
 * and a chat request that gives neither gets `max_completion_tokens` set to it, so no choice can ask for more:
 * OpenAI's current field, which every translated provider reads too, where OpenAI's reasoning models refuse the
 * deprecated `max_tokens` (a capped token's every request would be a 400 naming a field its client never sent).
 * Like the fields, the ceiling is per choice: a chat request of `n` choices may use, and reserves against its
 * budgets, `n` times it.
 *
 * @module
 */
import type { JsonObject } from "../openai/types.ts";

const FIELDS = ["max_tokens", "max_completion_tokens"] as const;

/**
 * Applies the ceiling to a chat request body in place; returns whether the body changed. A value that is
 * not a number is left alone (request validation reports it); `null` counts as absent.
 */
export function applyMaxTokensCeiling(body: JsonObject, ceiling: number): boolean {
  let changed = false;
  let present = false;
  for (const field of FIELDS) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    present = true;
    if (typeof value === "number" && value > ceiling) {
      body[field] = ceiling;
      changed = true;
    }
  }
  if (!present) {
    body.max_completion_tokens = ceiling;
    changed = true;
  }
  return changed;
}

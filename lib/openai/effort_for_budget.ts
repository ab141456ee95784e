/**
 * A client's thinking budget in tokens (Anthropic's `thinking.budget_tokens`, Gemini's
 * `thinkingConfig.thinkingBudget`) as the chat form's `reasoning_effort`: one rule for every client API that
 * speaks in budgets, so the same budget asks for the same effort whichever API it came through.
 *
 * @module
 */

/**
 * The `reasoning_effort` for a thinking budget: the effort whose budget (in the gateway's table for Claude,
 * low 2,048 / medium 8,192 / high 24,576 tokens) is nearest on a log scale, so a budget maps back to the effort
 * that would give it (the edges are the geometric means: √(2,048 × 8,192) = 4,096, √(8,192 × 24,576) ≈ 14,189).
 * Claude Code's "think" (4,000), "think hard" (10,000) and "ultrathink" (31,999) come out low, medium and high.
 */
export function effortForBudget(budget: number): "low" | "medium" | "high" {
  if (budget < 4096) return "low";
  if (budget < 14_189) return "medium";
  return "high";
}

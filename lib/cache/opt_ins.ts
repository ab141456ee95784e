/**
 * The one rule for the answers the response cache keeps only when the alias opts in (docs/caching.md), for
 * every client API and path: a chat-form answer (cached_route.ts: chat completions, and Responses, Messages and
 * Gemini on a translated target) and an answer passed through natively (cached_native.ts, each API's
 * `NativeCacheSpec` saying how its wire format ended). Each says how each of its choices ended; this decides.
 *
 * An answer needs every opt-in that something in it needs: a choice that hands the client a call to run needs
 * `cache_tool_calls` (a hit would hand it the same command again without the model being asked), a choice cut
 * off needs `cache_incomplete`, a choice that is both needs both, and several choices (given, or asked for with
 * `n`) need `cache_n`. Two copies of this rule once disagreed: an answer cut off in the middle of its tool calls
 * was kept under `cache_tool_calls` alone on chat completions and Gemini, under `cache_incomplete` alone on
 * Responses and Messages, and a native Gemini answer of two candidates was kept without `cache_n`.
 *
 * @module
 */
import type { ResolvedAliasCache } from "../config/types.ts";
import type { ChatRequest } from "../openai/types.ts";

/** How one choice of a whole answer ended, as far as the opt-ins go. */
export interface ChoiceEnding {
  /** It hands the client (or its user) a call to run: kept only under `cache_tool_calls`. */
  calls: boolean;
  /** It was cut off (its output limit, a content filter, a refusal) rather than ended: only under `cache_incomplete`. */
  cut: boolean;
}

/** The alias's opt-ins. */
export type OptIns = Pick<ResolvedAliasCache, "toolCalls" | "incomplete" | "n">;

/** The chat form's finish reasons of a choice that ended whole: the model stopped, or handed over its calls. */
const WHOLE: ReadonlySet<unknown> = new Set(["stop", "tool_calls", "function_call"]);

/**
 * Whether a chat-form finish reason (or a vendor's, read through its table in lib/providers/finish_reasons.ts)
 * says the choice was cut off: `length`, `content_filter`, or none at all.
 */
export function cutOff(finishReason: unknown): boolean {
  return !WHOLE.has(finishReason);
}

/** How many choices a chat-form request asks for (`n`; Gemini's `candidateCount` becomes it). */
export function askedChoices(chat: ChatRequest): number {
  return typeof chat.n === "number" && chat.n > 1 ? chat.n : 1;
}

/**
 * Whether an answer whose choices ended so (one entry per choice, in order) may be kept, and an entry of it
 * served, under the alias's opt-ins now; `asked` is how many choices the request asked for. No choice: never.
 */
export function optedIn(endings: readonly ChoiceEnding[], asked: number, settings: OptIns): boolean {
  if (endings.length === 0) return false;
  if ((endings.length > 1 || asked > 1) && !settings.n) return false;
  return endings.every((ending) =>
    (!ending.calls || settings.toolCalls) && (!ending.cut || settings.incomplete)
  );
}

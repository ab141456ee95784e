/**
 * What an embeddings request's failed attempts spent. Bedrock Titan embeds one text per call, Cohere and Gemini
 * a batch per call: when one call fails with what routing retries (a 429, a 5xx), the whole request is sent
 * again, but the calls that had answered were billed by the vendor. Each attempt runs with an `onEmbedded` that
 * collects its answered calls as they answer, so a failed attempt's are known even though it threw; the handler
 * adds them to the request's one usage record (`Outcome.spentBefore`), whether the request ends in an answer or
 * in an error. The answering attempt's tokens are its result's, as before.
 *
 * @module
 */
import type { RoutedTarget } from "../config/types.ts";
import type { EmbeddedPart } from "../providers/types.ts";
import { countTokens } from "../usage/estimate.ts";
import { noteOutcome, type SpentAttempt } from "./accounting.ts";
import type { RequestContext } from "./context.ts";

/** One request's tally of the calls its failed attempts had answered, by attempt. */
export class EmbeddingSpend {
  #failed: { target: RoutedTarget; parts: EmbeddedPart[] }[] = [];

  /**
   * Runs one attempt on `target`, giving it the `onEmbedded` to pass its provider calls; when the attempt throws,
   * the calls that answered before are kept as its spend.
   */
  async attempt<T>(
    target: RoutedTarget,
    run: (onEmbedded: (part: EmbeddedPart) => void) => Promise<T>,
  ): Promise<T> {
    const parts: EmbeddedPart[] = [];
    try {
      return await run((part) => parts.push(part));
    } catch (err) {
      if (parts.length > 0) this.#failed.push({ target, parts });
      throw err;
    }
  }

  /**
   * Each failed attempt's spend, priced on its own target: the tokens each call reported, else the gateway's
   * count of its texts (marked estimated), as the answering attempt's are counted.
   */
  spent(): Promise<SpentAttempt[]> {
    return Promise.all(this.#failed.map(async ({ target, parts }) => {
      let prompt = 0;
      let estimated = false;
      for (const part of parts) {
        if (part.tokens > 0) prompt += part.tokens;
        else {
          prompt += await countTokens(part.texts);
          estimated = true;
        }
      }
      return { target, usage: { prompt, completion: 0, estimated } };
    }));
  }

  /**
   * Notes a failed request's spend in its record, before its error is answered: only what its failed attempts
   * spent (no attempt answered), nothing when they spent nothing.
   */
  async noteFailure(ctx: RequestContext): Promise<void> {
    if (this.#failed.length === 0) return;
    noteOutcome(ctx, {
      usage: { prompt: 0, completion: 0, estimated: false },
      spentBefore: await this.spent(),
    });
  }
}

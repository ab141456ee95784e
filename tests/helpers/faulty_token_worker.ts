/**
 * Test fixture: the token-count worker, except that a count holding the text `crash-the-worker` kills it with an
 * uncaught error (the way a bug or a native fault would; the counts sent after it are never answered), and one
 * holding `hang-the-worker` is never answered.
 *
 * @module
 */
import "../../lib/usage/token_count_worker.ts";
import type { TokenCountAsk } from "../../lib/usage/token_counter.ts";

const scope = globalThis as unknown as { onmessage: ((event: MessageEvent<TokenCountAsk>) => void) | null };
const real = scope.onmessage!;
let dying = false;
scope.onmessage = (event) => {
  const texts = event.data.texts;
  if (dying) return;
  if (texts.includes("crash-the-worker")) {
    dying = true;
    setTimeout(() => {
      throw new Error("worker crashed on purpose");
    });
    return;
  }
  if (texts.includes("hang-the-worker")) return;
  real(event);
};

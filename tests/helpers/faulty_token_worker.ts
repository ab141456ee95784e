/**
 * Test fixture: the token-count worker, except that a count holding the text `crash-the-worker` kills it with an
 * uncaught error (the way a bug or a native fault would; the counts sent after it are never answered), and one
 * holding `hang-the-worker` is never answered. A count of a text that contains `announce-the-count` is answered as
 * usual, and announced when it begins on the `BroadcastChannel` {@linkcode COUNT_ANNOUNCED} (so a test can see
 * when the gateway started counting, without timing it). A count of a text that contains `hold-the-count` is
 * announced alike and then held, never answered: a tokenizer still loading or busy for as long as the test needs
 * (until the gateway's counter ends the worker, or the count's own bound).
 *
 * @module
 */
import "../../lib/usage/token_count_worker.ts";
import type { TokenCountAsk } from "../../lib/usage/token_counter.ts";
import { COUNT_ANNOUNCED } from "./count_announced.ts";

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
  const held = texts.some((text) => text.includes("hold-the-count"));
  if (held || texts.some((text) => text.includes("announce-the-count"))) {
    const channel = new BroadcastChannel(COUNT_ANNOUNCED);
    channel.postMessage("begun");
    channel.close();
  }
  if (!held) real(event);
};

/**
 * The token-count worker: a thread that loads the tokenizer as soon as it starts and then answers counts
 * (`{ id, texts }` → `{ id, count }`), so that neither the tokenizer's load nor its BPE runs on a serving thread.
 * Started by `token_counter.ts`; an entry point of the build beside the SQLite, config and serving workers.
 *
 * @module
 */
import { countWith, tokenizerHere } from "./tokenizer.ts";
import type { TokenCountAnswer, TokenCountAsk } from "./token_counter.ts";

const port = globalThis as unknown as {
  postMessage(message: TokenCountAnswer): void;
  onmessage: ((event: MessageEvent<TokenCountAsk>) => void) | null;
};

const loading = tokenizerHere();
// Told once, so that the client knows the load is paid (`tokenizerLoaded`), or that this thread cannot count.
loading.then(
  () => port.postMessage({ loaded: true }),
  (err) => port.postMessage({ failed: err instanceof Error ? err.message : String(err) }),
);

port.onmessage = async (event) => {
  const { id, texts } = event.data;
  try {
    port.postMessage({ id, count: countWith(await loading, texts) });
  } catch (err) {
    port.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
};

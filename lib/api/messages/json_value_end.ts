/**
 * Where a JSON object or array streamed in pieces ends: a tool call's arguments arrive as fragments, and a
 * translated stream must know when one call's arguments are whole to close its `tool_use` block before the
 * next block starts (Anthropic's clients take each block start → deltas → stop, one after another). One pass
 * over each fragment, a few counters of state: no fragment is kept.
 *
 * @module
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/** Feeds on a JSON text's fragments; `complete` once its top-level object or array has closed. */
export class JsonValueEnd {
  #depth = 0;
  #inString = false;
  #escaped = false;
  /** The top-level object or array has closed (what follows it, if anything, is not JSON's). */
  complete = false;

  /** Reads the next fragment. */
  feed(fragment: string): void {
    if (this.complete) return;
    for (let i = 0; i < fragment.length; i++) {
      const c = fragment.charCodeAt(i);
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (c === BACKSLASH) this.#escaped = true;
        else if (c === QUOTE) this.#inString = false;
      } else if (c === QUOTE) {
        this.#inString = true;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        this.#depth++;
      } else if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && --this.#depth <= 0) {
        this.complete = true;
        return;
      }
    }
  }
}

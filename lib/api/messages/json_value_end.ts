/**
 * Where a JSON object or array streamed in pieces ends: a tool call's arguments arrive as fragments, and a
 * translated stream must know when one call's arguments are whole to close its `tool_use` block before the
 * next block starts (Anthropic's clients take each block start → deltas → stop, one after another), and
 * whether what came is a whole JSON object (a tool_use `input` must be one). One pass over each fragment, a
 * few counters of state: no fragment is kept. The check is of the shape, not of every token: a text cut short,
 * a top-level array or scalar, or anything after the object is told; a bad token inside a closed object is left
 * to the client's JSON parser.
 *
 * @module
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/** JSON's whitespace: space, tab, line feed, carriage return. */
function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

/** Feeds on a JSON text's fragments; `complete` once its top-level object or array has closed. */
export class JsonValueEnd {
  #depth = 0;
  #inString = false;
  #escaped = false;
  /** The first character that is not whitespace: `{` for an object; undefined while there is none. */
  #first: number | undefined;
  /** Something other than whitespace came after the top-level value closed. */
  #trailing = false;
  /** The top-level object or array has closed (what follows it, if anything, is not JSON's). */
  complete = false;

  /** Whether nothing but whitespace came (arguments a tool_use takes as `{}`). */
  get empty(): boolean {
    return this.#first === undefined;
  }

  /** Whether what came is one whole JSON object, and nothing after it. */
  get wholeObject(): boolean {
    return this.complete && this.#first === OPEN_BRACE && !this.#trailing;
  }

  /** Reads the next fragment. */
  feed(fragment: string): void {
    if (this.complete) {
      this.#after(fragment, 0);
      return;
    }
    for (let i = 0; i < fragment.length; i++) {
      const c = fragment.charCodeAt(i);
      if (this.#first === undefined && !isSpace(c)) this.#first = c;
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
        this.#after(fragment, i + 1);
        return;
      }
    }
  }

  /** Notes anything but whitespace in `fragment` from `from` on (it follows the closed value). */
  #after(fragment: string, from: number): void {
    for (let i = from; i < fragment.length && !this.#trailing; i++) {
      if (!isSpace(fragment.charCodeAt(i))) this.#trailing = true;
    }
  }
}

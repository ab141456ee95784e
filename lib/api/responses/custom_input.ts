/**
 * A custom tool's input read out of the arguments of the chat function call that stands for it
 * (custom_tools.ts): the string value of the top-level `input` key of `{"input": "…"}`, decoded as the
 * argument fragments stream in, so a custom call's `response.custom_tool_call_input.delta` events carry the
 * text itself rather than JSON. Decoding is incremental (each character is read once: an `apply_patch` input
 * runs to tens of kilobytes in thousands of fragments), and what it gives for a prefix of the arguments is a
 * prefix of what it gives for the whole, so the deltas always add up to the final input.
 *
 * Arguments without a string `input` (a model that wrote another key, or plain text) are the input as they
 * are: nothing is shown before the call ends, then all of it.
 *
 * @module
 */

const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};

/** Where the reader is in the arguments' JSON. */
type State =
  | "start" // before the top-level `{`
  | "key" // inside the top level, before a key (or `}`)
  | "keyString" // inside a key
  | "colon" // after a key
  | "value" // after the colon
  | "skip" // inside a value that is not the input (a string, an object, an array, a literal)
  | "input" // inside the input's string
  | "done" // the input's string ended
  | "none"; // not a JSON object

/** Reads the input out of the arguments, one fragment at a time. */
export class CustomInputReader {
  #state: State = "start";
  #key = "";
  /** Inside a skipped value: nesting depth, in a string, after a backslash. */
  #depth = 0;
  #inString = false;
  #escaped = false;
  /** Inside the input: after a backslash; the hex digits of a `\u` escape; a high surrogate held back. */
  #escape = false;
  #hex: string | null = null;
  #high = "";
  /** The input decoded so far (what the deltas have given). */
  decoded = "";

  /** Whether the arguments hold a string `input` (known once its opening quote has been read). */
  get found(): boolean {
    return this.#state === "input" || this.#state === "done";
  }

  /** Whether the input's closing quote has been read. */
  get complete(): boolean {
    return this.#state === "done";
  }

  /** Reads a fragment of the arguments; returns the input text it added (possibly ""). */
  push(fragment: string): string {
    let out = "";
    for (const ch of fragment) {
      if (this.#state === "input") out += this.#inputChar(ch);
      else if (this.#state !== "done" && this.#state !== "none") this.#structure(ch);
    }
    this.decoded += out;
    return out;
  }

  /** One character of the input's string, decoded: what it adds to the input. */
  #inputChar(ch: string): string {
    if (this.#hex !== null) {
      this.#hex += ch;
      if (this.#hex.length < 4) return "";
      const unit = String.fromCharCode(parseInt(this.#hex, 16));
      this.#hex = null;
      return this.#unit(unit);
    }
    if (this.#escape) {
      this.#escape = false;
      if (ch === "u") {
        this.#hex = "";
        return "";
      }
      return this.#unit(ESCAPES[ch] ?? ch);
    }
    if (ch === "\\") {
      this.#escape = true;
      return "";
    }
    if (ch === '"') {
      this.#state = "done";
      const held = this.#high;
      this.#high = "";
      return held;
    }
    return this.#unit(ch);
  }

  /** A decoded piece; a high surrogate waits for the low one a `\u` escape after it brings. */
  #unit(text: string): string {
    const code = text.charCodeAt(0);
    if (text.length === 1 && code >= 0xd800 && code <= 0xdbff) {
      const held = this.#high;
      this.#high = text;
      return held;
    }
    const out = this.#high + text;
    this.#high = "";
    return out;
  }

  /** One character of the JSON around the input. */
  #structure(ch: string): void {
    const space = ch === " " || ch === "\n" || ch === "\r" || ch === "\t";
    switch (this.#state) {
      case "start":
        if (ch === "{") this.#state = "key";
        else if (!space) this.#state = "none";
        return;
      case "key":
        if (ch === '"') {
          this.#key = "";
          this.#escaped = false;
          this.#state = "keyString";
        } else if (!space && ch !== ",") this.#state = "none";
        return;
      case "keyString":
        if (this.#escaped) {
          this.#key += ch;
          this.#escaped = false;
        } else if (ch === "\\") this.#escaped = true;
        else if (ch === '"') this.#state = "colon";
        else this.#key += ch;
        return;
      case "colon":
        if (ch === ":") this.#state = "value";
        else if (!space) this.#state = "none";
        return;
      case "value":
        if (space) return;
        if (ch === '"' && this.#key === "input") {
          this.#state = "input";
          return;
        }
        this.#state = "skip";
        this.#depth = 0;
        this.#inString = false;
        this.#escaped = false;
        this.#skip(ch);
        return;
      case "skip":
        this.#skip(ch);
        return;
    }
  }

  /** One character of a value that is not the input; the top level's `,` or `}` ends it. */
  #skip(ch: string): void {
    if (this.#inString) {
      if (this.#escaped) this.#escaped = false;
      else if (ch === "\\") this.#escaped = true;
      else if (ch === '"') this.#inString = false;
      return;
    }
    if (ch === '"') this.#inString = true;
    else if (ch === "{" || ch === "[") this.#depth++;
    else if (ch === "}" || ch === "]") {
      if (this.#depth === 0) this.#state = "none"; // the object's end: no input after all
      else this.#depth--;
    } else if (ch === "," && this.#depth === 0) this.#state = "key";
  }
}

/**
 * The input of a custom call whose arguments are `args`: the `input` string (as far as it goes, when the
 * arguments were cut off), else the arguments as they are.
 */
export function customInput(args: string): string {
  const reader = new CustomInputReader();
  reader.push(args);
  return reader.found ? reader.decoded : args;
}

/**
 * Masking with typed placeholders, and its reversal in the answer (issue 27).
 *
 * An input guardrail that masks replaces each finding with `<TYPE_n>` (`<EMAIL_1>`, `<CREDIT_CARD_2>`) before
 * the model sees the request, so the model can still refer to "the email" and the answer can be given back
 * with the client's own values in place. `n` counts per type from 1 within one request, and one value keeps one
 * placeholder across all of the request's texts (the same email in two messages is `<EMAIL_1>` in both), so the
 * model sees that they are the same thing.
 *
 * Collisions with the client's own text. A placeholder is only ever reversed if this request's masker issued
 * it, so a `<EMAIL_1>` the client typed that was never issued stays as typed. To keep an issued placeholder
 * from also standing for such a literal, the masker never issues a placeholder that occurs literally in a
 * text it knows: each text given to `mask`, and every text passed to {@linkcode createMasker} up front (it
 * skips to `<EMAIL_2>`). Pass the request's texts up front: without them, a later text can hold, literally, a
 * placeholder already issued for an earlier one; it is then left as typed and the answer's occurrences of it
 * are reversed to the value it was issued for. That value came from this same request, so nothing crosses a
 * request or a client, but the answer can read differently from what the client meant.
 *
 * Reversal on a stream holds back only a suffix that could still become an issued placeholder (from its last
 * `<`, shorter than the longest placeholder), so the client never waits for more than that and never sees a
 * placeholder cut in two.
 *
 * @module
 */

import type { Finding } from "./types.ts";

/** Text shaped like a placeholder, issued or not: what a text's literals reserve. */
const PLACEHOLDER_SHAPE = /<[A-Z0-9_]+_[0-9]+>/g;

/** Per request: masks its texts and remembers what each placeholder stands for. Not shared across requests. */
export interface Masker {
  /**
   * `text` with each finding's span replaced by its placeholder. Findings may come in any order; those out of
   * the text's bounds, empty, or overlapping an earlier-starting one are skipped (a recognizer's caller passes
   * non-overlapping findings; this keeps a bad one from mangling the text). Only the findings are replaced:
   * other occurrences of a value the recognizer did not report stay as they are.
   */
  mask(text: string, findings: readonly Finding[]): string;
  /** Placeholder → original value, for every placeholder issued so far (a copy). */
  mapping(): ReadonlyMap<string, string>;
}

/** Reverses one request's placeholders in its answer, whole or streamed. One per answer (a stream keeps state). */
export interface Unmasker {
  /** `text` with every issued placeholder replaced by its value; anything else, lookalikes included, as is. */
  unmaskText(text: string): string;
  /**
   * The next piece of a streamed answer: returns what can be shown now, unmasked, and holds back at most a
   * suffix that could still become an issued placeholder (from its last `<`, shorter than the longest one).
   * The outputs of every `push` and the final `end`, joined, equal `unmaskText` of the chunks joined,
   * wherever the chunks were cut.
   */
  push(chunk: string): string;
  /** The held suffix: at the end of the stream it was plain text after all. */
  end(): string;
}

/**
 * The placeholder's type part: the finding's type upper-cased, with anything but `A-Z`, `0-9` and `_` made
 * `_`, so a placeholder never holds `<` or `>` (which reversal relies on).
 */
function typeName(type: string): string {
  const name = type.toUpperCase().replace(/[^A-Z0-9_]/g, "_");
  return name === "" ? "PII" : name;
}

/**
 * A per-request masker. `requestTexts` are the request's texts (all of them, before any is masked): every
 * placeholder-shaped literal in them is reserved, so no issued placeholder can equal text the client wrote.
 */
export function createMasker(requestTexts: readonly string[] = []): Masker {
  const reserved = new Set<string>();
  const reserve = (text: string) => {
    for (const m of text.matchAll(PLACEHOLDER_SHAPE)) reserved.add(m[0]);
  };
  for (const text of requestTexts) reserve(text);

  const counters = new Map<string, number>();
  /** `type NUL value` → placeholder: one value, one placeholder, per type. */
  const byValue = new Map<string, string>();
  const originals = new Map<string, string>();

  const issue = (type: string, value: string): string => {
    const key = `${type}\u0000${value}`;
    const known = byValue.get(key);
    if (known !== undefined) return known;
    const name = typeName(type);
    let n = counters.get(name) ?? 0;
    let placeholder: string;
    do placeholder = `<${name}_${++n}>`; while (reserved.has(placeholder));
    counters.set(name, n);
    byValue.set(key, placeholder);
    originals.set(placeholder, value);
    return placeholder;
  };

  return {
    mask(text, findings) {
      reserve(text);
      const ordered = findings
        .filter((f) =>
          Number.isInteger(f.start) && Number.isInteger(f.end) && f.start >= 0 && f.start < f.end &&
          f.end <= text.length
        )
        .sort((a, b) => a.start - b.start || b.end - a.end);
      let out = "";
      let from = 0;
      for (const f of ordered) {
        if (f.start < from) continue; // overlaps one already replaced
        out += text.slice(from, f.start) + issue(f.type, text.slice(f.start, f.end));
        from = f.end;
      }
      return out + text.slice(from);
    },
    mapping: () => new Map(originals),
  };
}

/**
 * The reverser for one answer. Every key of `mapping` must be `<…>` with no `<` or `>` inside (as
 * {@linkcode createMasker} issues them): then no placeholder is a prefix of another and two occurrences never
 * overlap, which is what lets a stream be cut at its last `<` and unmasked piece by piece with the same result
 * as the whole. Throws a `TypeError` for any other key.
 */
export function createUnmasker(mapping: ReadonlyMap<string, string>): Unmasker {
  const originals = new Map(mapping);
  /** Every proper prefix of a placeholder (`<`, `<E`, … `<EMAIL_1`): what a stream may have to hold. */
  const prefixes = new Set<string>();
  let longest = 0;
  for (const key of originals.keys()) {
    if (!/^<[^<>]+>$/.test(key)) throw new TypeError(`not a placeholder: ${JSON.stringify(key)}`);
    longest = Math.max(longest, key.length);
    for (let i = 1; i < key.length; i++) prefixes.add(key.slice(0, i));
  }

  /** Linear: each `<` looks up the text up to the next `>` (found once per `>`), if short enough to be a key. */
  const unmaskText = (text: string): string => {
    if (originals.size === 0) return text;
    let out = "";
    let from = 0;
    let close = -1;
    for (let open = text.indexOf("<"); open !== -1; open = text.indexOf("<", open + 1)) {
      if (close <= open) close = text.indexOf(">", open + 1);
      if (close === -1) break;
      if (close - open >= longest) continue;
      const original = originals.get(text.slice(open, close + 1));
      if (original === undefined) continue;
      out += text.slice(from, open) + original;
      from = close + 1;
      open = close;
    }
    return from === 0 ? text : out + text.slice(from);
  };

  let held = "";
  return {
    unmaskText,
    push(chunk) {
      const text = held + chunk;
      held = "";
      const last = text.lastIndexOf("<");
      // A placeholder holds no `<` but its first, so none can start before the last `<` and reach past it:
      // everything before it is final, and only the rest, if it can still grow into a placeholder, waits.
      if (last !== -1 && text.length - last < longest && prefixes.has(text.slice(last))) {
        held = text.slice(last);
        return unmaskText(text.slice(0, last));
      }
      return unmaskText(text);
    },
    end() {
      const rest = held;
      held = "";
      return rest;
    },
  };
}

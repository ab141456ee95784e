/**
 * JSON with every string in it scrubbed, object keys included. A replacer or a reviver alone sees the values
 * only, while a secret can as well be a key (an upstream's error keyed by the header it refused, a map of
 * keys to their status): the reviver below rebuilds each object whose keys the scrubber changes. For the slow
 * paths only, where a line or an error is known to hold a secret (or is small and rare): it parses. And the check
 * that spares a whole answer its walk ({@linkcode jsonMayHold}): whether any string of a JSON text may hold a
 * secret, in one scan of the text.
 *
 * @module
 */
import type { Scrubber } from "./scrubber.ts";

/**
 * Parses the JSON `text`, every string value and every object key passed through `scrub`. Two keys that scrub
 * alike keep the later one's value, as a duplicate key in JSON text does: a mask must never leave the secret.
 */
export function parseScrubbed(text: string, scrub: (text: string) => string): unknown {
  return JSON.parse(text, (_key, value: unknown) => {
    if (typeof value === "string") return scrub(value);
    if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
    const entries = Object.entries(value);
    const keys = entries.map(([key]) => scrub(key));
    if (keys.every((key, i) => key === entries[i][0])) return value;
    // fromEntries defines own properties, so a key "__proto__" stays data and never sets the prototype.
    return Object.fromEntries(entries.map(([, item], i) => [keys[i], item]));
  });
}

/**
 * Whether a string or key of the JSON `text` (as `JSON.parse` read it) may hold something `scrubber` masks: false
 * means none does, so what was parsed from it needs no scrubbing. A text without a backslash has no escape, so
 * each of its strings and keys stands in it as parsed, between the quotes that delimit it, and what `test` finds
 * in one string it finds as well in a longer text that holds the string between characters that are no word
 * characters, as a quote is not (scrubber.ts: a part of a plain-word secret must stand at word boundaries, and a
 * text's start and end are some): one scan of the text answers. A text with an escape may hold a secret written
 * with escapes (`\u0073k-…`, an upstream can escape any character) that no scan of it as sent finds: it may hold
 * one. Decoding it instead would cost every character of the answer's content a step, to spare a walk that reads
 * only a few of its fields in most answers; so an answer with an escape is walked, and `includes` stops at its
 * first backslash.
 */
export function jsonMayHold(text: string, scrubber: Pick<Scrubber, "test">): boolean {
  return text.includes("\\") || scrubber.test(text);
}

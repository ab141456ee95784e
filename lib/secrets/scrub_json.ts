/**
 * JSON with every string in it scrubbed, object keys included. A replacer or a reviver alone sees the values
 * only, while a secret can as well be a key (an upstream's error keyed by the header it refused, a map of
 * keys to their status): the reviver below rebuilds each object whose keys the scrubber changes. For the slow
 * paths only, where a line or an error is known to hold a secret (or is small and rare): it parses.
 *
 * @module
 */

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

/**
 * What the scrubber counts as a word and as a random-looking run: which parts of a secret are masked wherever
 * they appear (scrubber.ts).
 *
 * @module
 */

/**
 * Whether a run of a secret is distinctive enough to mask wherever it appears: it has a digit or mixed case
 * (`Xq7vB2mN`), as runs of generated keys almost always do. Runs of plain words (`disabled`, `Internal`) or a
 * public key prefix (`sk-proj-`) are not, and masking them would mangle the gateway's own messages
 * (`token_disabled`) for a token that happens to contain the word.
 */
export function looksRandom(run: string): boolean {
  return /[0-9]|[a-z][A-Z]|[A-Z]{2}/.test(run);
}

/**
 * Whether a character is part of a word: an ASCII letter or digit, or any non-ASCII character. Everything else
 * (`-`, `_`, `.`, `/`, a space) separates words.
 */
export function isWordCode(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) ||
    code > 127;
}

/** Whether `text` has a word boundary before index `at`: at either end, or not between two word characters. */
export function boundaryAt(text: string, at: number): boolean {
  return at === 0 || at === text.length || !isWordCode(text.charCodeAt(at - 1)) ||
    !isWordCode(text.charCodeAt(at));
}

/**
 * Notes whether `run` (a random-looking run of a secret, `folded` its case-folded form) is matched in any letter
 * case (`anyCase`: it holds a digit, which no plain word does) or only as written (`caseOnly`, by folded form:
 * it looks random only by its case, `GUARDRAI` of `AKIDFAKEGUARDRAIL…`, and folded it is a plain word).
 */
export function noteRunCase(
  run: string,
  folded: string,
  caseOnly: Map<string, Set<string>>,
  anyCase: Set<string>,
): void {
  if (/[0-9]/.test(run)) {
    anyCase.add(folded);
    caseOnly.delete(folded);
  } else if (!anyCase.has(folded)) caseOnly.set(folded, (caseOnly.get(folded) ?? new Set()).add(run));
}

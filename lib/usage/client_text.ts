/**
 * The one check of client-supplied ids and text before they reach a store: what each database can hold, so
 * that a client's mistake is answered as the client's (a 404, a 400), never as a database failure (a 503
 * `store_unavailable` that tells the client to retry), and SQLite and PostgreSQL answer alike.
 *
 * What the databases cannot hold:
 * - PostgreSQL's `text` refuses NUL (U+0000): a statement with it fails (SQLSTATE 22021) as if the database
 *   were down. SQLite stores it.
 * - A lone surrogate (half of a UTF-16 pair) is not Unicode: both drivers encode it to UTF-8 as U+FFFD, so
 *   `"a\uD800"` and `"a\uDBFF"` would be stored, and found, as the same text.
 * - A btree index entry of PostgreSQL holds at most about 2.7 KB; a longer indexed value fails the insert.
 *
 * Documents (a stored response's input items and Response object) need none of this: they are stored as JSON
 * text, where NUL and lone surrogates are escapes (`\u0000`, `\ud800`) and arrive back exactly as sent.
 *
 * @module
 */

/**
 * Longest id (in UTF-16 code units) a store looks up or indexes. The gateway's own ids are about 50 (`resp_`
 * and 48 hex digits), OpenAI's are of the same order; 256 units are at most 1 KB of UTF-8, well inside a
 * PostgreSQL index entry.
 */
export const MAX_ID_LENGTH = 256;

/**
 * Whether `id` can be stored, and so found, as it is in every store: a non-empty string of at most
 * {@linkcode MAX_ID_LENGTH} units, without NUL or a lone surrogate. An id that is not cannot name anything a
 * store holds, so a lookup of it is simply "not found", answered without asking the database.
 */
export function isStorableId(id: unknown): id is string {
  return typeof id === "string" && id.length > 0 && id.length <= MAX_ID_LENGTH && !id.includes("\u0000") &&
    id.isWellFormed();
}

/**
 * `text` as both databases store it alike: NUL and each lone surrogate replaced by U+FFFD. For fields that
 * are recorded, not answered back (a usage record's columns), where a NUL from anywhere (an upstream's error
 * code, say) would otherwise fail the whole batch of records on PostgreSQL, again at every retry.
 */
export function storableText(text: string): string {
  const whole = text.isWellFormed() ? text : text.toWellFormed();
  return whole.includes("\u0000") ? whole.replaceAll("\u0000", "\uFFFD") : whole;
}

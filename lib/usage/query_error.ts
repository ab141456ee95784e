/**
 * The error of a usage query the client got wrong, in a file of its own so that the query's parts
 * (`query.ts`, `group_page.ts`) can each throw it without importing each other.
 *
 * @module
 */

/** A bad filter or group key in a usage query; the admin API answers it with 400. */
export class UsageQueryError extends Error {
  /** `param` names the offending query parameter. */
  constructor(message: string, readonly param: string) {
    super(message);
    this.name = "UsageQueryError";
  }
}

/**
 * The one name the config refuses wherever it is written: `__proto__`. Each named section (`providers`,
 * `models`, `teams`, `guardrails`) is an object keyed by name, and zod, like any code that copies one, leaves
 * the key `__proto__` out (assigning it would set the copy's prototype): an alias, provider or team of that
 * name vanished without a word, so an alias with an unknown provider and a typo in it passed `check`, and a
 * target naming provider `__proto__` was told it did not exist, though the file defined it. As a key it is
 * refused by `yaml_tree.ts` (every mapping, every section); as a token's name, by the schema, so no name the
 * gateway keeps (a file's, or one the admin API issues) is the one a plain object mistakes. Only zod is
 * imported, so any schema module may take it.
 *
 * @module
 */
import type { z } from "zod";

/** JavaScript's name for an object's prototype. */
export const RESERVED_NAME = "__proto__";

/** Why {@linkcode RESERVED_NAME} is refused, as an issue says it. */
export const RESERVED_NAME_MESSAGE =
  `"${RESERVED_NAME}" cannot be a name or key (JavaScript's name for an object's prototype: the entry ` +
  "would be lost); choose another";

/** `schema`, refusing {@linkcode RESERVED_NAME}. */
export function unreservedName(schema: z.ZodString): z.ZodString {
  return schema.refine((name) => name !== RESERVED_NAME, RESERVED_NAME_MESSAGE);
}

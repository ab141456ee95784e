/**
 * What the cross-section checks report, shared by `semantic_checks.ts` and `policy_checks.ts` (which the
 * former runs), so neither has to import the other for it.
 *
 * @module
 */
import type { PathSegment } from "./interpolate.ts";

/** One problem found by a cross-section check, at a config path. */
export interface SemanticIssue {
  readonly path: readonly PathSegment[];
  readonly message: string;
}

/** At most this many names are listed in one message; the rest are counted. */
const MAX_LISTED = 10;

/** `a, b, c` or `a, b, … (5 more)`: a list of names from the file that stays one readable line. */
export function listNames(names: readonly string[]): string {
  const shown = names.slice(0, MAX_LISTED).join(", ");
  return names.length > MAX_LISTED ? `${shown}, … (${names.length - MAX_LISTED} more)` : shown;
}

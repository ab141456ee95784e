/**
 * The labels a usage report's groups say beside their keys ({@linkcode USAGE_GROUP_LABELS}: a `token_id`
 * group's `token`, a `team_id` group's `team`), as SQL for both stores: an aggregate over the group's records, never a key, so the groups,
 * their order and their pages stay the keys'.
 *
 * @module
 */
import { USAGE_GROUP_LABELS, type UsageGroupKey } from "./record.ts";
import type { SqlDialect } from "./sql_dialect.ts";

/** One label of a query's groups: its name (a key of the group's `key`), the key it names, its SELECT alias. */
export interface GroupLabel {
  name: UsageGroupKey;
  of: UsageGroupKey;
  alias: string;
}

/** The labels of the groups of `keys`, but none that is a key itself (its value is the key's), aliased `l0`, …. */
export function labelsOf(keys: readonly UsageGroupKey[]): GroupLabel[] {
  return keys.flatMap((of) => {
    const name = USAGE_GROUP_LABELS[of];
    return name === undefined || keys.includes(name) ? [] : [{ name, of }];
  }).map((label, i) => ({ ...label, alias: `l${i}` }));
}

/**
 * The SELECT terms (each ending in ", ") of the labels of `keys`: the greatest value by bytes, alike in both
 * stores, over the group's records; none for the group without a value of the key (no identity, no name).
 */
export function labelColumns(keys: readonly UsageGroupKey[], dialect: SqlDialect): string {
  return labelsOf(keys).map(({ name, of, alias }) => {
    const value = `(CASE WHEN ${dialect.groupExpr[of]} IS NOT NULL THEN ${dialect.groupExpr[name]} END)`;
    return `MAX(${dialect.bytewise(value)}) AS ${alias}, `;
  }).join("");
}

/**
 * Small, defensive readers for config data that may not have passed the schema: every accessor returns
 * `undefined` (or nothing to iterate) for a value of the wrong shape instead of throwing, so checks that run
 * on a broken file can look at whatever is well-formed and skip the rest, which the schema reports.
 *
 * Only own keys are read, so a key like `constructor` or `toString` never resolves to something inherited.
 *
 * @module
 */
import { isObject } from "../openai/types.ts";

/** A YAML mapping as plain data. */
export type RawRecord = Readonly<Record<string, unknown>>;

/** True for a mapping: {@linkcode isObject}, narrowed to a read-only view since config data is never written. */
export function isRecord(value: unknown): value is RawRecord {
  return isObject(value);
}

/** True when `record` has `key` as its own key. */
export function hasKey(record: RawRecord, key: string): boolean {
  return Object.hasOwn(record, key);
}

/** The value under `key` when `value` is a mapping with that own key; otherwise `undefined`. */
export function field(value: unknown, key: string): unknown {
  return isRecord(value) && hasKey(value, key) ? value[key] : undefined;
}

/** The string under `key`, or `undefined` when missing or not a string. */
export function stringField(value: unknown, key: string): string | undefined {
  const found = field(value, key);
  return typeof found === "string" ? found : undefined;
}

/** The mapping under `key`, or `undefined` when missing or not a mapping. */
export function recordField(value: unknown, key: string): RawRecord | undefined {
  const found = field(value, key);
  return isRecord(found) ? found : undefined;
}

/** The sequence under `key`, or `undefined` when missing or not a sequence. */
export function arrayField(value: unknown, key: string): readonly unknown[] | undefined {
  const found = field(value, key);
  return Array.isArray(found) ? found : undefined;
}

/** The entries of a mapping that may be missing. */
export function entriesOf(record: RawRecord | undefined): [string, unknown][] {
  return record === undefined ? [] : Object.entries(record);
}

/**
 * `/metrics` of a gateway served by several workers: each worker's registry rendered, then summed sample by
 * sample, so a scrape sees one gateway. Counters and histogram buckets add up exactly (a cumulative bucket
 * summed over workers is the cumulative bucket of the sum); the gauges the workers keep (streams open,
 * cache entries) are totals too, except a `*_up` health gauge several workers keep (each worker's own cache
 * store), which is up only where it is up on every worker. The primary's own gauges (the usage, token and
 * rate-limit stores up, tokens loaded) come from it alone; its `*_up` gauge of a store only the workers keep
 * (the cache: the primary has none, so its gauge says 0) is left out.
 *
 * @module
 */
import { formatValue } from "../metrics/registry.ts";

interface Family {
  readonly head: string[];
  readonly samples: Map<string, number>;
  /** A 0/1 health gauge (`*_up`): combined by its least value. */
  readonly up: boolean;
}

function parseValue(text: string): number {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  return Number(text);
}

/** The names of the `*_up` families `text` has. */
function upFamilies(text: string): Set<string> {
  const names = new Set<string>();
  for (const match of text.matchAll(/^# TYPE (\S+_up) /gm)) names.add(match[1]);
  return names;
}

/**
 * Sums the workers' expositions in the text format 0.0.4 sample by sample, with the primary's (`primary`);
 * families keep their first-seen order, the primary's first.
 */
export function sumExpositions(workers: readonly string[], primary = ""): string {
  const families = new Map<string, Family>();
  // The workers' health gauges: the primary's samples of these are of a store it does not keep.
  const theirs = new Set(workers.flatMap((text) => [...upFamilies(text)]));
  for (const [i, text] of [primary, ...workers].entries()) {
    let family: Family | undefined;
    let skip = false;
    for (const line of text.split("\n")) {
      if (line === "") continue;
      if (line.startsWith("# ")) {
        const name = line.split(" ", 3)[2];
        family = families.get(name);
        const fresh = family === undefined;
        if (fresh) families.set(name, family = { head: [], samples: new Map(), up: name.endsWith("_up") });
        // HELP and TYPE once per family, from the first exposition that has it.
        if (family!.head.length < 2 && !family!.head.includes(line)) family!.head.push(line);
        skip = i === 0 && theirs.has(name);
        continue;
      }
      if (family === undefined || skip) continue;
      const space = line.lastIndexOf(" ");
      const key = line.slice(0, space);
      const value = parseValue(line.slice(space + 1));
      const before = family.samples.get(key);
      // A 0/1 `*_up` gauge several workers keep (each its own cache store) is up only if it is up on all of
      // them: the least, not the sum (three workers would read 3, and one down among them still ≥ 1).
      const combined = before === undefined ? value : family.up ? Math.min(before, value) : before + value;
      family.samples.set(key, combined);
    }
  }
  const out: string[] = [];
  for (const family of families.values()) {
    out.push(...family.head);
    for (const [key, value] of family.samples) out.push(`${key} ${formatValue(value)}`);
  }
  return out.length === 0 ? "" : `${out.join("\n")}\n`;
}

/** The families of `text` whose samples only grow (counters, histograms, summaries), HELP and TYPE with them. */
export function cumulativeFamilies(text: string): string {
  const types = new Map<string, string>();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(match[1], match[2]);
  const kept = (name: string) => ["counter", "histogram", "summary"].includes(types.get(name) ?? "");
  const out: string[] = [];
  let keep = false;
  for (const line of text.split("\n")) {
    if (line === "") continue;
    if (line.startsWith("# ")) keep = kept(line.split(" ", 3)[2]);
    if (keep) out.push(line);
  }
  return out.length === 0 ? "" : `${out.join("\n")}\n`;
}

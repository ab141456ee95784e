/**
 * `/metrics` of a gateway served by several workers: each worker's registry rendered, then summed sample by
 * sample, so a scrape sees one gateway. Counters and histogram buckets add up exactly (a cumulative bucket
 * summed over workers is the cumulative bucket of the sum); the gauges the workers keep (streams open,
 * cache entries) are totals too. The primary's own gauges (store up, tokens loaded) come from it alone.
 *
 * @module
 */
import { formatValue } from "../metrics/registry.ts";

interface Family {
  readonly head: string[];
  readonly samples: Map<string, number>;
}

function parseValue(text: string): number {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  return Number(text);
}

/** Sums expositions in the text format 0.0.4 sample by sample; families keep their first-seen order. */
export function sumExpositions(texts: readonly string[]): string {
  const families = new Map<string, Family>();
  for (const text of texts) {
    let family: Family | undefined;
    for (const line of text.split("\n")) {
      if (line === "") continue;
      if (line.startsWith("# ")) {
        const name = line.split(" ", 3)[2];
        family = families.get(name);
        const fresh = family === undefined;
        if (fresh) families.set(name, family = { head: [], samples: new Map() });
        // HELP and TYPE once per family, from the first exposition that has it.
        if (family!.head.length < 2 && !family!.head.includes(line)) family!.head.push(line);
        continue;
      }
      if (family === undefined) continue;
      const space = line.lastIndexOf(" ");
      const key = line.slice(0, space);
      family.samples.set(key, (family.samples.get(key) ?? 0) + parseValue(line.slice(space + 1)));
    }
  }
  const out: string[] = [];
  for (const family of families.values()) {
    out.push(...family.head);
    for (const [key, value] of family.samples) out.push(`${key} ${formatValue(value)}`);
  }
  return out.length === 0 ? "" : `${out.join("\n")}\n`;
}

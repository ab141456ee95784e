/** Shared by the gateway metrics tests: reading /metrics text, summing its samples, a usage record. */
import parseRaw from "parse-prometheus-text-format";
import type { UsageRecord } from "../usage/record.ts";

/** What parse-prometheus-text-format returns (it ships no types). */
export interface ParsedFamily {
  name: string;
  help: string;
  type: string;
  metrics: { value?: string; labels?: Record<string, string> }[];
}
export const parse = parseRaw as (text: string) => ParsedFamily[];

export type Sample = { labels: Record<string, string>; value: number };

/**
 * Every sample line by sample name. The parser folds a labelled histogram's series into one, so the
 * comment lines are dropped first and each `_bucket`, `_sum` and `_count` is read as a family of its own.
 */
export function samplesOf(text: string): Map<string, Sample[]> {
  const bare = text.split("\n").filter((line) => !line.startsWith("#")).join("\n");
  const out = new Map<string, Sample[]>();
  for (const family of parse(bare)) {
    const list = out.get(family.name) ?? [];
    for (const s of family.metrics) list.push({ labels: s.labels ?? {}, value: Number(s.value) });
    out.set(family.name, list);
  }
  return out;
}

/** Sums the samples of `name` grouped by the given labels (joined with "|"). */
export function sumBy(samples: Map<string, Sample[]>, name: string, labels: string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samples.get(name) ?? []) {
    const key = labels.map((l) => s.labels[l] ?? "").join("|");
    out.set(key, (out.get(key) ?? 0) + s.value);
  }
  return out;
}

export function sorted(map: Map<string, number>): [string, number][] {
  return [...map].filter(([, v]) => v !== 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

export function record(overrides: Partial<UsageRecord>): UsageRecord {
  return {
    time: "2026-01-01T00:00:00.000Z",
    request_id: crypto.randomUUID(),
    token: "web",
    environment: "production",
    alias: "chat-default",
    provider: "local",
    upstream_model: "echo",
    endpoint: "chat",
    stream: false,
    status: 200,
    outcome: "allow",
    rule: null,
    prompt_tokens: 10,
    completion_tokens: 5,
    tokens_estimated: false,
    cost: 0.001,
    latency_ms: 120,
    ttft_ms: null,
    attempts: 1,
    error_code: null,
    ...overrides,
  };
}

/**
 * Time ranges of the overview and policy views, and how a range's usage groups become chart series: the
 * bucket (`group_by=minute|hour|day`) is chosen so a chart has between ~25 and ~170 points whatever the range,
 * which keeps a month of records as cheap to draw as an hour. Pure functions, unit-tested.
 *
 * @module
 */

/** A bucket the usage API groups by. */
export type Bucket = "minute" | "hour" | "day";

/** The ranges the "Time range" select offers. */
export const RANGES = {
  "1h": { label: "Last hour", ms: 3_600_000, bucket: "minute" },
  "24h": { label: "Last 24 hours", ms: 86_400_000, bucket: "hour" },
  "7d": { label: "Last 7 days", ms: 7 * 86_400_000, bucket: "hour" },
  "30d": { label: "Last 30 days", ms: 30 * 86_400_000, bucket: "day" },
} as const satisfies Record<string, { label: string; ms: number; bucket: Bucket }>;

export type RangeId = keyof typeof RANGES;

/** The range when none (or an unknown one) is asked for. */
export const DEFAULT_RANGE: RangeId = "24h";

const BUCKET_MS: Record<Bucket, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** `text` as a range id, else the default. */
export function rangeOf(text: string | null | undefined): RangeId {
  return text !== null && text !== undefined && Object.hasOwn(RANGES, text) ? text as RangeId : DEFAULT_RANGE;
}

/** A query window: `from` inclusive, `to` exclusive (ISO), and the bucket to group by. */
export interface RangeWindow {
  readonly from: string;
  readonly to: string;
  readonly bucket: Bucket;
  /** Start of every bucket in the window, in epoch milliseconds, oldest first. */
  readonly starts: readonly number[];
}

/**
 * The window of `range` ending now: from the start of the bucket `range` ago to the end of the current
 * bucket, so the first and last points are whole buckets and the current one is included.
 */
export function rangeWindow(range: RangeId, now: number): RangeWindow {
  const { ms, bucket } = RANGES[range];
  const size = BUCKET_MS[bucket];
  const end = Math.floor(now / size) * size + size;
  const start = Math.floor((now - ms) / size) * size;
  const starts: number[] = [];
  for (let t = start; t < end; t += size) starts.push(t);
  return { from: new Date(start).toISOString(), to: new Date(end).toISOString(), bucket, starts };
}

/**
 * A bucket key of the usage API (`2026-11-24T09:00:00Z`, `2026-11-24T09:05:00Z`, or a day `2026-11-24`) as
 * epoch milliseconds; NaN if it is not a time.
 */
export function bucketTime(key: string | null | undefined): number {
  if (key === null || key === undefined) return Number.NaN;
  return Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(key) ? `${key}T00:00:00Z` : key);
}

/** The totals of one group as the usage API answers them (the fields the charts read). */
export interface GroupTotals {
  readonly key: Readonly<Record<string, string | null>>;
  readonly requests: number;
  readonly total_tokens: number;
  readonly cost: number;
  readonly errors: number;
  readonly latency_ms: {
    readonly p50: number | null;
    readonly p90?: number | null;
    readonly p99: number | null;
  };
}

/** Chart series over a window: x in epoch seconds (uPlot's unit), one value per bucket. */
export interface Series {
  readonly x: number[];
  readonly requests: number[];
  readonly tokens: number[];
  readonly cost: number[];
  /** Errors per request, in percent; null where there were no requests. */
  readonly errorRate: (number | null)[];
  readonly p50: (number | null)[];
  readonly p99: (number | null)[];
  /** How many buckets have at least one request. */
  readonly points: number;
}

/** Lays `groups` (grouped by the window's bucket) on the window's buckets; empty buckets count zero. */
export function toSeries(groups: readonly GroupTotals[], window: RangeWindow): Series {
  const byTime = new Map<number, GroupTotals>();
  for (const group of groups) {
    const time = bucketTime(group.key[window.bucket]);
    if (!Number.isNaN(time)) byTime.set(time, group);
  }
  const series: Series = {
    x: [],
    requests: [],
    tokens: [],
    cost: [],
    errorRate: [],
    p50: [],
    p99: [],
    points: 0,
  };
  let points = 0;
  for (const start of window.starts) {
    const group = byTime.get(start);
    series.x.push(start / 1000);
    series.requests.push(group?.requests ?? 0);
    series.tokens.push(group?.total_tokens ?? 0);
    series.cost.push(group?.cost ?? 0);
    series.errorRate.push(group && group.requests > 0 ? (group.errors / group.requests) * 100 : null);
    series.p50.push(group?.latency_ms.p50 ?? null);
    series.p99.push(group?.latency_ms.p99 ?? null);
    if (group !== undefined && group.requests > 0) points++;
  }
  return { ...series, points };
}

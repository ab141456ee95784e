/**
 * A small metrics registry: counters, gauges and fixed-bucket histograms with labels, rendered in the
 * Prometheus text exposition format 0.0.4. Written on plain JavaScript only (no runtime APIs), so it runs
 * on Deno and Bun alike, and kept dependency-free because `/metrics` is on every scrape's path.
 *
 * Label values are passed positionally, in the order of the metric's label names, and looked up through
 * one `Map` per label level: an existing series is found without building a key string, so the per-request
 * hot path allocates nothing beyond the caller's values array (which is never retained: a new series copies
 * it, so callers may reuse one scratch array).
 *
 * @module
 */

/** The `Content-Type` of {@link Registry.render}'s output (text exposition format 0.0.4). */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** The label value that every label of a series takes once a metric has reached its `maxSeries`. */
export const OVERFLOW_LABEL_VALUE = "_OTHER";

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** A metric's label values, one string per label name, in the same order (checked at compile time). */
export type LabelValues<N extends readonly string[]> = { readonly [K in keyof N]: string };

/** Options common to every metric. */
export interface MetricOptions {
  /**
   * Most distinct label sets kept (default 10,000): past it, new label sets are folded into one series whose
   * labels are all {@link OVERFLOW_LABEL_VALUE}, so totals stay right while memory and scrape size stay
   * bounded even if a caller lets an unbounded value through.
   */
  maxSeries?: number;
}

/** Escapes a label value: backslash, double quote and line feed, as the text format requires. */
export function escapeLabelValue(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => c === "\\" ? "\\\\" : c === '"' ? '\\"' : "\\n");
}

/** Escapes HELP text: backslash and line feed (a double quote stays as is there). */
export function escapeHelp(text: string): string {
  return text.replace(/[\\\n]/g, (c) => c === "\\" ? "\\\\" : "\\n");
}

/** Formats a sample value the way Prometheus reads it back: `+Inf`, `-Inf`, `NaN`, else shortest decimal. */
export function formatValue(n: number): string {
  if (n === Infinity) return "+Inf";
  if (n === -Infinity) return "-Inf";
  if (Number.isNaN(n)) return "NaN";
  return String(n);
}

class Node<S> {
  children: Map<string, Node<S>> | undefined = undefined;
  series: S | undefined = undefined;
}

interface SeriesBase {
  readonly values: readonly string[];
  /** Pre-rendered, escaped `a="x",b="y"` (empty without labels), built once when the series is created. */
  readonly labelText: string;
}

/** What every metric kind shares: name, help, label names, and the label-set index. */
abstract class Metric<N extends readonly string[], S extends SeriesBase> {
  readonly #root = new Node<S>();
  readonly #all: S[] = [];
  readonly #maxSeries: number;

  /** The `# TYPE` keyword. */
  abstract readonly type: "counter" | "gauge" | "histogram";

  protected constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: N,
    options: MetricOptions,
    reserved: readonly string[],
  ) {
    if (!METRIC_NAME.test(name)) throw new TypeError(`invalid metric name: ${JSON.stringify(name)}`);
    const seen = new Set<string>();
    for (const label of labelNames) {
      if (!LABEL_NAME.test(label) || label.startsWith("__") || reserved.includes(label)) {
        throw new TypeError(`invalid label name for ${name}: ${JSON.stringify(label)}`);
      }
      if (seen.has(label)) throw new TypeError(`duplicate label name for ${name}: ${label}`);
      seen.add(label);
    }
    this.#maxSeries = options.maxSeries ?? 10_000;
    if (!(this.#maxSeries >= 1)) throw new RangeError(`maxSeries must be at least 1 for ${name}`);
    if (labelNames.length === 0) this.series([] as unknown as LabelValues<N>);
  }

  /** Builds the state of a new series. */
  protected abstract create(values: readonly string[], labelText: string): S;

  /** The series for `values`, created on first use (or the overflow series once `maxSeries` is reached). */
  protected series(values: LabelValues<N>): S {
    const names = this.labelNames;
    if (values.length !== names.length) {
      throw new TypeError(`${this.name} takes ${names.length} label values, got ${values.length}`);
    }
    let node = this.#root;
    for (let i = 0; i < values.length; i++) {
      const next = node.children?.get(values[i]);
      if (next === undefined) return this.#add(values);
      node = next;
    }
    return node.series ?? this.#add(values);
  }

  /** The series for `values` if it exists; never creates one (so reading a value adds no empty series). */
  protected find(values: LabelValues<N>): S | undefined {
    let node: Node<S> | undefined = this.#root;
    for (let i = 0; i < values.length && node !== undefined; i++) node = node.children?.get(values[i]);
    return node?.series;
  }

  #add(given: readonly string[]): S {
    for (const value of given) {
      if (typeof value !== "string") throw new TypeError(`${this.name}: label values must be strings`);
    }
    const values = this.#all.length < this.#maxSeries ? given : given.map(() => OVERFLOW_LABEL_VALUE);
    let node = this.#root;
    for (const value of values) {
      node.children ??= new Map();
      let next = node.children.get(value);
      if (next === undefined) node.children.set(value, next = new Node<S>());
      node = next;
    }
    if (node.series !== undefined) return node.series; // the overflow series, already there
    const copy = values.slice();
    const labelText = copy.map((v, i) => `${this.labelNames[i]}="${escapeLabelValue(v)}"`).join(",");
    const series = this.create(copy, labelText);
    node.series = series;
    this.#all.push(series);
    return series;
  }

  /** Every series, sorted by label values (code-unit order, so the output is the same on every runtime). */
  protected sorted(): S[] {
    return this.#all.slice().sort((a, b) => {
      for (let i = 0; i < a.values.length; i++) {
        if (a.values[i] !== b.values[i]) return a.values[i] < b.values[i] ? -1 : 1;
      }
      return 0;
    });
  }

  /** How many label sets this metric holds. */
  get seriesCount(): number {
    return this.#all.length;
  }

  /** The sample lines of this metric (without HELP and TYPE). */
  abstract renderSamples(out: string[]): void;
}

interface ValueSeries extends SeriesBase {
  value: number;
}

function sampleLine(name: string, labelText: string, value: number): string {
  return labelText === "" ? `${name} ${formatValue(value)}` : `${name}{${labelText}} ${formatValue(value)}`;
}

/** A monotonically increasing count (requests, tokens, cost); Prometheus derives rates from it. */
export class Counter<N extends readonly string[] = readonly string[]> extends Metric<N, ValueSeries> {
  readonly type = "counter";

  /** Use {@link Registry.counter}, which also checks that the name is unique. */
  constructor(name: string, help: string, labelNames: N, options: MetricOptions = {}) {
    super(name, help, labelNames, options, []);
  }

  protected create(values: readonly string[], labelText: string): ValueSeries {
    return { values, labelText, value: 0 };
  }

  /** Adds `by` (default 1); a negative or NaN amount is a bug in the caller and throws. */
  inc(values: LabelValues<N>, by = 1): void {
    if (!(by >= 0)) throw new RangeError(`${this.name}: a counter only goes up (got ${by})`);
    this.series(values).value += by;
  }

  /** The current value for `values` (0 if never incremented); for tests and admin views. */
  get(values: LabelValues<N>): number {
    return this.find(values)?.value ?? 0;
  }

  renderSamples(out: string[]): void {
    for (const s of this.sorted()) out.push(sampleLine(this.name, s.labelText, s.value));
  }
}

/** A value that goes up and down (streams in flight). */
export class Gauge<N extends readonly string[] = readonly string[]> extends Metric<N, ValueSeries> {
  readonly type = "gauge";

  /** Use {@link Registry.gauge}, which also checks that the name is unique. */
  constructor(name: string, help: string, labelNames: N, options: MetricOptions = {}) {
    super(name, help, labelNames, options, []);
  }

  protected create(values: readonly string[], labelText: string): ValueSeries {
    return { values, labelText, value: 0 };
  }

  /** Sets the value. */
  set(values: LabelValues<N>, value: number): void {
    this.series(values).value = value;
  }

  /** Adds `by` (default 1; may be negative). */
  inc(values: LabelValues<N>, by = 1): void {
    this.series(values).value += by;
  }

  /** Subtracts `by` (default 1). */
  dec(values: LabelValues<N>, by = 1): void {
    this.series(values).value -= by;
  }

  /** The current value for `values` (0 if never set). */
  get(values: LabelValues<N>): number {
    return this.find(values)?.value ?? 0;
  }

  renderSamples(out: string[]): void {
    for (const s of this.sorted()) out.push(sampleLine(this.name, s.labelText, s.value));
  }
}

interface HistogramSeries extends SeriesBase {
  /** Per-bucket counts, not cumulative (cumulated at render time); the last slot is +Inf. */
  readonly counts: number[];
  sum: number;
  count: number;
}

/** A distribution over fixed buckets (durations, token counts): `_bucket{le}` cumulative, `_sum`, `_count`. */
export class Histogram<N extends readonly string[] = readonly string[]> extends Metric<N, HistogramSeries> {
  readonly type = "histogram";
  /** Upper bounds, strictly increasing and finite; `+Inf` is implied. */
  readonly buckets: readonly number[];
  readonly #leText: readonly string[];

  /** Use {@link Registry.histogram}, which also checks that the name is unique. */
  constructor(
    name: string,
    help: string,
    labelNames: N,
    buckets: readonly number[],
    options: MetricOptions = {},
  ) {
    if (buckets.length === 0) throw new RangeError(`${name}: a histogram needs at least one bucket`);
    for (let i = 0; i < buckets.length; i++) {
      if (!Number.isFinite(buckets[i]) || (i > 0 && buckets[i] <= buckets[i - 1])) {
        throw new RangeError(`${name}: buckets must be finite and strictly increasing`);
      }
    }
    const bounds = buckets.slice();
    // The super call must come first for `this`; the zero-label series it creates reads `buckets` lazily.
    super(name, help, labelNames, options, ["le"]);
    this.buckets = bounds;
    this.#leText = [...bounds.map(formatValue), "+Inf"].map((le) => `le="${le}"`);
  }

  protected create(values: readonly string[], labelText: string): HistogramSeries {
    // Called from the base constructor for label-less histograms, before `buckets` is set: size lazily.
    return { values, labelText, counts: [], sum: 0, count: 0 };
  }

  /** Records one observation; NaN is a bug in the caller and throws. */
  observe(values: LabelValues<N>, value: number): void {
    if (Number.isNaN(value)) throw new RangeError(`${this.name}: cannot observe NaN`);
    const s = this.series(values);
    const bounds = this.buckets;
    let i = 0;
    while (i < bounds.length && value > bounds[i]) i++;
    const counts = s.counts;
    if (counts.length === 0) { for (let j = 0; j <= bounds.length; j++) counts.push(0); }
    counts[i]++;
    s.sum += value;
    s.count++;
  }

  /** The count and sum for `values` (zeros if never observed). */
  get(values: LabelValues<N>): { count: number; sum: number } {
    const s = this.find(values);
    return { count: s?.count ?? 0, sum: s?.sum ?? 0 };
  }

  renderSamples(out: string[]): void {
    const n = this.buckets.length;
    for (const s of this.sorted()) {
      const prefix = s.labelText === "" ? "" : `${s.labelText},`;
      let cumulative = 0;
      for (let i = 0; i <= n; i++) {
        cumulative += s.counts[i] ?? 0;
        out.push(`${this.name}_bucket{${prefix}${this.#leText[i]}} ${formatValue(cumulative)}`);
      }
      out.push(sampleLine(`${this.name}_sum`, s.labelText, s.sum));
      out.push(sampleLine(`${this.name}_count`, s.labelText, s.count));
    }
  }
}

type AnyMetric = Counter<readonly string[]> | Gauge<readonly string[]> | Histogram<readonly string[]>;

/**
 * Owns a set of metrics and renders them. Metrics render in registration order (related metrics stay
 * together), series sorted by label values, so two scrapes of the same state are byte-identical.
 */
export class Registry {
  readonly #metrics: AnyMetric[] = [];
  readonly #names = new Set<string>();

  #register<M extends AnyMetric>(metric: M): M {
    const names = metric.type === "histogram"
      ? [metric.name, `${metric.name}_bucket`, `${metric.name}_sum`, `${metric.name}_count`]
      : [metric.name];
    for (const n of names) {
      if (this.#names.has(n)) throw new TypeError(`metric name already registered: ${n}`);
    }
    for (const n of names) this.#names.add(n);
    this.#metrics.push(metric);
    return metric;
  }

  /** Registers a counter; by Prometheus convention its name ends in `_total`. */
  counter<const N extends readonly string[]>(
    name: string,
    help: string,
    labelNames: N,
    options?: MetricOptions,
  ): Counter<N> {
    return this.#register(new Counter(name, help, labelNames, options) as AnyMetric) as Counter<N>;
  }

  /** Registers a gauge. */
  gauge<const N extends readonly string[]>(
    name: string,
    help: string,
    labelNames: N,
    options?: MetricOptions,
  ): Gauge<N> {
    return this.#register(new Gauge(name, help, labelNames, options) as AnyMetric) as Gauge<N>;
  }

  /** Registers a histogram with the given bucket upper bounds (`+Inf` is added). */
  histogram<const N extends readonly string[]>(
    name: string,
    help: string,
    labelNames: N,
    buckets: readonly number[],
    options?: MetricOptions,
  ): Histogram<N> {
    return this.#register(new Histogram(name, help, labelNames, buckets, options) as AnyMetric) as Histogram<
      N
    >;
  }

  /**
   * The whole registry in the text exposition format 0.0.4 ({@link PROMETHEUS_CONTENT_TYPE}): per metric a
   * `# HELP` and a `# TYPE` line (also for a labelled metric with no series yet, so dashboards can discover
   * it), then its samples; every line ends with a line feed.
   */
  render(): string {
    const out: string[] = [];
    for (const m of this.#metrics) {
      out.push(`# HELP ${m.name} ${escapeHelp(m.help)}`, `# TYPE ${m.name} ${m.type}`);
      m.renderSamples(out);
    }
    return out.length === 0 ? "" : `${out.join("\n")}\n`;
  }
}

/**
 * `gateway prices [--model M] [--config FILE]`: the price catalog as the gateway would charge with it.
 * Without `--model`, every entry; with it, the entries that price model M (one per provider type at most,
 * the one a lookup would pick); with `--config` and an alias as M, each of the alias's targets and the price
 * it is charged at: its own `price:`, else the catalog's, else none (its usage then costs nothing in money
 * budgets).
 *
 * Also the `check` step for an operator's catalog, so `gateway check` refuses a malformed one with its lines.
 * Its own module so the command line (lib/cli.ts) stays a dispatcher.
 *
 * @module
 */
import { formatIssues, loadConfigFile, parseConfigText } from "../config/load.ts";
import type { PriceConfig } from "../config/schema.ts";
import type { ResolvedConfig } from "../config/types.ts";
import type { Runtime } from "../runtime/types.ts";
import {
  CATALOG_PROVIDERS,
  type CatalogEntry,
  type CatalogPrice,
  checkCatalogFile,
  defaultCatalog,
  lookupEntry,
  type PriceCatalog,
} from "./catalog.ts";

type Output = Pick<Runtime, "writeStdout" | "writeStderr">;

/** Options of {@linkcode runPricesCommand}, from the command line. */
export interface PricesCommandOptions {
  readonly model?: string;
  /** `--config`: the config whose aliases `--model` may name, and whose `pricing.catalog` is used. */
  readonly configPath?: string;
  /**
   * The config's text when it is no file (the single binary's compiled-in default, `configPath` then naming it
   * `<default>`): read as `check` and `serve` read it, so its aliases are known here too.
   */
  readonly configText?: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Reads a catalog file (tests pass their own). */
  readonly readText?: (path: string) => Promise<string>;
}

/** Runs `prices`; resolves to the exit code (1 when a file is invalid or nothing prices `--model`). */
export async function runPricesCommand(out: Output, options: PricesCommandOptions): Promise<number> {
  let config: ResolvedConfig | undefined;
  if (options.configPath !== undefined) {
    const loaded = options.configText === undefined
      ? await loadConfigFile(options.configPath, options.env)
      : parseConfigText(options.configText, { source: options.configPath, env: options.env });
    if (!loaded.ok) {
      out.writeStderr(
        `Invalid config ${options.configPath}:\n${formatIssues(options.configPath, loaded.issues)}\n`,
      );
      return 1;
    }
    config = loaded.config;
  }
  let catalog = defaultCatalog();
  const catalogPath = config === undefined ? undefined : configuredCatalogPath(config);
  if (catalogPath !== undefined) {
    const result = await checkCatalogFile(catalogPath, options.readText);
    if (!result.ok) {
      out.writeStderr(`Invalid price catalog ${catalogPath}:\n${formatIssues(catalogPath, result.issues)}\n`);
      return 1;
    }
    catalog = result.catalog;
  }
  const heading =
    `price catalog of ${catalog.date} (${catalog.entries.length} entries, ${catalog.currency} ` +
    `per million tokens)`;
  const model = options.model;
  if (model === undefined) {
    out.writeStdout(`${heading}\n${table(catalog.entries.map(entryRow))}`);
    return 0;
  }
  const alias = config?.models.get(model);
  if (alias !== undefined) {
    out.writeStdout(`${heading}\nalias ${model}: ${alias.targets.length} targets\n`);
    out.writeStdout(table(alias.targets.map((t) => targetRow(catalog, t)), TARGET_HEADER));
    return 0;
  }
  const matches = CATALOG_PROVIDERS.flatMap((p) => {
    const entry = lookupEntry(catalog, p, model);
    return entry === undefined ? [] : [entry];
  });
  if (matches.length === 0) {
    out.writeStderr(`No price for model ${model} in the price catalog of ${catalog.date}.\n`);
    return 1;
  }
  out.writeStdout(`${heading}\nmodel ${model}:\n${table(matches.map(entryRow))}`);
  for (const e of matches) {
    out.writeStdout(`  ${e.provider} ${e.model}: ${e.price.source} (checked ${e.price.checked})\n`);
  }
  return 0;
}

/**
 * The `check` step for `pricing.catalog`: validates the operator's catalog file, printing every issue as
 * `file:line: path: message`. True when there is none, or the config names no catalog.
 */
export async function checkConfiguredCatalog(
  out: Output,
  config: ResolvedConfig,
  readText?: (path: string) => Promise<string>,
): Promise<boolean> {
  const path = configuredCatalogPath(config);
  if (path === undefined) return true;
  const result = await checkCatalogFile(path, readText);
  if (!result.ok) {
    out.writeStderr(`Invalid price catalog ${path}:\n${formatIssues(path, result.issues)}\n`);
    return false;
  }
  out.writeStdout(
    `Price catalog ${path} is valid: ${result.catalog.entries.length} entries of ${result.catalog.date}.\n`,
  );
  return true;
}

/**
 * `pricing.catalog` of a resolved config, read structurally: the key lives in the config schema (`pricing`),
 * and whichever shape resolution gives it (`{ catalog }` or null), a string there is the path.
 */
export function configuredCatalogPath(config: ResolvedConfig): string | undefined {
  const pricing = (config as unknown as { readonly pricing?: unknown }).pricing;
  if (typeof pricing !== "object" || pricing === null || !("catalog" in pricing)) return undefined;
  const path = pricing.catalog;
  return typeof path === "string" && path !== "" ? path : undefined;
}

const HEADER = [
  "provider",
  "model",
  "input",
  "output",
  "cached",
  "write 5m",
  "write 1h",
  "reasoning",
  "search/1k",
  "long context",
];
const TARGET_HEADER = ["target", "type", "model", "charged at", ...HEADER.slice(2)];

/** A rate as written: no trailing zeros, no float noise. */
const num = (n: number | undefined): string => n === undefined ? "-" : String(Number(n.toFixed(6)));

function rates(price: {
  readonly input: number;
  readonly output?: number;
  readonly cached?: number;
  readonly write5m?: number;
  readonly write1h?: number;
  readonly reasoning?: number;
  /** Per 1,000 web searches. */
  readonly search?: number;
  readonly long?: {
    readonly above: number;
    readonly input: number;
    readonly output: number;
    readonly cached?: number;
  };
}): string[] {
  const long = price.long;
  return [
    num(price.input),
    num(price.output),
    num(price.cached),
    num(price.write5m),
    num(price.write1h),
    num(price.reasoning),
    num(price.search),
    long === undefined ? "-" : `>${long.above}: ${num(long.input)}/${num(long.output)}` +
      (long.cached === undefined ? "" : ` cached ${num(long.cached)}`),
  ];
}

function catalogRates(p: CatalogPrice): string[] {
  const lc = p.longContext;
  return rates({
    input: p.input,
    output: p.kind === "embedding" ? undefined : p.output,
    cached: p.cachedInput,
    write5m: p.cacheWrite5m,
    write1h: p.cacheWrite1h,
    reasoning: p.reasoning,
    search: p.webSearchPer1k,
    long: lc === undefined
      ? undefined
      : { above: lc.above, input: lc.input, output: lc.output, cached: lc.cachedInput },
  });
}

function ownRates(p: PriceConfig): string[] {
  const lc = p.long_context;
  return rates({
    input: p.input,
    output: p.output,
    cached: p.cached_input,
    write5m: p.cache_write_5m,
    write1h: p.cache_write_1h,
    reasoning: p.reasoning,
    search: p.web_search_per_1k,
    long: lc === undefined
      ? undefined
      : { above: lc.above, input: lc.input, output: lc.output, cached: lc.cached_input },
  });
}

function entryRow(e: CatalogEntry): string[] {
  return [
    e.provider,
    e.model + (e.price.kind === "embedding" ? " (embedding)" : ""),
    ...catalogRates(e.price),
  ];
}

function targetRow(
  catalog: PriceCatalog,
  t: {
    readonly provider: string;
    readonly providerConfig: { readonly type: string };
    readonly model: string;
    readonly price: PriceConfig | null;
    readonly priceFrom?: "config" | "catalog";
  },
): string[] {
  const head = [t.provider, t.providerConfig.type, t.model];
  if (t.price !== null && t.priceFrom !== "catalog") return [...head, "own price", ...ownRates(t.price)];
  const entry = lookupEntry(catalog, t.providerConfig.type, t.model);
  if (entry === undefined) return [...head, "no price", ...HEADER.slice(2).map(() => "-")];
  return [...head, `catalog ${entry.model}`, ...catalogRates(entry.price)];
}

/** Left-aligned columns, two spaces apart, header first. */
function table(rows: readonly string[][], header: readonly string[] = HEADER): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? "").length)));
  return all.map((r) => r.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd()).join("\n") + "\n";
}

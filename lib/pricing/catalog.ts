/**
 * The price catalog: what each upstream model costs per million tokens, by provider type, so a target without
 * a `price:` of its own is still charged. One is shipped with the gateway (edited as `catalog.yaml`, loaded from
 * its compiled form `catalog.json`, part of the program, so a single binary has it too: see catalog_build.ts);
 * an operator may point `pricing.catalog:` at a file of the same format, which is checked like the config:
 * every issue with its dotted path and line.
 *
 * Entries are matched by exact model id first, then by `*` patterns (dated snapshots, Bedrock profile
 * prefixes, Azure deployments named after the model), the longest pattern winning: a more specific pattern is
 * the one its author meant for that model (`gpt-4o-mini*` over `gpt-4o*`).
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { LineCounter, parseDocument } from "yaml";
import { z } from "zod";
import type { PathSegment } from "../config/interpolate.ts";
import { fromZod, yamlIssues } from "../config/issue_messages.ts";
import { readFailure } from "../config/read_failure.ts";
import type { ConfigIssue } from "../config/types.ts";
import { inspectDocument, toPlainData } from "../config/yaml_tree.ts";
import type { TokenPrices } from "./cost.ts";
import compiledCatalog from "./catalog.json" with { type: "json" };
/** The source name of the built-in catalog, in messages. */
export const BUILTIN_CATALOG_SOURCE = "<built-in price catalog>";
/** Largest catalog file read: the shipped one is about 15 KB; a thousand entries stay far below. */
export const MAX_CATALOG_BYTES = 4 * 1024 * 1024;

/** The provider types a catalog prices (the config's, less `builtin`, which costs nothing). */
export const CATALOG_PROVIDERS = ["openai", "azure", "anthropic", "gemini", "bedrock"] as const;
export type CatalogProvider = (typeof CATALOG_PROVIDERS)[number];

const rate = z.number().nonnegative();

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const isoDate = z.string().regex(DATE, "expected a date YYYY-MM-DD").refine((s) => {
  if (!DATE.test(s)) return true; // the pattern's own issue says so
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(s);
}, "not a calendar date");

const entrySchema = z.strictObject({
  provider: z.enum(CATALOG_PROVIDERS),
  /** The upstream model id, or a pattern where `*` matches any run of characters. */
  model: z.string().min(1),
  /** Where the prices were read: a web address. */
  source: z.string().regex(/^https?:\/\/\S+$/, "expected the http(s) address the prices were read from"),
  /** When they were read (or the date the source states). */
  checked: isoDate,
  kind: z.enum(["chat", "embedding"]).default("chat"),
  input: rate,
  output: rate.optional(),
  cached_input: rate.optional(),
  cache_write_5m: rate.optional(),
  cache_write_1h: rate.optional(),
  reasoning: rate.optional(),
  /** Per 1,000 web searches (the vendors' unit for them), not per million tokens. */
  web_search_per_1k: rate.optional(),
  long_context: z.strictObject({
    /** Prompt tokens above which the tier's rates apply to the whole request. */
    above: z.number().int().positive(),
    input: rate,
    output: rate,
    cached_input: rate.optional(),
  }).optional(),
}).superRefine((entry, ctx) => {
  if (entry.kind === "chat" && entry.output === undefined) {
    ctx.addIssue({ code: "custom", path: ["output"], message: 'missing required key "output"' });
  }
  if (entry.kind === "embedding") {
    for (
      const key of [
        "output",
        "cached_input",
        "cache_write_5m",
        "cache_write_1h",
        "reasoning",
        "web_search_per_1k",
      ] as const
    ) {
      if (entry[key] !== undefined) {
        ctx.addIssue({ code: "custom", path: [key], message: "an embedding entry has an input price only" });
      }
    }
    if (entry.long_context !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["long_context"],
        message: "an embedding entry has an input price only",
      });
    }
  }
});

/** The whole catalog file. */
export const catalogSchema = z.strictObject({
  date: isoDate,
  currency: z.literal("USD"),
  unit: z.literal("per_million_tokens"),
  models: z.array(entrySchema),
}).superRefine((catalog, ctx) => {
  const seen = new Set<string>();
  catalog.models.forEach((entry, i) => {
    const key = `${entry.provider}\u0000${entry.model}`;
    if (seen.has(key)) {
      ctx.addIssue({
        code: "custom",
        path: ["models", i, "model"],
        message: `${entry.provider} model "${entry.model}" is listed twice`,
      });
    }
    seen.add(key);
  });
});

export { type PricingConfig, pricingSchema } from "./schema.ts";

/** An entry's prices, per million tokens. */
export interface CatalogPrice {
  readonly input: number;
  /** 0 for an embedding entry. */
  readonly output: number;
  readonly cachedInput?: number;
  readonly cacheWrite5m?: number;
  readonly cacheWrite1h?: number;
  readonly reasoning?: number;
  /** Per 1,000 web searches. */
  readonly webSearchPer1k?: number;
  readonly longContext?: {
    readonly above: number;
    readonly input: number;
    readonly output: number;
    readonly cachedInput?: number;
  };
  readonly kind: "chat" | "embedding";
  readonly source: string;
  readonly checked: string;
}

/** One line of the catalog. */
export interface CatalogEntry {
  readonly provider: CatalogProvider;
  /** An exact model id, or a pattern with `*`. */
  readonly model: string;
  readonly price: CatalogPrice;
}

/** A validated catalog. Plain data (it survives `structuredClone`). */
export interface PriceCatalog {
  readonly date: string;
  readonly currency: "USD";
  readonly unit: "per_million_tokens";
  /** Where it came from: a path, or {@linkcode BUILTIN_CATALOG_SOURCE}. */
  readonly source: string;
  readonly entries: readonly CatalogEntry[];
}

/** The outcome of {@linkcode parseCatalog}: the catalog, or every issue with its path and line. */
export type CatalogResult =
  | { readonly ok: true; readonly catalog: PriceCatalog }
  | { readonly ok: false; readonly issues: readonly ConfigIssue[] };

/**
 * Parses and validates catalog text. Pure and synchronous; never throws. The YAML goes through the config's
 * own safety walk (alias bombs, cycles, duplicate keys) and issue wording, so a catalog is checked exactly as
 * strictly as a config and its issues read the same.
 */
export function parseCatalog(text: string, source: string): CatalogResult {
  if (text.length > MAX_CATALOG_BYTES) {
    return { ok: false, issues: [{ path: "", message: `price catalog is larger than 4 MiB; not parsed` }] };
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, merge: true, uniqueKeys: false });
  const lineAt = (offset: number): number => lineCounter.linePos(offset).line;
  if (doc.errors.length > 0 || doc.warnings.length > 0) return { ok: false, issues: yamlIssues(doc, lineAt) };
  const tree = inspectDocument(doc, lineAt);
  if (tree.issues.length > 0) return { ok: false, issues: tree.issues };
  const parsed = catalogSchema.safeParse(toPlainData(doc, tree));
  if (!parsed.success) {
    const issues = parsed.error.issues.flatMap((issue) => fromZod(issue, [])).map((issue) => {
      const path = issue.path.join(".");
      const message = issue.path.length === 0
        ? "the price catalog must be a YAML mapping with date, currency, unit and models"
        : issue.message;
      const line = locate(tree.lines, issue.path);
      return line === undefined ? { path, message } : { path, line, message };
    });
    issues.sort((a, b) => (a.line ?? Infinity) - (b.line ?? Infinity));
    return { ok: false, issues };
  }
  const data = parsed.data;
  return {
    ok: true,
    catalog: {
      date: data.date,
      currency: data.currency,
      unit: data.unit,
      source,
      entries: data.models.map((e) => ({ provider: e.provider, model: e.model, price: priceOf(e) })),
    },
  };
}

type ParsedEntry = z.output<typeof entrySchema>;

function priceOf(e: ParsedEntry): CatalogPrice {
  const lc = e.long_context;
  return {
    input: e.input,
    output: e.output ?? 0,
    ...(e.cached_input !== undefined ? { cachedInput: e.cached_input } : {}),
    ...(e.cache_write_5m !== undefined ? { cacheWrite5m: e.cache_write_5m } : {}),
    ...(e.cache_write_1h !== undefined ? { cacheWrite1h: e.cache_write_1h } : {}),
    ...(e.reasoning !== undefined ? { reasoning: e.reasoning } : {}),
    ...(e.web_search_per_1k !== undefined ? { webSearchPer1k: e.web_search_per_1k } : {}),
    ...(lc !== undefined
      ? {
        longContext: {
          above: lc.above,
          input: lc.input,
          output: lc.output,
          ...(lc.cached_input !== undefined ? { cachedInput: lc.cached_input } : {}),
        },
      }
      : {}),
    kind: e.kind,
    source: e.source,
    checked: e.checked,
  };
}

/** The line of the deepest node on `path` that exists in the file (a missing key points at its parent). */
function locate(lines: ReadonlyMap<string, number>, path: readonly PathSegment[]): number | undefined {
  for (let n = path.length; n >= 0; n--) {
    const line = lines.get(path.slice(0, n).join("."));
    if (line !== undefined) return line;
  }
  return undefined;
}

/**
 * The catalog shipped with the program: `catalog.yaml` as catalog_build.ts validated and compiled it (the
 * tests hold the two equal), so nothing is parsed at start-up.
 */
const BUILTIN: PriceCatalog = {
  ...(compiledCatalog as Omit<PriceCatalog, "source">),
  source: BUILTIN_CATALOG_SOURCE,
};

/** The built-in catalog. */
export function defaultCatalog(): PriceCatalog {
  return BUILTIN;
}

/**
 * Reads and validates an operator's catalog file. An unreadable or oversized file is one issue, never a
 * throw, so `check` reports it like any other mistake. `readText` is the reader (tests pass their own).
 */
export async function checkCatalogFile(
  path: string,
  readText: (path: string) => Promise<string> = (p) => readFile(p, "utf8"),
): Promise<CatalogResult> {
  let text: string;
  try {
    text = await readText(path);
  } catch (err) {
    return {
      ok: false,
      issues: [{ path: "", message: `cannot read price catalog${readFailure(err, "the catalog")}` }],
    };
  }
  return parseCatalog(text, path);
}

/** Compiled patterns and the exact-id index of a catalog, built once per catalog. */
interface CatalogIndex {
  readonly exact: ReadonlyMap<string, CatalogEntry>;
  /** Longest pattern first; among equals, file order. */
  readonly patterns: readonly { readonly entry: CatalogEntry; readonly regex: RegExp }[];
}

const indexes = new WeakMap<PriceCatalog, CatalogIndex>();

function indexOf(catalog: PriceCatalog): CatalogIndex {
  let index = indexes.get(catalog);
  if (index !== undefined) return index;
  const exact = new Map<string, CatalogEntry>();
  const patterns: { entry: CatalogEntry; regex: RegExp }[] = [];
  for (const entry of catalog.entries) {
    const key = `${entry.provider}\u0000${entry.model}`;
    if (!entry.model.includes("*")) {
      if (!exact.has(key)) exact.set(key, entry);
      continue;
    }
    const body = entry.model.split("*").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*");
    patterns.push({ entry, regex: new RegExp(`^${body}$`, "s") });
  }
  // A stable sort keeps file order among patterns of one length.
  patterns.sort((a, b) => b.entry.model.length - a.entry.model.length);
  indexes.set(catalog, index = { exact, patterns });
  return index;
}

/**
 * A Bedrock ARN: partition, region, account, resource type, resource id. Bedrock accepts an ARN wherever it
 * takes a model id, and the catalog's patterns are anchored, so an ARN is looked up as the id it names.
 */
const BEDROCK_ARN = /^arn:aws[a-z-]*:bedrock:[^:]*:[^:]*:([a-z-]+)\/(.+)$/s;

/**
 * The id a Bedrock model string is priced as: itself, or what an ARN names. A foundation-model or (system)
 * inference-profile ARN ends in the model or profile id (`global.anthropic.…`, `us.anthropic.…`), billed as
 * that id. Any other ARN (an application inference profile, whose id is random and whose model is known only
 * to AWS; a provisioned or custom model, billed by the hour) names no on-demand model: undefined, so such a
 * target is unpriced unless the catalog lists its ARN exactly or the target has a `price:` of its own.
 */
function bedrockPricedId(model: string): string | undefined {
  const arn = BEDROCK_ARN.exec(model);
  if (arn === null) return model;
  return arn[1] === "foundation-model" || arn[1] === "inference-profile" ? arn[2] : undefined;
}

/**
 * The catalog entry for an upstream model of a provider type: exact id first, then the longest pattern. A
 * Bedrock ARN is priced as the model or inference profile it names (see {@linkcode bedrockPricedId}).
 */
export function lookupEntry(
  catalog: PriceCatalog,
  providerType: string,
  model: string,
): CatalogEntry | undefined {
  const index = indexOf(catalog);
  const exact = index.exact.get(`${providerType}\u0000${model}`);
  if (exact !== undefined) return exact;
  const id = providerType === "bedrock" ? bedrockPricedId(model) : model;
  if (id === undefined) return undefined;
  if (id !== model) {
    const named = index.exact.get(`${providerType}\u0000${id}`);
    if (named !== undefined) return named;
  }
  return index.patterns.find((p) => p.entry.provider === providerType && p.regex.test(id))?.entry;
}

/** The price of an upstream model of a provider type, or undefined when the catalog has none. */
export function lookupPrice(
  catalog: PriceCatalog,
  providerType: string,
  model: string,
): CatalogPrice | undefined {
  return lookupEntry(catalog, providerType, model)?.price;
}

/** A catalog price in the shape the cost arithmetic takes (lib/pricing/cost.ts). */
export function toTokenPrices(price: CatalogPrice): TokenPrices {
  const lc = price.longContext;
  return {
    input: price.input,
    output: price.output,
    ...(price.cachedInput !== undefined ? { cached_input: price.cachedInput } : {}),
    ...(price.cacheWrite5m !== undefined ? { cache_write_5m: price.cacheWrite5m } : {}),
    ...(price.cacheWrite1h !== undefined ? { cache_write_1h: price.cacheWrite1h } : {}),
    ...(price.reasoning !== undefined ? { reasoning: price.reasoning } : {}),
    ...(price.webSearchPer1k !== undefined ? { web_search_per_1k: price.webSearchPer1k } : {}),
    ...(lc !== undefined
      ? {
        long_context: {
          above: lc.above,
          input: lc.input,
          output: lc.output,
          ...(lc.cachedInput !== undefined ? { cached_input: lc.cachedInput } : {}),
        },
      }
      : {}),
  };
}

/**
 * The price catalog: the shipped one is valid and covers every vendor; lookups pick the exact id, then the
 * longest pattern, per provider type; a malformed catalog is refused with each issue's path and line.
 */
import assert from "node:assert/strict";
import {
  CATALOG_PROVIDERS,
  checkCatalogFile,
  defaultCatalog,
  lookupEntry,
  lookupPrice,
  parseCatalog,
  pricingSchema,
  toTokenPrices,
} from "./catalog.ts";
import { CATALOG_JSON_URL, compileCatalog } from "./catalog_build.ts";
import { costOfUsage } from "./cost.ts";

const HEAD = "date: 2026-11-29\ncurrency: USD\nunit: per_million_tokens\nmodels:\n";
const SRC = "https://example.com/pricing";

function catalogOf(entries: string): string {
  return HEAD + entries;
}

function issuesOf(text: string) {
  const result = parseCatalog(text, "test.yaml");
  assert.ok(!result.ok, "expected the catalog to be refused");
  return result.issues;
}

Deno.test("catalog: the built-in catalog parses, is dated, and prices every provider type", () => {
  const catalog = defaultCatalog();
  assert.match(catalog.date, /^\d{4}-\d{2}-\d{2}$/);
  assert.equal(catalog.currency, "USD");
  assert.ok(catalog.entries.length >= 30, `only ${catalog.entries.length} entries`);
  for (const provider of CATALOG_PROVIDERS) {
    assert.ok(catalog.entries.some((e) => e.provider === provider), `no ${provider} entry`);
  }
  for (const e of catalog.entries) {
    assert.match(e.price.source, /^https?:\/\//, `${e.provider} ${e.model} has no source`);
    assert.ok(e.price.checked <= catalog.date, `${e.provider} ${e.model} checked after the catalog's date`);
  }
  assert.ok(catalog.entries.some((e) => e.price.kind === "embedding"), "no embedding entry");
  assert.ok(catalog.entries.some((e) => e.price.longContext !== undefined), "no long-context tier");
  assert.ok(catalog.entries.some((e) => e.price.cacheWrite1h !== undefined), "no 1-hour cache write");
});

Deno.test("catalog: the compiled catalog the program loads is catalog.yaml as it stands (else: deno task catalog)", async () => {
  const yaml = await Deno.readTextFile(new URL("./catalog.yaml", import.meta.url));
  const compiled = compileCatalog(yaml);
  assert.equal(
    await Deno.readTextFile(CATALOG_JSON_URL),
    compiled,
    "catalog.json is stale: run `deno task catalog`",
  );
  const parsed = parseCatalog(yaml, "<built-in price catalog>");
  assert.ok(parsed.ok);
  assert.deepEqual(defaultCatalog(), parsed.catalog);
  // A price changed in the YAML alone is caught.
  assert.notEqual(compileCatalog(yaml.replace("input: 5\n", "input: 6\n")), compiled);
});

Deno.test("catalog: the shipped prices of a few well-known models", () => {
  const catalog = defaultCatalog();
  const mini = lookupPrice(catalog, "openai", "gpt-4o-mini");
  assert.equal(mini?.input, 0.15);
  assert.equal(mini?.output, 0.6);
  assert.equal(mini?.cachedInput, 0.075);
  const pro = lookupPrice(catalog, "gemini", "gemini-2.5-pro");
  assert.deepEqual(pro?.longContext, { above: 200_000, input: 2.5, output: 15, cachedInput: 0.25 });
  const haiku = lookupPrice(catalog, "anthropic", "claude-haiku-4-5-20251001");
  assert.equal(haiku?.cacheWrite5m, 1.25);
  assert.equal(haiku?.cacheWrite1h, 2);
  assert.equal(haiku?.cachedInput, 0.1);
  assert.equal(lookupPrice(catalog, "openai", "text-embedding-3-small")?.kind, "embedding");
});

Deno.test("catalog: long-context tiers price cache reads and writes as a share of the tier's input, as the vendors do", () => {
  const catalog = defaultCatalog();
  // Sonnet 4 over 200K: $6 input, and Anthropic's caching multipliers on top (0.1×, 1.25×, 2×).
  const sonnet = lookupPrice(catalog, "anthropic", "claude-sonnet-4-20250514")!;
  const cost = costOfUsage(toTokenPrices(sonnet), {
    prompt: 1_000_000,
    completion: 0,
    cachedRead: 300_000,
    cacheWrite5m: 300_000,
    cacheWrite1h: 300_000,
  });
  assert.equal(Math.round(cost.cached * 1e6), Math.round(0.3 * 0.6 * 1e6));
  assert.equal(Math.round(cost.cacheWrite * 1e6), Math.round(0.3 * (7.5 + 12) * 1e6));
  // Where a tier gives its own cached rate, it is the same share of the tier's input as the base's.
  for (const entry of catalog.entries) {
    const { input, cachedInput, longContext: tier } = entry.price;
    if (tier?.cachedInput === undefined || cachedInput === undefined) continue;
    assert.ok(Math.abs(tier.cachedInput - cachedInput * tier.input / input) < 1e-9, entry.model);
  }
});

Deno.test("catalog: exact ids beat patterns, the longest pattern wins, and provider types stay apart", () => {
  const catalog = defaultCatalog();
  // A dated snapshot: both gpt-4o* and gpt-4o-mini* match; the longer one is meant.
  assert.equal(lookupEntry(catalog, "openai", "gpt-4o-mini-2024-07-18")?.model, "gpt-4o-mini*");
  assert.equal(lookupEntry(catalog, "openai", "gpt-4o-2024-08-06")?.model, "gpt-4o*");
  assert.equal(lookupEntry(catalog, "openai", "o3")?.model, "o3");
  assert.equal(lookupEntry(catalog, "openai", "o3-2025-04-16")?.model, "o3-20*");
  assert.equal(lookupEntry(catalog, "openai", "o3-pro"), undefined);
  // Bedrock: the global profile at list price, a regional one 10% above.
  assert.equal(lookupPrice(catalog, "bedrock", "global.anthropic.claude-sonnet-4-6")?.input, 3);
  assert.equal(lookupPrice(catalog, "bedrock", "us.anthropic.claude-sonnet-4-6")?.input, 3.3);
  // The same model id under another provider type is that type's entry, or none.
  assert.equal(lookupEntry(catalog, "azure", "gpt-4.1-nano")?.provider, "azure");
  assert.equal(lookupPrice(catalog, "anthropic", "gpt-4o"), undefined);
  assert.equal(lookupPrice(catalog, "builtin", "echo"), undefined);

  const own = parseCatalog(
    catalogOf(`  - { provider: openai, model: "m*", source: ${SRC}, checked: 2026-01-01, input: 1, output: 1 }
  - { provider: openai, model: "m-long*", source: ${SRC}, checked: 2026-01-01, input: 2, output: 2 }
  - { provider: openai, model: "m-long-exact", source: ${SRC}, checked: 2026-01-01, input: 3, output: 3 }
  - { provider: openai, model: "*-long-*", source: ${SRC}, checked: 2026-01-01, input: 4, output: 4 }
  - { provider: openai, model: "a.b", source: ${SRC}, checked: 2026-01-01, input: 5, output: 5 }
`),
    "own.yaml",
  );
  assert.ok(own.ok);
  assert.equal(lookupPrice(own.catalog, "openai", "m-long-exact")?.input, 3);
  assert.equal(lookupPrice(own.catalog, "openai", "m-longer")?.input, 2);
  // Both m-long* and *-long-* match; the longer pattern is the more specific.
  assert.equal(lookupPrice(own.catalog, "openai", "m-long-exactly")?.input, 4);
  assert.equal(lookupPrice(own.catalog, "openai", "m-short")?.input, 1);
  assert.equal(lookupPrice(own.catalog, "openai", "x-long-y")?.input, 4);
  // `.` is a plain character, not a regular-expression wildcard.
  assert.equal(lookupPrice(own.catalog, "openai", "aXb"), undefined);
});

Deno.test("catalog: a Bedrock ARN is priced as the model or inference profile it names", () => {
  const catalog = defaultCatalog();
  const id = "global.anthropic.claude-sonnet-4-5-20250929-v1:0";
  const profile = `arn:aws:bedrock:us-east-1:123456789012:inference-profile/${id}`;
  // The global profile's ARN at the global (list) price, not the regional pattern's +10%.
  assert.equal(lookupEntry(catalog, "bedrock", profile)?.model, lookupEntry(catalog, "bedrock", id)?.model);
  assert.equal(lookupPrice(catalog, "bedrock", profile)?.input, 3);
  const regional =
    "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-sonnet-4-5-v1:0";
  assert.equal(lookupPrice(catalog, "bedrock", regional)?.input, 3.3);
  const foundation = "arn:aws-us-gov:bedrock:us-gov-west-1::foundation-model/anthropic.claude-haiku-4-5-v1:0";
  assert.equal(lookupPrice(catalog, "bedrock", foundation)?.input, 1.1);
  // An application inference profile's id names no model; nor does a provisioned model's: no catalog price.
  const app = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6";
  assert.equal(lookupEntry(catalog, "bedrock", app), undefined);
  const custom = "arn:aws:bedrock:us-east-1:123456789012:custom-model/anthropic.claude-haiku-4-5-v1:0/x1y2";
  assert.equal(lookupEntry(catalog, "bedrock", custom), undefined);
  // An operator's catalog may still price an ARN by its exact text.
  const own = parseCatalog(
    catalogOf(
      `  - { provider: bedrock, model: "${app}", source: ${SRC}, checked: 2026-01-01, input: 7, output: 7 }
  - { provider: bedrock, model: "${id}", source: ${SRC}, checked: 2026-01-01, input: 8, output: 8 }
`,
    ),
    "own.yaml",
  );
  assert.ok(own.ok);
  assert.equal(lookupPrice(own.catalog, "bedrock", app)?.input, 7);
  assert.equal(lookupPrice(own.catalog, "bedrock", profile)?.input, 8);
  // An ARN is a Bedrock form only: another provider type's model string is looked up as it is.
  assert.equal(
    lookupEntry(catalog, "openai", `arn:aws:bedrock:us-east-1::foundation-model/gpt-4o`),
    undefined,
  );
});

Deno.test("catalog: Bedrock's 1-hour cache writes on Haiku 4.5 cost 2x input, not the 5-minute 1.25x", () => {
  const catalog = defaultCatalog();
  const write1h = { prompt: 1_000_000, completion: 0, cacheWrite1h: 1_000_000 };
  for (
    const [model, dollars] of [
      ["global.anthropic.claude-haiku-4-5-20251001-v1:0", 2],
      ["us.anthropic.claude-haiku-4-5-20251001-v1:0", 2.2],
      ["anthropic.claude-haiku-4-5-20251001-v1:0", 2.2],
    ] as const
  ) {
    const price = lookupPrice(catalog, "bedrock", model)!;
    const cost = costOfUsage(toTokenPrices(price), write1h).cacheWrite;
    assert.ok(Math.abs(cost - dollars) < 1e-9, `${model}: $${cost}`);
    assert.ok(Math.abs(cost - 2 * price.input) < 1e-9, model);
  }
});

Deno.test("catalog: GPT-5 nano's cache hits cost its cached-input rate, a tenth of input", () => {
  // OpenAI's model page: input $0.05, cached input $0.005, output $0.40 per million tokens.
  const nano = lookupPrice(defaultCatalog(), "openai", "gpt-5-nano-2025-08-07")!;
  const cost = costOfUsage(toTokenPrices(nano), { prompt: 1_000_000, completion: 0, cachedRead: 1_000_000 });
  assert.ok(Math.abs(cost.cached - 0.005) < 1e-12, `$${cost.cached}`);
});

Deno.test("catalog: a malformed catalog is refused, each issue with its path and line", () => {
  const badYaml = issuesOf(catalogOf(`  - { provider: openai, model: x, source: ${SRC}\n`));
  assert.ok(badYaml.some((i) => (i.line ?? 0) >= 5 && /^YAML/.test(i.message)), JSON.stringify(badYaml));

  const text = catalogOf(`  - provider: openai
    model: ok
    source: ${SRC}
    checked: 2026-01-01
    input: 1
    output: 2
  - provider: openai
    model: negative
    source: ${SRC}
    checked: 2026-01-01
    input: -1
    output: 2
  - provider: anthropic
    model: typo
    source: ${SRC}
    checked: 2026-01-01
    input: 1
    outptu: 2
    output: 2
  - provider: gemini
    model: unsourced
    checked: 2026-01-01
    input: 1
    output: 2
  - provider: openai
    model: embed
    kind: embedding
    source: ${SRC}
    checked: 2026-01-01
    input: 1
    output: 1
  - provider: mistral
    model: ok
    source: not-a-url
    checked: 2026-02-30
    input: 1
    output: 1
`);
  const issues = issuesOf(text);
  const at = (path: string) => issues.find((i) => i.path === path);
  assert.equal(at("models.1.input")?.line, 15);
  assert.match(at("models.1.input")?.message ?? "", /at least 0/);
  assert.equal(at("models.2.outptu")?.line, 22);
  assert.match(at("models.2.outptu")?.message ?? "", /unknown key "outptu"/);
  // A missing key points at the entry that lacks it.
  assert.equal(at("models.3.source")?.line, 24);
  assert.match(at("models.3.source")?.message ?? "", /missing required key "source"/);
  assert.equal(at("models.4.output")?.line, 35);
  assert.match(at("models.4.output")?.message ?? "", /input price only/);
  assert.equal(at("models.5.provider")?.line, 36);
  assert.equal(at("models.5.source")?.line, 38);
  assert.equal(at("models.5.checked")?.line, 39);
  // Sorted by line, as an editor walks them.
  const lines = issues.map((i) => i.line ?? 0);
  assert.deepEqual(lines, [...lines].sort((a, b) => a - b));
});

Deno.test("catalog: the top level is checked too: date, currency, unit, duplicates", () => {
  const top = issuesOf(`date: yesterday
currency: EUR
unit: per_million_tokens
models: []
`);
  assert.deepEqual(top.map((i) => [i.path, i.line]), [["date", 1], ["currency", 2]]);
  const twice = issuesOf(
    catalogOf(`  - { provider: openai, model: a, source: ${SRC}, checked: 2026-01-01, input: 1, output: 1 }
  - { provider: openai, model: a, source: ${SRC}, checked: 2026-01-01, input: 2, output: 2 }
`),
  );
  assert.deepEqual(twice.map((i) => [i.path, i.line]), [["models.1.model", 6]]);
  assert.match(twice[0].message, /listed twice/);
  assert.match(issuesOf("")[0].message, /must be a YAML mapping/);
  assert.match(issuesOf("- a\n")[0].message, /must be a YAML mapping/);
});

Deno.test("catalog: checkCatalogFile reads through the given reader and reports an unreadable file", async () => {
  const good = await checkCatalogFile("mine.yaml", () =>
    Promise.resolve(
      catalogOf(
        `  - { provider: azure, model: "gpt-4o*", source: ${SRC}, checked: 2026-01-01, input: 9, output: 9 }\n`,
      ),
    ));
  assert.ok(good.ok);
  assert.equal(good.catalog.source, "mine.yaml");
  const missing = await checkCatalogFile("/nonexistent/catalog.yaml");
  assert.ok(!missing.ok);
  assert.match(missing.issues[0].message, /cannot read price catalog \(file not found\)/);
});

Deno.test("catalog: a catalog Deno's permissions leave out says so and what to do, not just 'cannot read'", async () => {
  // `deno task start` reads only config/, data/ and lib/: a catalog elsewhere failed the start with
  // "cannot read price catalog" and nothing more, though `check` (often run with -A) had read it.
  const notCapable = Object.assign(new Error('Requires read access to "/srv/prices.yaml"'), {
    name: "NotCapable",
  });
  const refused = await checkCatalogFile("/srv/prices.yaml", () => Promise.reject(notCapable));
  assert.ok(!refused.ok);
  assert.equal(
    refused.issues[0].message,
    "cannot read price catalog (Deno's permissions do not let it read this path: `deno task start` reads only " +
      "config/ and data/; put the catalog in config/, or run deno with --allow-read for it)",
  );
  const dir = await Deno.makeTempDir();
  try {
    const asDir = await checkCatalogFile(dir);
    assert.ok(!asDir.ok);
    assert.match(asDir.issues[0].message, /cannot read price catalog \(is a directory\)/);
  } finally {
    await Deno.remove(dir);
  }
});

Deno.test("catalog: a catalog price feeds the cost arithmetic", () => {
  const price = lookupPrice(defaultCatalog(), "gemini", "gemini-2.5-pro");
  assert.ok(price);
  const cost = costOfUsage(toTokenPrices(price), { prompt: 300_000, completion: 1_000, cachedRead: 100_000 });
  // Above 200k the long-context rates apply to the whole request.
  const expected = (200_000 * 2.5 + 100_000 * 0.25 + 1_000 * 15) / 1e6;
  assert.equal(Math.round(cost.total * 1e6), Math.round(expected * 1e6));
});

Deno.test("catalog: the config's pricing section takes a catalog path and nothing else", () => {
  assert.ok(pricingSchema.safeParse({ catalog: "prices.yaml" }).success);
  assert.ok(pricingSchema.safeParse({}).success);
  assert.ok(!pricingSchema.safeParse({ catalog: "" }).success);
  assert.ok(!pricingSchema.safeParse({ catalogue: "x" }).success);
});

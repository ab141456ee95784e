/**
 * Cross-checks of the policy parts of a config: content-rule patterns that do not compile, budgets that name
 * neither or both units, and money budgets (of tokens, teams and end users) over aliases have no price to count money with.
 * Works on raw data like the other semantic checks, skipping what the schema already reports. Prices are looked
 * up in the catalog the config will be priced from (the operator's `pricing.catalog`, else the built-in one), so
 * what `check` accepts is what resolution charges.
 *
 * @module
 */
import { type AliasIndex, indexAliases } from "./alias_patterns.ts";
import { listNames, type SemanticIssue } from "./check_issue.ts";
import { arrayField, entriesOf, field, isRecord, recordField, stringField } from "./raw_access.ts";
import {
  BUILTIN_CATALOG_SOURCE,
  defaultCatalog,
  lookupPrice,
  type PriceCatalog,
} from "../pricing/catalog.ts";

function checkContentRules(config: unknown): SemanticIssue[] {
  const issues: SemanticIssue[] = [];
  for (const [alias, model] of entriesOf(recordField(config, "models"))) {
    (arrayField(model, "content_rules") ?? []).forEach((rule, i) => {
      const pattern = stringField(rule, "pattern");
      if (pattern === undefined) return;
      const flags = stringField(rule, "flags") ?? "i";
      try {
        new RegExp(pattern, flags.replace(/[^imsu]/g, ""));
      } catch (err) {
        const why = err instanceof Error
          ? err.message.replace(/^Invalid regular expression: /, "")
          : "invalid";
        issues.push({
          path: ["models", alias, "content_rules", i, "pattern"],
          message: `not a valid pattern: ${why}`,
        });
      }
    });
  }
  return issues;
}

/** How messages name a catalog: its date, and its file when it is the operator's. */
function catalogName(catalog: PriceCatalog): string {
  return catalog.source === BUILTIN_CATALOG_SOURCE
    ? `the price catalog of ${catalog.date}`
    : `the price catalog ${catalog.source} of ${catalog.date}`;
}

/** Whether every target of `alias` has a price: its own, or the catalog's for its provider and model. */
function priced(config: unknown, alias: string, catalog: PriceCatalog): boolean {
  const model = recordField(recordField(config, "models"), alias);
  const targets = arrayField(model, "targets") ?? [];
  const providers = recordField(config, "providers");
  return targets.length > 0 && targets.every((t) => {
    if (isRecord(field(t, "price"))) return true;
    const type = stringField(recordField(providers, stringField(t, "provider") ?? ""), "type");
    const upstream = stringField(t, "model");
    return type !== undefined && upstream !== undefined &&
      lookupPrice(catalog, type, upstream) !== undefined;
  });
}

/** A target's `price: catalog` that the catalog does not know: a money figure would silently be 0. */
function checkCatalogPrices(config: unknown, catalog: PriceCatalog): SemanticIssue[] {
  const issues: SemanticIssue[] = [];
  const providers = recordField(config, "providers");
  for (const [alias, model] of entriesOf(recordField(config, "models"))) {
    (arrayField(model, "targets") ?? []).forEach((target, i) => {
      if (field(target, "price") !== "catalog") return;
      const provider = stringField(target, "provider") ?? "";
      const type = stringField(recordField(providers, provider), "type");
      const upstream = stringField(target, "model");
      if (type === undefined || upstream === undefined) return;
      if (lookupPrice(catalog, type, upstream) !== undefined) return;
      issues.push({
        path: ["models", alias, "targets", i, "price"],
        message: `${catalogName(catalog)} has no price for ${type} model "${upstream}"; ` +
          "give this target a price: { input, output }",
      });
    });
  }
  return issues;
}

/**
 * Every budget of the config, where it is and the alias patterns it covers: tokens' own, teams' (their
 * `models:`, else every member's), and end users' on a token (its patterns) or on an alias (that alias).
 */
function budgetsOf(config: unknown): { path: (string | number)[]; budget: unknown; patterns: string[] }[] {
  const out: { path: (string | number)[]; budget: unknown; patterns: string[] }[] = [];
  const strings = (v: readonly unknown[] | undefined) =>
    (v ?? []).filter((p): p is string => typeof p === "string");
  const tokens = arrayField(config, "tokens") ?? [];
  tokens.forEach((token, i) => {
    const patterns = strings(arrayField(token, "models"));
    out.push({ path: ["tokens", i, "budget"], budget: field(token, "budget"), patterns });
    const endUsers = field(token, "end_user_limits");
    out.push({
      path: ["tokens", i, "end_user_limits", "budget"],
      budget: field(endUsers, "budget"),
      patterns,
    });
  });
  for (const [team, def] of entriesOf(recordField(config, "teams"))) {
    const own = arrayField(def, "models");
    const patterns = own !== undefined
      ? strings(own)
      : tokens.filter((t) => field(t, "team") === team).flatMap((t) => strings(arrayField(t, "models")));
    out.push({ path: ["teams", team, "budget"], budget: field(def, "budget"), patterns });
  }
  for (const [alias, model] of entriesOf(recordField(config, "models"))) {
    const endUsers = field(model, "end_user_limits");
    out.push({
      path: ["models", alias, "end_user_limits", "budget"],
      budget: field(endUsers, "budget"),
      patterns: [alias],
    });
  }
  return out;
}

function checkBudgets(
  config: unknown,
  aliases: AliasIndex | undefined,
  catalog: PriceCatalog | null,
): SemanticIssue[] {
  const issues: SemanticIssue[] = [];
  const pricedAlias = new Map<string, boolean>();
  const isPriced = (alias: string): boolean => {
    let known = pricedAlias.get(alias);
    if (known === undefined) {
      pricedAlias.set(alias, known = catalog === null || priced(config, alias, catalog));
    }
    return known;
  };
  // Budgets with the same patterns share one alias set, and so one answer.
  const unpricedOf = new Map<ReadonlySet<string>, string[]>();
  for (const { path, budget, patterns } of budgetsOf(config)) {
    if (!isRecord(budget)) continue;
    const hasTokens = field(budget, "tokens") !== undefined;
    const hasCost = field(budget, "cost") !== undefined;
    if (hasTokens === hasCost) {
      issues.push({ path, message: "give exactly one of tokens or cost" });
      continue;
    }
    if (!hasCost || aliases === undefined || catalog === null) continue;
    const reachable = aliases.expand(patterns);
    let unpriced = unpricedOf.get(reachable);
    if (unpriced === undefined) {
      unpricedOf.set(
        reachable,
        unpriced = [...reachable].filter((a) => !isPriced(a)),
      );
    }
    if (unpriced.length > 0) {
      issues.push({
        path: [...path, "cost"],
        message: `a cost budget needs a price on every target of the aliases it covers (${
          catalogName(catalog)
        } or the target's price:); no price on ${listNames(unpriced.map((a) => `"${a}"`))}`,
      });
    }
  }
  return issues;
}

/**
 * Every policy issue in `config` (raw, interpolated data). `catalog` is the one targets will be priced from;
 * null when it could not be read (its own issues say why), and then prices are not checked.
 */
export function checkPolicies(
  config: unknown,
  aliases: AliasIndex | undefined = modelIndex(config),
  catalog: PriceCatalog | null = defaultCatalog(),
): SemanticIssue[] {
  return [
    ...checkContentRules(config),
    ...checkBudgets(config, aliases, catalog),
    ...(catalog === null ? [] : checkCatalogPrices(config, catalog)),
  ];
}

function modelIndex(config: unknown): AliasIndex | undefined {
  const models = recordField(config, "models");
  return models === undefined ? undefined : indexAliases(Object.keys(models));
}

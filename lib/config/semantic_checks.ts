/**
 * Rules that look across config sections: references between sections, duplicate credentials, and values
 * that are well-formed but cannot work. Each issue carries the path of the value to fix so the loader can
 * point at its line.
 *
 * The checks run whether or not the schema accepted the file, so that one pass reports everything. They
 * therefore take `unknown` data and read it defensively: a part of the wrong shape (a provider whose `type`
 * is not a string, a `targets` that is not a sequence, a token that is not a mapping…) is skipped silently,
 * because the schema already reports it. A reference is only checked against a section that is itself a
 * mapping: with `providers` missing, every target would otherwise be "unknown", which is noise.
 *
 * Messages never print a `token`, `api_key` or `sha256` value: duplicates are reported by the index and name
 * of the other entry.
 *
 * @module
 */
import { type AliasIndex, indexAliases } from "./alias_patterns.ts";
import { listNames, type SemanticIssue } from "./check_issue.ts";
import { checkPolicies } from "./policy_checks.ts";
import { checkCache } from "./cache_checks.ts";
import type { PathSegment } from "./interpolate.ts";
import { arrayField, entriesOf, field, hasKey, isRecord, recordField, stringField } from "./raw_access.ts";
import { parseExpiry, tokenSha256 } from "./resolve.ts";
import { PROVIDER_SERVES } from "./provider_capabilities.ts";
import { ALIAS_PATTERN, BUILTIN_MODELS, type ModelType } from "./schema.ts";
import { defaultCatalog, type PriceCatalog } from "../pricing/catalog.ts";

/** A cross-section problem at one config path. */

/**
 * The capability tables the checks consult. They default to the real ones (`PROVIDER_SERVES`, the `serves`
 * column of `provider_capabilities.ts`; `BUILTIN_MODELS` in `schema.ts`); tests pass their own to exercise
 * rules the shipped tables cannot trigger.
 */
export interface CheckTables {
  readonly serves: Readonly<Record<string, readonly ModelType[]>>;
  readonly builtinModels: Readonly<Record<ModelType, readonly string[]>>;
}

const DEFAULT_TABLES: CheckTables = { serves: PROVIDER_SERVES, builtinModels: BUILTIN_MODELS };

/**
 * Runs every cross-section rule and returns all issues, in section order. `config` is either the schema's
 * output or, when the schema rejected the file, the interpolated data as parsed from YAML; see the module
 * documentation for how malformed parts are treated. `catalog` is the price catalog the config will be priced
 * from (its `pricing.catalog`, read by the loader first); null when that file could not be read. Never throws.
 */
export function checkConfig(
  config: unknown,
  tables: CheckTables = DEFAULT_TABLES,
  catalog: PriceCatalog | null = defaultCatalog(),
): SemanticIssue[] {
  const models = recordField(config, "models");
  // Token patterns are only checked against a models section that is a mapping (see the module docs).
  const aliases = models === undefined ? undefined : indexAliases(Object.keys(models));
  return [
    ...checkProviders(config),
    ...checkModels(config, tables),
    ...checkTokens(config, aliases),
    ...checkPolicies(config, aliases, catalog),
    ...checkCache(config),
  ];
}

/**
 * Most alias tests that token patterns other than `alias`, `*` and `prefix*` may cost (each such pattern is
 * tested against every alias once). Enough for thousands of such patterns against thousands of aliases;
 * past it, a file of hostile patterns would take minutes to check and to load.
 */
export const MAX_PATTERN_TESTS = 10_000_000;

/** Endpoint paths people paste into `base_url` although the gateway appends them itself. */
const ENDPOINT_SUFFIX = /\/(chat\/completions|completions|embeddings|models)\/?$/;

function parseUrl(text: string | undefined): URL | undefined {
  if (text === undefined) return undefined;
  try {
    return new URL(text);
  } catch {
    return undefined; // the schema reports an invalid URL
  }
}

/**
 * Every provider's `base_url` (each type but `builtin` has one): no credentials, which `/admin/config` would
 * show and every upstream call would carry to whoever the URL points at, and no query or fragment, which the
 * gateway's paths are appended after (a Gemini `?key=` never reached Google as a key). Header values are the
 * schema's (`header_map.ts`).
 */
function checkProviders(config: unknown): SemanticIssue[] {
  const issues: SemanticIssue[] = [];
  for (const [name, provider] of entriesOf(recordField(config, "providers"))) {
    const at = (...rest: PathSegment[]): PathSegment[] => ["providers", name, ...rest];
    const url = parseUrl(stringField(provider, "base_url"));
    if (url !== undefined && (url.search !== "" || url.hash !== "")) {
      issues.push({ path: at("base_url"), message: "base_url must not have a query string or fragment" });
    }
    if (url !== undefined && (url.username !== "" || url.password !== "")) {
      issues.push({
        path: at("base_url"),
        message: "base_url must not contain credentials; use api_key or headers",
      });
    }
    if (
      stringField(provider, "type") === "openai" && url !== undefined && ENDPOINT_SUFFIX.test(url.pathname)
    ) {
      issues.push({
        path: at("base_url"),
        message: "base_url should be the API root (e.g. https://api.openai.com/v1), not an endpoint",
      });
    }
  }
  return issues;
}

function isModelType(type: string | undefined, tables: CheckTables): type is ModelType {
  return type !== undefined && hasKey(tables.builtinModels, type);
}

function checkModels(config: unknown, tables: CheckTables): SemanticIssue[] {
  const issues: SemanticIssue[] = [];
  const providers = recordField(config, "providers");
  const providerNames = Object.keys(providers ?? {});
  const known = providerNames.length > 0 ? listNames(providerNames) : "none";
  for (const [alias, model] of entriesOf(recordField(config, "models"))) {
    if (!ALIAS_PATTERN.test(alias)) {
      issues.push({
        path: ["models", alias],
        message:
          "invalid alias name: use 1-128 letters, digits and . _ : / @ + -, starting with a letter or digit",
      });
    }
    const modelType = stringField(model, "type");
    (arrayField(model, "targets") ?? []).forEach((target, i) => {
      const at = (key: string): PathSegment[] => ["models", alias, "targets", i, key];
      const providerName = stringField(target, "provider");
      if (providers === undefined || providerName === undefined) return;
      if (!hasKey(providers, providerName)) {
        issues.push({
          path: at("provider"),
          message: `unknown provider "${providerName}" (defined providers: ${known})`,
        });
        return;
      }
      // An unknown provider type or alias type is the schema's to report, not a capability mismatch.
      const providerType = stringField(providers[providerName], "type");
      if (providerType === undefined || !hasKey(tables.serves, providerType)) return;
      if (!isModelType(modelType, tables)) return;
      if (!tables.serves[providerType].includes(modelType)) {
        issues.push({
          path: at("provider"),
          message: `provider "${providerName}" (type ${providerType}) cannot serve ${modelType} models`,
        });
        return;
      }
      const targetModel = stringField(target, "model");
      if (providerType === "builtin" && targetModel !== undefined) {
        const available = tables.builtinModels[modelType];
        if (!available.includes(targetModel)) {
          issues.push({
            path: at("model"),
            message: `the builtin provider has no ${modelType} model "${targetModel}" (available: ${
              available.join(", ")
            })`,
          });
        }
      }
    });
  }
  return issues;
}

/** The hash a token entry stands for, when its `sha256` or `token` is a string. */
function tokenHash(sha256: unknown, secret: unknown): string | undefined {
  if (typeof sha256 === "string") return sha256.toLowerCase();
  if (typeof secret === "string") return tokenSha256(secret);
  return undefined;
}

/**
 * Client tokens and admin tokens: exactly one of sha256/token each, unique names within a section, and every
 * token unique across both sections (one secret must not be both a client and an admin credential).
 */
function checkTokens(config: unknown, aliases: AliasIndex | undefined): SemanticIssue[] {
  const issues: SemanticIssue[] = [];
  const byHash = new Map<string, string>();
  for (const section of ["tokens", "admin_tokens"] as const) {
    issues.push(...checkTokenSection(config, section, byHash, aliases));
  }
  issues.push(...checkTeams(config, aliases));
  issues.push(...checkGuardrails(config));
  return issues;
}

/**
 * Guardrail names attached to aliases and tokens exist; a moderation guardrail has exactly one of a key and a
 * provider (an `openai` one); `reverse` goes with `mask` on the request.
 */
function checkGuardrails(config: unknown): SemanticIssue[] {
  const issues: SemanticIssue[] = [];
  const defined = recordField(config, "guardrails") ?? {};
  const known = Object.keys(defined);
  const refs = (owner: unknown, path: (string | number)[]) =>
    (arrayField(owner, "guardrails") ?? []).forEach((name, j) => {
      if (typeof name !== "string" || Object.hasOwn(defined, name)) return;
      issues.push({
        path: [...path, "guardrails", j],
        message: `no guardrail named "${name}" in guardrails:` +
          (known.length > 0 ? ` (there are ${listNames(known.map((g) => `"${g}"`))})` : ""),
      });
    });
  for (const [alias, model] of entriesOf(recordField(config, "models"))) refs(model, ["models", alias]);
  (arrayField(config, "tokens") ?? []).forEach((token, i) => refs(token, ["tokens", i]));
  const providers = recordField(config, "providers");
  for (const [name, g] of entriesOf(defined)) {
    const type = stringField(g, "type");
    if (type === "openai_moderation") {
      const provider = stringField(g, "provider");
      if ((provider === undefined) === (field(g, "api_key") === undefined)) {
        issues.push({ path: ["guardrails", name], message: "give exactly one of api_key and provider" });
      } else if (
        provider !== undefined && stringField(recordField(providers, provider), "type") !== "openai"
      ) {
        issues.push({
          path: ["guardrails", name, "provider"],
          message: `"${provider}" is not an openai provider of providers:`,
        });
      }
    }
    if (type === "pii" && field(g, "reverse") === true) {
      if (field(g, "action") !== "mask" || stringField(g, "phase") === "output") {
        issues.push({
          path: ["guardrails", name, "reverse"],
          message:
            "reverse gives back what a mask on the request hid: it needs action: mask and phase input or both",
        });
      }
    }
  }
  return issues;
}

/** A token's `team:` names a team of `teams:`; a team's `models:` patterns match aliases. */
function checkTeams(config: unknown, aliases: AliasIndex | undefined): SemanticIssue[] {
  const issues: SemanticIssue[] = [];
  const teams = recordField(config, "teams") ?? {};
  (arrayField(config, "tokens") ?? []).forEach((token, i) => {
    const team = stringField(token, "team");
    if (team === undefined || Object.hasOwn(teams, team)) return;
    const known = Object.keys(teams);
    issues.push({
      path: ["tokens", i, "team"],
      message: `no team named "${team}" in teams:` +
        (known.length > 0 ? ` (there are ${listNames(known.map((t) => `"${t}"`))})` : ""),
    });
  });
  for (const [team, def] of entriesOf(teams)) {
    (arrayField(def, "models") ?? []).forEach((pattern, j) => {
      if (aliases === undefined || typeof pattern !== "string" || aliases.matchesAny(pattern)) return;
      issues.push({ path: ["teams", team, "models", j], message: `"${pattern}" matches no model alias` });
    });
  }
  return issues;
}

function checkTokenSection(
  config: unknown,
  section: "tokens" | "admin_tokens",
  byHash: Map<string, string>,
  aliases: AliasIndex | undefined,
): SemanticIssue[] {
  const issues: SemanticIssue[] = [];
  const tokens = arrayField(config, section) ?? [];
  const names = tokens.map((token) => stringField(token, "name"));
  const label = (j: number): string =>
    names[j] === undefined ? `${section}.${j}` : `${section}.${j} ("${names[j]}")`;
  const byName = new Map<string, number>();
  tokens.forEach((token, i) => {
    if (!isRecord(token)) return;
    const sha256 = field(token, "sha256");
    const secret = field(token, "token");
    if (sha256 !== undefined && secret !== undefined) {
      issues.push({ path: [section, i], message: "give either sha256 or token, not both" });
    } else if (sha256 === undefined && secret === undefined) {
      issues.push({
        path: [section, i],
        message: "give either sha256 (the token's SHA-256 in hex) or token (e.g. ${MY_TOKEN})",
      });
    } else {
      const hash = tokenHash(sha256, secret);
      const first = hash === undefined ? undefined : byHash.get(hash);
      if (first !== undefined) {
        issues.push({
          path: [section, i, sha256 !== undefined ? "sha256" : "token"],
          message: `the same token as ${first}; each token must be unique`,
        });
      } else if (hash !== undefined) {
        byHash.set(hash, label(i));
      }
    }
    const name = names[i];
    const sameName = name === undefined ? undefined : byName.get(name);
    if (sameName !== undefined) {
      issues.push({
        path: [section, i, "name"],
        message: `duplicate token name, also used by ${section}.${sameName}`,
      });
    } else if (name !== undefined) {
      byName.set(name, i);
    }
    (arrayField(token, "models") ?? []).forEach((pattern, j) => {
      if (aliases === undefined || typeof pattern !== "string") return;
      if (aliases.needsScan(pattern) && aliases.scanned + aliases.size > MAX_PATTERN_TESTS) {
        issues.push({
          path: [section, i, "models", j],
          message: "too many wildcard patterns to check against this many aliases; " +
            'use exact aliases, "*" or "prefix-*" patterns',
        });
        return;
      }
      if (!aliases.matchesAny(pattern)) {
        issues.push({ path: [section, i, "models", j], message: `"${pattern}" matches no model alias` });
      }
    });
    const expiresAt = stringField(token, "expires_at");
    if (expiresAt !== undefined && Number.isNaN(parseExpiry(expiresAt))) {
      issues.push({
        path: [section, i, "expires_at"],
        message: "expires_at is not a valid date or date-time",
      });
    }
  });
  return issues;
}

/**
 * Rules that look across config sections, run after the schema has accepted the file: references between
 * sections, duplicate credentials, and values that are well-formed but cannot work. Each issue carries the
 * path of the value to fix so the loader can point at its line.
 *
 * Messages never print a `token`, `api_key` or `sha256` value: duplicates are reported by the index and name
 * of the other entry.
 *
 * @module
 */
import type { PathSegment } from "./interpolate.ts";
import { globToRegExp, parseExpiry, tokenSha256 } from "./resolve.ts";
import {
  ALIAS_PATTERN,
  BUILTIN_MODELS,
  type ConfigOutput,
  type ModelType,
  PROVIDER_SERVES,
} from "./schema.ts";

/** A cross-section problem at one config path. */
export interface SemanticIssue {
  readonly path: readonly PathSegment[];
  readonly message: string;
}

/**
 * The capability tables the checks consult. They default to the real ones in `schema.ts`; tests pass their
 * own to exercise rules the shipped tables cannot trigger (today every provider type serves every alias
 * type).
 */
export interface CheckTables {
  readonly serves: Readonly<Record<string, readonly ModelType[]>>;
  readonly builtinModels: Readonly<Record<ModelType, readonly string[]>>;
}

const DEFAULT_TABLES: CheckTables = { serves: PROVIDER_SERVES, builtinModels: BUILTIN_MODELS };

/** Runs every cross-section rule and returns all issues, in section order. */
export function checkConfig(cfg: ConfigOutput, tables: CheckTables = DEFAULT_TABLES): SemanticIssue[] {
  return [...checkProviders(cfg), ...checkModels(cfg, tables), ...checkTokens(cfg)];
}

/** Endpoint paths people paste into `base_url` although the gateway appends them itself. */
const ENDPOINT_SUFFIX = /\/(chat\/completions|completions|embeddings|models)\/?$/;

function checkProviders(cfg: ConfigOutput): SemanticIssue[] {
  const issues: SemanticIssue[] = [];
  for (const [name, provider] of Object.entries(cfg.providers)) {
    if (provider.type !== "openai") continue;
    const at = (...rest: PathSegment[]): PathSegment[] => ["providers", name, ...rest];
    const url = new URL(provider.base_url);
    if (url.search !== "" || url.hash !== "") {
      issues.push({ path: at("base_url"), message: "base_url must not have a query string or fragment" });
    }
    if (url.username !== "" || url.password !== "") {
      issues.push({
        path: at("base_url"),
        message: "base_url must not contain credentials; use api_key or headers",
      });
    }
    if (ENDPOINT_SUFFIX.test(url.pathname)) {
      issues.push({
        path: at("base_url"),
        message: "base_url should be the API root (e.g. https://api.openai.com/v1), not an endpoint",
      });
    }
    for (const [header, value] of Object.entries(provider.headers)) {
      if (/[\r\n\0]/.test(value)) {
        issues.push({ path: at("headers", header), message: "header value must not contain line breaks" });
      }
    }
  }
  return issues;
}

function checkModels(cfg: ConfigOutput, tables: CheckTables): SemanticIssue[] {
  const issues: SemanticIssue[] = [];
  const providerNames = Object.keys(cfg.providers);
  for (const [alias, model] of Object.entries(cfg.models)) {
    if (!ALIAS_PATTERN.test(alias)) {
      issues.push({
        path: ["models", alias],
        message:
          "invalid alias name: use 1-128 letters, digits and . _ : / @ + -, starting with a letter or digit",
      });
    }
    model.targets.forEach((target, i) => {
      const at = (field: string): PathSegment[] => ["models", alias, "targets", i, field];
      const provider = cfg.providers[target.provider];
      if (provider === undefined) {
        const known = providerNames.length > 0 ? providerNames.join(", ") : "none";
        issues.push({
          path: at("provider"),
          message: `unknown provider "${target.provider}" (defined providers: ${known})`,
        });
        return;
      }
      const serves = tables.serves[provider.type] ?? [];
      if (!serves.includes(model.type)) {
        issues.push({
          path: at("provider"),
          message: `provider "${target.provider}" (type ${provider.type}) cannot serve ${model.type} models`,
        });
        return;
      }
      if (provider.type === "builtin") {
        const available = tables.builtinModels[model.type];
        if (!available.includes(target.model)) {
          issues.push({
            path: at("model"),
            message: `the builtin provider has no ${model.type} model "${target.model}" (available: ${
              available.join(", ")
            })`,
          });
        }
      }
    });
  }
  return issues;
}

function checkTokens(cfg: ConfigOutput): SemanticIssue[] {
  const issues: SemanticIssue[] = [];
  const aliases = Object.keys(cfg.models);
  const byHash = new Map<string, number>();
  const byName = new Map<string, number>();
  cfg.tokens.forEach((token, i) => {
    const label = (j: number): string => `tokens.${j} ("${cfg.tokens[j].name}")`;
    const { sha256, token: secret } = token;
    if (sha256 !== undefined && secret !== undefined) {
      issues.push({ path: ["tokens", i], message: "give either sha256 or token, not both" });
    } else if (sha256 === undefined && secret === undefined) {
      issues.push({
        path: ["tokens", i],
        message: "give either sha256 (the token's SHA-256 in hex) or token (e.g. ${MY_TOKEN})",
      });
    } else {
      const hash = sha256 !== undefined ? sha256.toLowerCase() : tokenSha256(secret ?? "");
      const first = byHash.get(hash);
      if (first === undefined) {
        byHash.set(hash, i);
      } else {
        issues.push({
          path: ["tokens", i, sha256 !== undefined ? "sha256" : "token"],
          message: `the same token as ${label(first)}; each token must be unique`,
        });
      }
    }
    const sameName = byName.get(token.name);
    if (sameName === undefined) byName.set(token.name, i);
    else {
      issues.push({
        path: ["tokens", i, "name"],
        message: `duplicate token name, also used by tokens.${sameName}`,
      });
    }
    token.models.forEach((pattern, j) => {
      const re = globToRegExp(pattern);
      if (!aliases.some((alias) => re.test(alias))) {
        issues.push({ path: ["tokens", i, "models", j], message: `"${pattern}" matches no model alias` });
      }
    });
    if (token.expires_at !== undefined && Number.isNaN(parseExpiry(token.expires_at))) {
      issues.push({
        path: ["tokens", i, "expires_at"],
        message: "expires_at is not a valid date or date-time",
      });
    }
  });
  return issues;
}

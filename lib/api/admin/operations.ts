/**
 * Admin endpoints, for operators with an admin token: the live state of every routing target, and a config
 * reload on demand.
 *
 * @module
 */
import type { ProviderConfig } from "../../config/schema.ts";
import type { ResolvedToken } from "../../config/types.ts";
import { isSecretPath, type PathSegment } from "../../config/interpolate.ts";
import { GatewayError, invalidRequest, printable } from "../../errors.ts";
import type { ReloadStatus } from "../../reload.ts";
import { DEFAULT_GROUP_LIMIT, MAX_GROUP_LIMIT, MAX_GROUP_OFFSET } from "../../usage/group_page.ts";
import { UsageQueryError } from "../../usage/query.ts";
import {
  POLICY_OUTCOMES,
  USAGE_FILTER_COLUMNS,
  USAGE_GROUP_KEYS,
  type UsageFilters,
  type UsageQuery,
} from "../../usage/record.ts";
import type { RequestContext } from "../../http/context.ts";
import type { ClientRequest } from "../../runtime/types.ts";

const JSON_TYPE = { "content-type": "application/json" };

/**
 * `GET /admin/targets`: every alias's targets in config order with their health (in flight, recent latency,
 * consecutive failures, ejected until). Targets that have had no traffic yet show as healthy with no data.
 */
export function handleTargets(_request: ClientRequest, ctx: RequestContext): Response {
  const health = new Map(ctx.routing.health.snapshot().map((s) => [s.key, s]));
  const aliases = [...ctx.state.config.models.values()].map((model) => ({
    alias: model.alias,
    strategy: model.strategy,
    targets: model.targets.map((target) => {
      const h = health.get(target.key);
      return {
        provider: target.provider,
        model: target.model,
        weight: target.weight,
        max_in_flight: target.maxInFlight,
        retries: target.retries,
        state: h?.state ?? "healthy",
        in_flight: ctx.routing.health.inFlight(target),
        consecutive_failures: h?.consecutive_failures ?? 0,
        ejected_until: h?.ejected_until ?? null,
        latency_ewma_ms: h?.latency_ewma_ms ?? null,
        successes: h?.successes ?? 0,
        failures: h?.failures ?? 0,
      };
    }),
  }));
  return new Response(JSON.stringify({ object: "list", data: aliases }), { headers: JSON_TYPE });
}

/** `POST /admin/reload`: reloads the config file now; 200 when swapped in, 422 with every issue when not. */
export async function handleReload(reload: (trigger: string) => Promise<ReloadStatus>): Promise<Response> {
  const status = await reload("admin");
  return new Response(JSON.stringify(status), { status: status.ok ? 200 : 422, headers: JSON_TYPE });
}

const GROUP_KEYS: ReadonlySet<string> = new Set(USAGE_GROUP_KEYS);
const OUTCOMES: ReadonlySet<string> = new Set(POLICY_OUTCOMES);

/** "a, b or c". */
function orList(items: readonly string[]): string {
  return items.length < 2 ? items.join("") : `${items.slice(0, -1).join(", ")} or ${items.at(-1)}`;
}

/** A 400 naming the query parameter `param`. */
export function badParam(param: string, message: string): GatewayError {
  return invalidRequest(message, param, "invalid_value");
}

/**
 * A text filter, or undefined when absent. NUL is refused: PostgreSQL's text cannot hold it, so the query
 * would fail as if the database were down (a 503, and its pool reset) for what is the caller's typo.
 */
export function textParam(params: URLSearchParams, name: string): string | undefined {
  const value = params.get(name);
  if (value === null) return undefined;
  if (value.includes("\u0000")) throw badParam(name, `'${name}' must not contain NUL (%00).`);
  return value;
}

/**
 * An ISO 8601 date (`2026-11-30`: its start, UTC) or date-time (`2026-11-30T12:00`, seconds and fraction
 * optional, a zone `Z` or `±hh:mm`, none meaning UTC). Strict: `Date.parse` alone reads `foo 1` as 2001, rolls
 * 30 February into March and takes six-digit years, which the stored times (compared as text) sort before.
 */
const ISO_DATE_TIME =
  /^(\d{4}-\d{2}-\d{2})(?:T([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(\.\d{1,9})?)?(Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)?)?$/;

/** An ISO date or date-time parameter ({@linkcode ISO_DATE_TIME}), canonical (`toISOString`), or undefined. */
export function isoParam(params: URLSearchParams, name: string): string | undefined {
  const value = params.get(name);
  if (value === null) return undefined;
  const bad = () =>
    badParam(name, `'${name}' must be an ISO 8601 date (2026-11-30) or date-time (2026-11-30T12:00:00Z).`);
  const m = ISO_DATE_TIME.exec(value);
  if (m === null) throw bad();
  const [, date, hour = "00", minute = "00", second = "00", fraction = "", zone = "Z"] = m;
  // A day the month does not have is refused rather than rolled into the next month.
  const day = Date.parse(`${date}T00:00:00Z`);
  if (Number.isNaN(day) || new Date(day).toISOString().slice(0, 10) !== date) throw bad();
  const time = Date.parse(`${date}T${hour}:${minute}:${second}${fraction.slice(0, 4)}${zone}`);
  if (Number.isNaN(time)) throw bad();
  return new Date(time).toISOString();
}

/**
 * The filters shared by `GET /admin/usage` and `GET /admin/requests`. `rule` names one rule: it matches a
 * request modified by several (their names joined by ","), so a "," in it is refused.
 */
export function parseUsageFilters(params: URLSearchParams): UsageFilters {
  const filters: UsageFilters = { from: isoParam(params, "from"), to: isoParam(params, "to") };
  for (const name of USAGE_FILTER_COLUMNS) {
    const value = textParam(params, name);
    if (value !== undefined) filters[name] = value;
  }
  const outcome = params.get("outcome");
  if (outcome !== null) {
    if (!OUTCOMES.has(outcome)) throw badParam("outcome", `'outcome' must be ${orList(POLICY_OUTCOMES)}.`);
    filters.outcome = outcome as UsageQuery["outcome"];
  }
  const rule = textParam(params, "rule") ?? null;
  if (rule !== null) {
    if (rule === "" || rule.includes(",")) {
      throw badParam("rule", "'rule' must name one rule (for example token.rpm), without ','.");
    }
    filters.rule = rule;
  }
  return filters;
}

/** Parses `GET /admin/usage`'s query string; every value is checked, nothing is passed to SQL as text. */
export function parseUsageQuery(url: string): UsageQuery {
  const params = new URL(url).searchParams;
  const query: UsageQuery = parseUsageFilters(params);
  const groupBy = params.get("group_by");
  if (groupBy !== null && groupBy !== "") {
    const keys = groupBy.split(",").map((k) => k.trim());
    const bad = keys.find((k) => !GROUP_KEYS.has(k));
    if (bad !== undefined) {
      throw badParam("group_by", `'group_by' takes ${USAGE_GROUP_KEYS.join(", ")}; got '${printable(bad)}'.`);
    }
    query.group_by = keys as UsageQuery["group_by"];
  }
  query.limit = wholeParam(params, "limit", 1, MAX_GROUP_LIMIT, DEFAULT_GROUP_LIMIT);
  query.offset = wholeParam(params, "offset", 0, MAX_GROUP_OFFSET, 0);
  return query;
}

/** A whole-number parameter from `min` to `max` (digits only: no sign, exponent or fraction), or `fallback`. */
function wholeParam(
  params: URLSearchParams,
  name: string,
  min: number,
  max: number,
  fallback: number,
): number {
  const text = params.get(name);
  if (text === null) return fallback;
  const n = /^[0-9]{1,9}$/.test(text) ? Number(text) : Number.NaN;
  if (!(n >= min && n <= max)) {
    throw badParam(name, `'${name}' must be an integer from ${min} to ${max} (default ${fallback}).`);
  }
  return n;
}

/**
 * `GET /admin/usage?from=&to=&token=&token_id=&team=&team_id=&environment=&alias=&provider=&upstream_model=&outcome=&rule=&group_by=alias,day&limit=&offset=`:
 * totals (requests, tokens, cost, denials by rule, errors, cache hits and lookups, what hits saved, latency
 * percentiles), overall and per group, a page of at most `limit` groups (`has_more`, `next_offset`): a minute
 * grain over a year would otherwise be one answer of ~525k groups. Records still queued are flushed first, so
 * the answer includes every request finished before the query.
 */
export async function handleUsage(request: ClientRequest, ctx: RequestContext): Promise<Response> {
  const store = ctx.services.usageStore;
  if (store === null) {
    throw new GatewayError(503, "No usage store is configured (usage.sqlite is none).", {
      type: "server_error",
      code: "usage_store_disabled",
    });
  }
  const query = parseUsageQuery(request.url);
  await store.flush();
  let report;
  try {
    report = await store.query(query);
  } catch (err) {
    if (err instanceof UsageQueryError) throw invalidRequest(err.message, err.param, "invalid_value");
    throw err;
  }
  return new Response(JSON.stringify({ object: "usage_report", query, ...report }), { headers: JSON_TYPE });
}

const REDACTED = "***";

/**
 * A provider's config with every secret redacted. Secret positions are `isSecretPath`'s, the rule that also
 * keeps secrets out of interpolation and error messages, so a secret field added there is redacted here too.
 * Paths are relative to the provider, so a provider's name never makes its fields look secret.
 */
function redactSecrets(value: unknown, path: readonly PathSegment[]): unknown {
  if (value === undefined) return undefined;
  if (path.length > 0 && isSecretPath(path)) return REDACTED;
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((item, i) => redactSecrets(item, [...path, i]));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = redactSecrets(item, [...path, key]);
  return out;
}

function redactProvider(config: ProviderConfig): Record<string, unknown> {
  return redactSecrets(config, []) as Record<string, unknown>;
}

/**
 * Each token once. The served map is keyed by secret, so a token issued through the admin API has one entry
 * per live secret (a rotated-out one until its grace end, with that end as its expiry, even once it passed:
 * the map is rebuilt only on a change). The token's own expiry is its latest entry's (its current secret's).
 */
function eachTokenOnce(tokens: Iterable<ResolvedToken>): ResolvedToken[] {
  const byId = new Map<string, ResolvedToken>();
  for (const token of tokens) {
    const seen = byId.get(token.id);
    const later = seen !== undefined && seen.expiresAt !== null &&
      (token.expiresAt === null || token.expiresAt > seen.expiresAt);
    if (seen === undefined || later) byId.set(token.id, token);
  }
  return [...byId.values()];
}

/**
 * `GET /admin/config`: the live, resolved config (defaults filled in) with every secret redacted: provider
 * keys and credentials, provider header values, and token hashes. `tokens` are those served, each once: the
 * file's and those issued through the admin API (not revoked), with the token's own `expires_at`.
 */
export function handleConfig(_request: ClientRequest, ctx: RequestContext): Response {
  const config = ctx.state.config;
  const body = {
    source: config.source,
    server: config.server,
    routing: config.routing,
    usage: config.usage,
    providers: Object.fromEntries([...config.providers].map(([name, p]) => [name, redactProvider(p)])),
    models: Object.fromEntries([...config.models].map(([alias, m]) => [alias, {
      type: m.type,
      strategy: m.strategy,
      owned_by: m.ownedBy,
      created: m.created,
      limits: m.limits,
      content_rules: m.contentRules.map((r) => ({
        name: r.name,
        pattern: r.regex.source,
        flags: r.regex.flags,
        action: r.action,
        message: r.message,
        replacement: r.replacement,
      })),
      targets: m.targets.map((t) => ({
        provider: t.provider,
        model: t.model,
        weight: t.weight,
        retries: t.retries,
        max_in_flight: t.maxInFlight,
        price: t.price,
        timeouts: t.timeouts,
      })),
    }])),
    tokens: eachTokenOnce(config.tokens.values()).map((t) => ({
      name: t.name,
      environment: t.environment,
      sha256: REDACTED,
      models: t.patterns,
      limits: t.limits,
      budget: t.budget,
      endpoints: t.endpoints === null ? null : [...t.endpoints],
      max_tokens: t.maxTokens,
      expires_at: t.expiresAt === null ? null : new Date(t.expiresAt).toISOString(),
      disabled: t.disabled,
    })),
    admin_tokens: [...config.adminTokens.values()].map((t) => ({
      name: t.name,
      environment: t.environment,
      sha256: REDACTED,
      disabled: t.disabled,
    })),
  };
  return new Response(JSON.stringify(body), { headers: JSON_TYPE });
}

/** `GET /metrics`: Prometheus text exposition (every worker's, summed, when several serve). */
export async function handleMetrics(_request: ClientRequest, ctx: RequestContext): Promise<Response> {
  const services = ctx.services;
  const text = services.workerMetrics === undefined
    ? services.metrics.render()
    : await services.workerMetrics();
  return new Response(text, { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } });
}

/**
 * The resolved configuration: immutable, fully defaulted and cross-checked, with lookups prepared so that the
 * request path does no parsing. A request holds the one it started with; a reload swaps it whole.
 *
 * @module
 */
import type {
  BudgetConfig,
  ConfigOutput,
  Endpoint,
  EndUserLimitsConfig,
  LimitsConfig,
  ModelType,
  PostgresConfig,
  PriceConfig,
  ProviderConfig,
  RedisConfig,
  ResponsesConfig,
  RoutingConfig,
  Strategy,
  UsageConfig,
} from "./schema.ts";
import type { Scrubber } from "../secrets/scrubber.ts";
import type { CacheStoreConfig } from "./cache_schema.ts";
import type { TelemetryConfig } from "./telemetry_schema.ts";
import type { AlertsConfig } from "./alerts_schema.ts";
import type { ResolvedGuardrail } from "../guardrails/resolved.ts";

/** Timeouts in milliseconds after merging target over provider over server defaults. */
export interface EffectiveTimeouts {
  readonly firstByteMs: number;
  readonly idleMs: number;
  readonly totalMs: number;
}

/** One place an alias can send a request to. */
export interface ResolvedTarget {
  /** The provider's name in config. */
  readonly provider: string;
  readonly providerConfig: ProviderConfig;
  /** The upstream model id (for Azure, the deployment). */
  readonly model: string;
  readonly timeouts: EffectiveTimeouts;
  /**
   * How much is read from the upstream (`server.upstream_limits`). Absent only in targets built by hand (tests):
   * the schema's defaults apply then.
   */
  readonly limits?: UpstreamLimits;
}

/** Bounds on what is read from an upstream, in bytes. */
export interface UpstreamLimits {
  /** A whole (non-streamed) answer or error body, counted after decompression. */
  readonly maxBodyBytes: number;
  /** One SSE event or one event-stream message of a streamed answer. */
  readonly maxEventBytes: number;
  /** A whole streamed answer, as it arrives (decompressed); absent, unbounded (`max_stream_size` unset). */
  readonly maxStreamBytes?: number;
}

/** A target as routing sees it: where to send, plus how to share load and retry. */
export interface RoutedTarget extends ResolvedTarget {
  /**
   * Identity of the target for health tracking: provider name, model and the provider's settings, so health
   * carries over a reload exactly when the same upstream is still configured.
   */
  readonly key: string;
  readonly weight: number;
  readonly maxInFlight: number | null;
  readonly retries: number;
  /** Price per million tokens, when configured. */
  readonly price: PriceConfig | null;
  /** Where `price` came from: the target's own `price:`, or the price catalog (absent: own, or none). */
  readonly priceFrom?: "config" | "catalog";
  /**
   * Tried only after every target of the request's alias without it, each group in the strategy's order: a
   * translated target a request falls back to when it uses what the alias's native targets serve better (a
   * built-in tool), set per request by `servingTargets` (lib/http/tolerance.ts). Absent on configured targets.
   */
  readonly fallbackOnly?: boolean;
}

/** A compiled content rule of an alias. */
export interface ResolvedContentRule {
  readonly name: string;
  /** Compiled with the rule's flags plus `g`, so it can both test and replace every match. */
  readonly regex: RegExp;
  readonly action: "deny" | "redact";
  readonly message: string | null;
  readonly replacement: string;
}

/** A model alias as clients see it. */
export interface ResolvedModel {
  readonly alias: string;
  readonly type: ModelType;
  readonly strategy: Strategy;
  readonly targets: readonly RoutedTarget[];
  readonly ownedBy: string;
  /** Unix seconds. */
  readonly created: number;
  /** Limits shared by every token using this alias, or null. */
  readonly limits: LimitsConfig | null;
  readonly contentRules: readonly ResolvedContentRule[];
  /** Whether a translated target may serve a request without some of its fields (see docs/endpoints.md). */
  readonly strict: boolean;
  /** What this alias caches, or null: not cached (lib/cache/). */
  readonly cache?: ResolvedAliasCache | null;
  /** Limits per end user of this alias, or null/absent. */
  readonly endUserLimits?: EndUserLimitsConfig | null;
  /** Guardrails attached to this alias (`guardrails:` by name), in order; absent: none. */
  readonly guardrails?: readonly ResolvedGuardrail[];
}

/**
 * A team of tokens (`teams:`): one budget and one set of limits its members share, and a model scope that
 * bounds theirs. Its counters are keyed by {@linkcode ResolvedTeam.id}.
 */
export interface ResolvedTeam {
  readonly name: string;
  /**
   * `team_<name>` for a config team (the config file is its namespace, so the name is the identity); a team
   * made through the admin API has its stored id (`tm_…`), which a later team of the same name never gets.
   */
  readonly id: string;
  readonly description: string | null;
  readonly budget: BudgetConfig | null;
  readonly limits: LimitsConfig | null;
  /** The team's alias patterns as written, or null: it does not narrow its members' models. */
  readonly patterns: readonly string[] | null;
  /**
   * Where it is defined: the config file (`config`, also when absent) or the admin API (`api`: made through
   * `POST /admin/teams`, `id` then its stored `tm_…` id, merged in by the token directory).
   */
  readonly source?: "config" | "api";
}

/** A team's counter identity (see {@linkcode ResolvedTeam.id}). */
export function teamId(name: string): string {
  return `team_${name}`;
}

/** An alias's cache settings, resolved. */
export interface ResolvedAliasCache {
  readonly ttlMs: number;
  readonly scope: "token" | "environment" | "shared";
  readonly incomplete: boolean;
  readonly toolCalls: boolean;
  readonly n: boolean;
  /**
   * What serves the alias (its strategy and its targets' health identities, which hash their providers'
   * settings): part of every key, so a reload that changes the targets never replays the old ones' answers.
   */
  readonly version: string;
  readonly semantic:
    | {
      readonly embeddings: string;
      readonly threshold: number;
      readonly maxEntries: number;
      /** How long the lookup waits for its embedding before it is a miss. */
      readonly timeoutMs: number;
    }
    | null;
}

/** What a token does with the response cache: its `Cache-Control`, applied to each of its requests. */
export interface ResolvedTokenCache {
  readonly noStore: boolean;
  readonly noCache: boolean;
  readonly maxAgeMs: number | null;
}

/** A client token, keyed by its SHA-256; the token itself is never kept. */
export interface ResolvedToken {
  readonly name: string;
  readonly environment: string;
  /** Lower-case hex. */
  readonly sha256: string;
  /** The alias patterns as written, for display. */
  readonly patterns: readonly string[];
  /** The aliases this token may use, expanded from its patterns at load time. */
  readonly aliases: ReadonlySet<string>;
  /** Epoch milliseconds after which the token is refused, if any. */
  readonly expiresAt: number | null;
  readonly disabled: boolean;
  readonly limits: LimitsConfig | null;
  readonly budget: BudgetConfig | null;
  /** The endpoints the token may call, or null for all. */
  readonly endpoints: ReadonlySet<Endpoint> | null;
  /** Ceiling on max_tokens / max_completion_tokens, or null. */
  readonly maxTokens: number | null;
  /** Its cache controls (`cache: false` is `noStore`), or null/absent: as its requests' headers say. */
  readonly cache?: ResolvedTokenCache | null;
  /** The team it belongs to, or null/absent. Its `aliases` are already narrowed to the team's models. */
  readonly team?: ResolvedTeam | null;
  /** Limits per end user of this token's application, or null/absent. */
  readonly endUserLimits?: EndUserLimitsConfig | null;
  /** Guardrails attached to this token, run after the alias's; absent: none. */
  readonly guardrails?: readonly ResolvedGuardrail[];
  /**
   * The token's immutable identity: the admin API's id (`tok_…`) for an issued token, `cfg_<name>` for a token
   * of the config file. Everything kept per token (stored responses, limit and budget counters) is keyed by it,
   * never by the name, which a revoked token frees for another.
   */
  readonly id: string;
  /** Where the token comes from: the config file (absent means the same) or the admin API. */
  readonly source?: "config" | "api";
}

/** Config tokens' ids are this and their name (see {@linkcode ResolvedToken.id}). */
export const CONFIG_TOKEN_ID_PREFIX = "cfg_";

/**
 * The identity of the config file's token `name`. The file is the operator's namespace: the token named there
 * is the same token across reloads and restarts, even when its secret changes (a rotation by hand), and it
 * never shares an identity with an issued token (`tok_…`), whatever their names.
 */
export function configTokenId(name: string): string {
  return `${CONFIG_TOKEN_ID_PREFIX}${name}`;
}

/** An admin token: may call `/admin/*`, nothing else. */
export interface ResolvedAdminToken {
  readonly name: string;
  readonly environment: string;
  readonly sha256: string;
  readonly expiresAt: number | null;
  readonly disabled: boolean;
}

/** The configuration the gateway runs on. */
export interface ResolvedConfig {
  readonly server: ConfigOutput["server"];
  readonly routing: RoutingConfig;
  readonly usage: UsageConfig;
  /** Stored responses (`/v1/responses`): how long they are kept. */
  readonly responses: ResponsesConfig;
  /** The shared counter store of a fleet, or null: counters in memory. Read at start (a reload keeps it). */
  readonly redis: RedisConfig | null;
  /** The shared record store of a fleet, or null: SQLite. Read at start (a reload keeps it). */
  readonly postgres: PostgresConfig | null;
  /** The response cache's store and bounds. Read at start (a reload keeps the store it has). */
  readonly cache: CacheStoreConfig;
  /** The price catalog the targets without a `price:` of their own were priced from: its date and source. */
  readonly catalog?: { readonly date: string; readonly source: string };
  /** Where prices come from (`pricing.catalog`: an operator's catalog file), or null: the built-in catalog. */
  readonly pricing?: { readonly catalog?: string } | null;
  /** OpenTelemetry export as the file sets it, or null (the environment may still turn it on). Read at start. */
  readonly telemetry: TelemetryConfig | null;
  /** Alert webhooks (`alerts:`); absent in configs built by hand: none. Read at start. */
  readonly alerts?: AlertsConfig;
  readonly providers: ReadonlyMap<string, ProviderConfig>;
  readonly models: ReadonlyMap<string, ResolvedModel>;
  /** Tokens by lower-case hex SHA-256. */
  readonly tokens: ReadonlyMap<string, ResolvedToken>;
  /** Teams by name (absent in configs built by hand: none). */
  readonly teams?: ReadonlyMap<string, ResolvedTeam>;
  /**
   * The config's guardrails (`guardrails:`) by name, resolved once per config: what issued tokens attach by
   * name (absent in configs built by hand: none).
   */
  readonly guardrails?: ReadonlyMap<string, ResolvedGuardrail>;
  /** Admin tokens by lower-case hex SHA-256. */
  readonly adminTokens: ReadonlyMap<string, ResolvedAdminToken>;
  /** Where the config came from (a path, or "<default>"), for messages. */
  readonly source: string;
  /**
   * The line in that file of each start-only key and what it holds (`config/start_only.ts`), for the issues found
   * at start, which read this config rather than the file; absent in configs built by hand.
   */
  readonly lines?: Readonly<Record<string, number>>;
  /**
   * Masks every secret of this config (provider keys and header values, AWS credentials, plain tokens, `${VAR}`
   * secrets) in text that came from an upstream, before it reaches a client or a log. Swapped with the config.
   */
  readonly scrubber: Scrubber;
}

/** One problem found in a config file. Messages never contain secret values. */
export interface ConfigIssue {
  /** Dotted path with numeric indexes, e.g. `tokens.0.models.1`; empty for the document itself. */
  readonly path: string;
  /** 1-based line in the file, when the path could be located. */
  readonly line?: number;
  readonly message: string;
}

/** The outcome of loading a config: the resolved config or every issue found. */
export type LoadResult =
  | { readonly ok: true; readonly config: ResolvedConfig }
  | { readonly ok: false; readonly issues: readonly ConfigIssue[] };

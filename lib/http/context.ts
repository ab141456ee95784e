/**
 * What one request carries through the handlers: the config snapshot it started with, its identity once
 * authenticated, and the access-log record that the handlers fill in as they learn more.
 *
 * @module
 */
import type { CostBreakdown } from "../pricing/cost.ts";
import type { RequestGuardrails } from "../guardrails/request.ts";
import type { Alerts } from "../alerts/alerts.ts";
import type {
  ResolvedAdminToken,
  ResolvedConfig,
  ResolvedTarget,
  ResolvedToken,
  RoutedTarget,
} from "../config/types.ts";
import type { Logger } from "../log.ts";
import type { GenAiOperation } from "./endpoints.ts";
import type { GatewayMetrics } from "../metrics/gateway_metrics.ts";
import type { PolicyEngine } from "../policy/engine.ts";
import type { Admission } from "../policy/types.ts";
import type { AttemptTrace, Provider, UpstreamCall } from "../providers/types.ts";
import type { AttemptRecord, RouteDeps } from "../routing/route.ts";
import type {
  PolicyOutcome,
  RecordListQuery,
  RecordPage,
  UsageQuery,
  UsageRecord,
  UsageReport,
} from "../usage/record.ts";
import type { ResponsesStore } from "../usage/responses_store.ts";
import type { TokenDirectory } from "../tokens/directory.ts";
import type { ResponseCache } from "../cache/response_cache.ts";
import type { Telemetry } from "../telemetry/telemetry.ts";
import type { RequestTrace } from "../telemetry/request_trace.ts";

/** A config together with the providers built from it; swapped whole on reload. */
export interface GatewayState {
  readonly config: ResolvedConfig;
  readonly providers: ReadonlyMap<string, Provider>;
}

/** The access-log line of one request; never holds a token or prompt text (a type alias: a plain JSON record). */
export type AccessRecord = {
  request_id: string;
  method: string;
  path: string;
  token?: string;
  environment?: string;
  alias?: string;
  provider?: string;
  upstream_model?: string;
  /** "chat", "embeddings", "models", "other"; set for API requests only. */
  endpoint?: string;
  stream?: boolean;
  status?: number;
  error_code?: string | null;
  latency_ms?: number;
  ttft_ms?: number;
  prompt_tokens?: number;
  completion_tokens?: number;
  /** How many upstream attempts the request took, and each one's target and outcome. */
  attempts?: number;
  attempt_log?: AttemptRecord[];
  /** What the policy decided, and which rule denied or modified the request. */
  outcome?: PolicyOutcome;
  rule?: string | null;
  tokens_estimated?: boolean;
  cost?: number;
  /** What a translated target did not get of the request (comma-separated field paths; `tolerance.ts`). */
  dropped?: string;
  /** The request's trace id, when telemetry is on (the console links it to the tracing backend). */
  trace_id?: string;
  /** The response cache's outcome (`hit`, `hit_semantic`, `miss`, `bypass`); unset without a cache. */
  cache?: string;
  /** What a cache hit did not spend: prompt + completion tokens, money at the answering target's price. */
  saved_tokens?: number;
  saved_cost?: number;
};

/** Where finished requests are reported; writing never blocks or throws. */
export interface UsageSink {
  write(record: UsageRecord): void;
}

/** Policy, usage recording and metrics: shared by every request, and kept across config reloads. */
export interface GatewayServices {
  readonly policy: PolicyEngine;
  readonly usage: UsageSink | null;
  readonly metrics: GatewayMetrics;
  /** Flushes queued usage records so that admin queries see them; absent without a usage store. */
  readonly usageStore: UsageQueryable | null;
  /** Stored responses (`/v1/responses` unless `store: false`): the usage database's, else in memory. */
  readonly responses: ResponsesStore;
  /**
   * Tokens issued through the admin API (`/admin/tokens`), merged into every request's config; null without a
   * database to keep them in (the token routes then answer 503).
   */
  readonly tokens: TokenDirectory | null;
  /** The response cache (`models.<alias>.cache`), or null when no alias is cached. */
  readonly cache: ResponseCache | null;
  /** OpenTelemetry export, or null when it is off (then no request pays anything for it). */
  readonly telemetry: Telemetry | null;
  /** Alert webhooks (`alerts:`), or null/absent when none are configured. */
  readonly alerts?: Alerts | null;
  /**
   * The metrics of every worker of this gateway, summed (`serve --workers N`); absent when one thread serves
   * (then `/metrics` is `metrics.render()`).
   */
  readonly workerMetrics?: () => Promise<string>;
  /**
   * The shared counter and usage stores' state as their components last saw it, for `/readyz`: read from memory,
   * never a call to Redis or the database. Absent in a worker (`serve --workers N`): the primary owns the stores,
   * and asking it would make `/readyz` wait on another thread.
   */
  readonly stores?: () => StoresStatus;
}

/**
 * The counters of limits and budgets: `ok` is whether the last call to Redis succeeded (true before any call, and
 * always for `memory`); `on_failure` (Redis only) says what a request with a limit gets while it is false.
 */
export interface CountersStatus {
  readonly store: "memory" | "redis";
  readonly ok: boolean;
  readonly on_failure?: "fail_open" | "fail_closed";
}

/**
 * The usage database: `ok` is whether its last write succeeded (true before any); `spilling` whether records have
 * gone to the spill file since it last took a batch (they are replayed once it takes them again).
 */
export interface UsageStoreStatus {
  readonly store: "sqlite" | "postgres";
  readonly ok: boolean;
  readonly spilling: boolean;
}

/** What `/readyz` says about the shared stores; `usage` is null without a usage database. */
export interface StoresStatus {
  readonly counters: CountersStatus;
  readonly usage: UsageStoreStatus | null;
}

/** The part of the usage store the admin API reads. */
export interface UsageQueryable {
  flush(): Promise<void>;
  query(q: UsageQuery): Promise<UsageReport>;
  /** One page of the request log (`GET /admin/requests`). */
  listRecords(q: RecordListQuery): Promise<RecordPage>;
}

/** Per-request state handed down the middleware chain. */
export interface RequestContext {
  readonly requestId: string;
  readonly startedAt: number;
  /** The request's headers, for what a handler reads late (the response cache's `Cache-Control`). */
  readonly headers: Headers;
  readonly state: GatewayState;
  readonly logger: Logger;
  /** Target health, random source and clock shared by all requests (they outlive config reloads). */
  readonly routing: RouteDeps;
  readonly services: GatewayServices;
  /** What the policy admitted; settled once when the request is over. */
  admission?: Admission;
  /** The target that answered, for pricing. */
  answeredBy?: RoutedTarget;
  /**
   * The request's cost by token class, for its usage record. Kept off `record`, which is the access-log line:
   * the line keeps the total, and five more floats serialized on every request cost a measurable share of it.
   */
  cost?: CostBreakdown;
  /**
   * What the guardrails did to this request (lib/guardrails/): their outcomes for the usage record, the masker
   * whose placeholders an answer may give back, and whether the request must be served over the chat form (its
   * text was changed, or its answer is checked). Absent: no guardrail applies.
   */
  guardrails?: RequestGuardrails;
  /**
   * The GenAI operation the request asks of a model, which `/metrics` counts it under: its route's
   * (`genAiOperationOf`, set on arrival for API requests), or null from a handler that learns it asks none (a
   * prewarm). Kept off `record`: the access-log line has its path already, and each field costs every request.
   */
  operation?: GenAiOperation | null;
  readonly record: AccessRecord;
  /**
   * Aborts when the client goes away or the gateway ends the request at shutdown; what handlers pass upstream
   * instead of `request.signal`.
   */
  readonly signal: AbortSignal;
  /** Called once the request has been reported, to take it off the gateway's in-flight registry. */
  readonly reported: () => void;
  /** Called once its alias and stream flag are in `record` (`resolveAlias`): see `InFlightRequest.described`. */
  readonly described?: (tokenId: string | null) => void;
  identity?: ResolvedToken;
  /** The admin token that authenticated an `/admin` request (the audit trail's actor). */
  admin?: ResolvedAdminToken;
  /**
   * Set for a streamed answer, only by `deliver` (accounting.ts): settles once the body has finished (or failed,
   * or was cancelled) and its outcome is in the record.
   */
  streamDone?: Promise<void>;
  /**
   * When a streamed answer's body ended (`performance.now()`), set with its outcome: the latency and the spans
   * end there, not when `streamDone` settles, which waits for the gateway's own count of its tokens (the first
   * count of a process waits for the tokenizer to load: a second or more).
   */
  endedAt?: number;
  /**
   * Set while a routed stream waits for its client body (from routing until the answer runner builds the body):
   * cancels the upstream call and releases the target's lease. The error boundary calls it when the request
   * fails in between, so a failure there never leaves an upstream generating or a target's in-flight slot held.
   */
  abandon?: () => void;
  /** This request's spans, when telemetry is on. */
  trace?: RequestTrace;
  /** The span of the upstream attempt under way (its trace-context headers are sent upstream). */
  attemptTrace?: AttemptTrace;
}

/** The context of a route that needs a client token, once authenticated: its identity is known. */
export interface ClientContext extends RequestContext {
  readonly identity: ResolvedToken;
}

/** `ctx` with the identity its client token authenticated (the one place a context becomes a client's). */
export function withIdentity(ctx: RequestContext, identity: ResolvedToken): ClientContext {
  ctx.identity = identity;
  return ctx as ClientContext;
}

/**
 * The upstream call of `ctx`'s current attempt to `target`: the client's abort signal, the request id and the
 * attempt's span (set by routing before each attempt, so it is read here, when the attempt starts),
 * and the config's scrubber for the answer's identifiers.
 */
export function upstreamCall(ctx: RequestContext, target: ResolvedTarget): UpstreamCall {
  return {
    target,
    signal: ctx.signal,
    requestId: ctx.requestId,
    trace: ctx.attemptTrace,
    scrubber: ctx.state.config.scrubber,
  };
}

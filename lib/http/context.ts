/**
 * What one request carries through the handlers: the config snapshot it started with, its identity once
 * authenticated, and the access-log record that the handlers fill in as they learn more.
 *
 * @module
 */
import type { ResolvedConfig, ResolvedToken } from "../config/types.ts";
import type { Logger } from "../log.ts";
import type { Provider } from "../providers/types.ts";
import type { AttemptRecord, RouteDeps } from "../routing/route.ts";

/** A config together with the providers built from it; swapped whole on reload. */
export interface GatewayState {
  readonly config: ResolvedConfig;
  readonly providers: ReadonlyMap<string, Provider>;
}

/** The access-log line of one request; never holds a token or prompt text. */
export interface AccessRecord {
  request_id: string;
  method: string;
  path: string;
  token?: string;
  environment?: string;
  alias?: string;
  provider?: string;
  upstream_model?: string;
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
}

/** Per-request state handed down the middleware chain. */
export interface RequestContext {
  readonly requestId: string;
  readonly startedAt: number;
  readonly state: GatewayState;
  readonly logger: Logger;
  /** Target health, random source and clock shared by all requests (they outlive config reloads). */
  readonly routing: RouteDeps;
  readonly record: AccessRecord;
  identity?: ResolvedToken;
  /** Set by a streaming handler: settles when the response body has finished (or failed, or was cancelled). */
  streamDone?: Promise<void>;
}

/**
 * The one place where failures become OpenAI-shaped error bodies.
 *
 * Everything below the server throws {@linkcode GatewayError} (or lets an unexpected exception bubble up);
 * {@linkcode errorResponse} turns either into `{"error":{message,type,param,code}}` with the right status, so
 * a client never sees HTML, a stack trace or a half-formed body.
 *
 * @module
 */
import type { Scrubber } from "./secrets/scrubber.ts";
import { parseScrubbed } from "./secrets/scrub_json.ts";

/** OpenAI's error `type` values that the gateway emits. */
export type ErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "rate_limit_error"
  | "insufficient_quota"
  | "server_error"
  | "timeout_error"
  | "overloaded_error"
  | "requests"
  | "tokens";

/** The body of an OpenAI error, exactly as the `ErrorResponse` schema has it. */
export interface OpenAIErrorBody {
  error: {
    message: string;
    type: string;
    param: string | null;
    code: string | null;
  };
}

/** Options for {@linkcode GatewayError}. */
export interface GatewayErrorInit {
  type?: ErrorType | string;
  code?: string | null;
  param?: string | null;
  headers?: HeadersInit;
  cause?: unknown;
  /**
   * The error type an Anthropic upstream gave (`overloaded_error`, …), for answers in Anthropic's error shape:
   * kept so a client of `/v1/messages` learns the upstream's own type rather than one guessed from the status.
   */
  anthropicType?: string | null;
  /**
   * The `error.details` an Anthropic upstream gave (`{"error_code":"image_dimensions_too_large",…}`), bounded and
   * scrubbed: passed on in Anthropic's error shape, since its SDK picks the error's class by status and `error_code`.
   */
  anthropicDetails?: AnthropicErrorDetails | null;
  /**
   * The `error.details` a Google upstream gave (`google.rpc.RetryInfo`, `QuotaFailure`, …), bounded and scrubbed:
   * passed on in Google's error shape, since Gemini CLI decides by them whether and when to retry.
   */
  googleDetails?: readonly GoogleErrorDetail[] | null;
  /** The spent quota (a budget) that refuses the request until its period ends, for the shapes that say so. */
  quota?: QuotaReset | null;
}

/** An Anthropic error's `details`: an object of the upstream's own fields. */
export type AnthropicErrorDetails = { readonly [field: string]: unknown };
/** One of a Google error's `details`: a `google.rpc` message named by its `@type`. */
export type GoogleErrorDetail = { readonly "@type": string; readonly [field: string]: unknown };
/** A spent budget: whose (`token`, `team`, `end_user`), of what, per which period, reset when (epoch ms). */
export type QuotaReset = {
  readonly scope: string;
  readonly unit: "tokens" | "cost";
  readonly limit: number;
  readonly period: "day" | "month";
  readonly resetsAt: number;
};

/**
 * An error that already knows its HTTP status and OpenAI error fields. Its message is shown to the client,
 * so it must never contain a secret or prompt text.
 */
export class GatewayError extends Error {
  readonly status: number;
  readonly type: string;
  readonly code: string | null;
  readonly param: string | null;
  readonly headers: HeadersInit | undefined;
  readonly anthropicType: string | null;
  readonly anthropicDetails: AnthropicErrorDetails | null;
  readonly googleDetails: readonly GoogleErrorDetail[] | null;
  readonly quota: QuotaReset | null;

  constructor(status: number, message: string, init: GatewayErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "GatewayError";
    this.status = status;
    this.type = init.type ?? defaultType(status);
    this.code = init.code ?? null;
    this.param = init.param ?? null;
    this.headers = init.headers;
    this.anthropicType = init.anthropicType ?? null;
    this.anthropicDetails = init.anthropicDetails ?? null;
    this.googleDetails = init.googleDetails ?? null;
    this.quota = init.quota ?? null;
  }

  /** The OpenAI `ErrorResponse` body for this error. */
  toBody(): OpenAIErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }

  /**
   * This error pointing at another `param`, with another message, all else kept: how {@linkcode inClientTerms}
   * renames it.
   */
  withParam(param: string, message: string): GatewayError {
    return this.remade(message, { ...this.init(), param });
  }

  /**
   * A copy of this error with `message` and `init`: how {@linkcode GatewayError.withParam} and
   * {@linkcode scrubError} remake it. A subclass with a constructor or fields of its own overrides it to keep its
   * class and them, since what happens next is decided by class (a budget's stop is recorded as one, a policy
   * denial with its rule).
   */
  remade(message: string, init: GatewayErrorInit): GatewayError {
    return new GatewayError(this.status, message, init);
  }

  /** The fields this error was built with: what a copy is built from. */
  protected init(): GatewayErrorInit {
    return {
      type: this.type,
      code: this.code,
      param: this.param,
      headers: this.headers,
      cause: this.cause,
      anthropicType: this.anthropicType,
      anthropicDetails: this.anthropicDetails,
      googleDetails: this.googleDetails,
      quota: this.quota,
    };
  }
}

/** Why a client connection ended, when not because the client closed it: what its requests' records say. */
export interface ConnectionEnd {
  status: number;
  code: string;
  message: string;
}

/** The WebSocket ends the gateway makes for what its client did (lib/http/serial_session.ts). */
export const CLIENT_CAUSED_ENDS = {
  /** Too many messages waiting: closed with 1008. */
  queueFull: {
    status: 429,
    code: "websocket_queue_full",
    message: "Too many messages were waiting on the WebSocket: the gateway closed it (1008).",
  },
  /** A message over the size limit: closed by the edge with 1009. */
  tooBig: {
    status: 413,
    code: "websocket_message_too_large",
    message: "A message over the size limit closed the WebSocket (1009).",
  },
  /**
   * The connection lasted `server.connections.websocket_max_duration` (and the answer then in progress its
   * grace): closed with 1000, OpenAI's status and code for it.
   */
  maxDuration: {
    status: 400,
    code: "websocket_connection_limit_reached",
    message: "The WebSocket reached its maximum duration: the gateway closed it (1000).",
  },
} as const satisfies Record<string, ConnectionEnd>;

/**
 * The error codes of a request cut short by its client, or for what its client did: the caller's doing, not
 * the server failing (`client_closed_request`, and the codes of {@linkcode CLIENT_CAUSED_ENDS}).
 */
export const CLIENT_ENDED_CODES: ReadonlySet<string> = new Set([
  "client_closed_request",
  ...Object.values(CLIENT_CAUSED_ENDS).map((end) => end.code),
]);

/**
 * Thrown, and used as abort reason, when the client went away: 499 `client_closed_request`, the status the
 * access log and usage record show. The client never sees it (it is gone). When the gateway ended the
 * connection itself (a WebSocket it closed), `end` says why instead: the request is cut short the same way.
 */
export class ClientGoneError extends GatewayError {
  constructor(end?: ConnectionEnd) {
    super(end?.status ?? 499, end?.message ?? "The client closed the request.", {
      type: "invalid_request_error",
      code: end?.code ?? "client_closed_request",
    });
  }

  /** Remade (masked) still as the client's leaving, which retries and stream endings tell apart by class. */
  override remade(message: string, init: GatewayErrorInit): ClientGoneError {
    return new ClientGoneError({ status: this.status, code: init.code ?? "client_closed_request", message });
  }
}

/**
 * Where an error that names a chat-form `param` points in the request the client sent, and the message that
 * says so; `undefined` when the client's request names it the same (or the error is not one to rename).
 */
export type ClientTerms = (
  err: GatewayError & { readonly param: string },
) => { param: string; message: string } | undefined;

/**
 * `err` in the client's terms. A request of another client API (Responses, Messages) is translated to the
 * chat form before policy and the provider adapters see it, so what they refuse names a chat param
 * (`response_format`, `messages[1].content`) the client never sent. The rule is one for every such API; each
 * supplies only its `terms`. A renamed error keeps its class (a policy denial stays one, with its rule).
 * Anything that is not a `GatewayError` naming a param, and a client gone, is returned as it is.
 */
export function inClientTerms(err: unknown, terms: ClientTerms): unknown {
  if (!(err instanceof GatewayError) || err instanceof ClientGoneError || err.param === null) return err;
  const renamed = terms(err as GatewayError & { readonly param: string });
  return renamed === undefined ? err : err.withParam(renamed.param, renamed.message);
}

function defaultType(status: number): ErrorType {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "invalid_request_error";
  if (status === 429) return "rate_limit_error";
  if (status === 504) return "timeout_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

/** 400 `invalid_request_error`, the answer to most client mistakes. */
export function invalidRequest(message: string, param: string | null = null, code: string | null = null) {
  return new GatewayError(400, message, { type: "invalid_request_error", param, code });
}

/** 404 `model_not_found`; the same answer for unknown and forbidden aliases so tokens cannot probe. */
export function modelNotFound(alias: string): GatewayError {
  return new GatewayError(
    404,
    `The model \`${printable(alias)}\` does not exist or you do not have access to it.`,
    { type: "invalid_request_error", code: "model_not_found", param: null },
  );
}

/** 502 for an upstream that failed (5xx, bad body, connection refused). */
export function badGateway(message: string, code = "upstream_error"): GatewayError {
  return new GatewayError(502, message, { type: "server_error", code });
}

/** 504 for an upstream that did not answer in time. */
export function gatewayTimeout(message: string): GatewayError {
  return new GatewayError(504, message, { type: "timeout_error", code: "upstream_timeout" });
}

/**
 * `err` with every secret the scrubber knows masked in each field the client sees (message, type, param, code,
 * and every string and key of `anthropicDetails` and `googleDetails`, through JSON as the logger does): the last
 * step before an error that may carry upstream text leaves the gateway. Returns `err` itself when there is
 * nothing to mask and no details, so the common case allocates nothing.
 */
export function scrubError(err: GatewayError, scrubber: Scrubber): GatewayError {
  const fields = [err.message, err.type, err.param, err.code];
  const { anthropicDetails, googleDetails } = err;
  if (!anthropicDetails && !googleDetails && !fields.some((f) => f !== null && scrubber.test(f))) return err;
  const clean = (field: string | null) => field === null ? null : scrubber.scrub(field);
  const json = <T>(value: T): T => parseScrubbed(JSON.stringify(value), (text) => scrubber.scrub(text)) as T;
  // Remade in its own class: a budget's stop or a policy denial masked is still one (its record says so).
  return err.remade(scrubber.scrub(err.message), {
    type: scrubber.scrub(err.type),
    code: clean(err.code),
    param: clean(err.param),
    headers: err.headers,
    cause: err.cause,
    anthropicType: err.anthropicType,
    anthropicDetails: anthropicDetails && json(anthropicDetails),
    googleDetails: googleDetails && json(googleDetails),
    quota: err.quota,
  });
}

/**
 * Shortens and sanitises client-supplied text before it goes into an error message: no control characters,
 * at most 100 characters, so a hostile alias cannot forge log lines or bloat responses.
 */
export function printable(text: string): string {
  // deno-lint-ignore no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f]/g, "?");
  return clean.length > 100 ? `${clean.slice(0, 100)}…` : clean;
}

/**
 * A JSON error answer: `text` with `status`, the error's own headers and `content-type: application/json` (which
 * replaces any the error had). The headers go straight into the response's own list: a `Headers` built first
 * and given as the init is copied once more, entry by entry.
 */
export function jsonError(text: string, status: number, extra: HeadersInit | undefined): Response {
  const response = new Response(text, { status });
  const headers = response.headers;
  if (extra !== undefined) {
    if (extra instanceof Headers) extra.forEach((value, name) => headers.append(name, value));
    else if (Array.isArray(extra)) { for (const [name, value] of extra) headers.append(name, value); }
    else for (const name of Object.keys(extra)) headers.append(name, (extra as Record<string, string>)[name]);
  }
  headers.set("content-type", "application/json");
  return response;
}

/** Serialises an OpenAI error body with a status; the single way errors leave the gateway as JSON. */
export function errorResponse(err: GatewayError): Response {
  return jsonError(JSON.stringify(err.toBody()), err.status, err.headers);
}

/**
 * OpenAI's code for a prompt over the model's context window (400 `invalid_request_error`), on which SDK apps and
 * agents (Codex, opencode, LangChain's) compact the conversation. Each vendor's errors module gives it to that
 * vendor's too-long error.
 */
export const CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded";

/**
 * Maps anything thrown to a {@linkcode GatewayError}. Unknown exceptions become a generic 500 whose message
 * says nothing about internals; the caller logs the original.
 */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError(500, "The gateway had an internal error while processing your request.", {
    type: "server_error",
    code: "internal_error",
  });
}

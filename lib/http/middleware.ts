/**
 * The middlewares around every request: the error boundary, the single place failures become OpenAI-shaped
 * responses; the admin API's `Cache-Control: no-store`, the single place it is set; and the request's ending,
 * which settles its policy admission and reports it once, to the access log, the usage store and the metrics,
 * when the response (for streams, its body) is over.
 *
 * @module
 */
import { errorResponse, GatewayError, scrubError, toGatewayError } from "../errors.ts";
import { anthropicErrorResponse } from "../anthropic_errors.ts";
import { googleErrorResponse } from "../google_errors.ts";
import { PolicyDenied } from "../policy/engine.ts";
import { genAiProviderName } from "../providers/capabilities.ts";
import { isoNow } from "../timers/iso_now.ts";
import { logUnhandled } from "../log.ts";
import type { Middleware } from "./compose.ts";
import type { RequestContext } from "./context.ts";
import { noteOutputGuardrails, usageRecordOf } from "./accounting.ts";
import { dialectOf, endpointOf, genAiOperationOf, isAdminPath, matchRoute, ROUTES } from "./endpoints.ts";
import { webSocketOf } from "../runtime/types.ts";
import { consoleAnswerHeaders, isConsolePath } from "../console/console_headers.ts";

const SWITCHING_PROTOCOLS = 101;

/** The metrics route's path, from the endpoint table. */
const METRICS_PATH = ROUTES.metrics.path;

/**
 * Turns any failure into an error response in the shape of the request's API (OpenAI's, or Anthropic's on the
 * Messages API's routes and on `/v1/models` asked with `anthropic-version`, or Google's); unexpected ones are logged (without the request's
 * content) and answered with a generic 500. A policy denial is noted as the request's outcome.
 *
 * An answer made after its request ended (its client went away, or shutdown ended it: `ctx.signal`'s reason),
 * say once the gateway's own token count came in, is not sent either: its body is cancelled and the request
 * answered and recorded as that end says (499, 503 `server_shutdown`), as a request ended while its upstream was
 * asked is, with what the answer spent kept in its record. Sent as it was, it would be recorded a 200 its client
 * never got (the connection closed), or the client of a cut request would get a 200 while the gateway said it
 * ended it.
 */
export const errorBoundary: Middleware = async (_request, ctx, next) => {
  let response: Response;
  try {
    response = await next();
  } catch (err) {
    return errorAnswer(ctx, err);
  }
  const ended = ctx.signal.aborted && ctx.signal.reason instanceof GatewayError;
  // An accepted WebSocket handshake is the edge's to answer (the session ends its own requests).
  if (!ended || webSocketOf(response) !== undefined) return response;
  response.body?.cancel(ctx.signal.reason).catch(() => {});
  return errorAnswer(ctx, ctx.signal.reason);
};

/** The error response for `err`, in the shape of the request's API; see {@linkcode errorBoundary}. */
function errorAnswer(ctx: RequestContext, err: unknown): Response {
  if (!(err instanceof GatewayError)) logUnhandled(ctx.logger, ctx.requestId, err);
  if (err instanceof PolicyDenied) {
    ctx.record.outcome = "deny";
    ctx.record.rule = err.rule;
  }
  // Upstream text (a provider's error message, code or param) may quote a secret of the config: masked here,
  // before the client, the usage record or the access log sees it. A request whose client went away (499) or
  // that shutdown ended (503) failed for that reason, whatever the step it was on made of it (a body whose
  // connection closed mid-upload reads as unreadable, a client's 400).
  const aborted = ctx.signal.aborted && ctx.signal.reason instanceof GatewayError;
  const error = scrubError(toGatewayError(aborted ? ctx.signal.reason : err), ctx.state.config.scrubber);
  ctx.record.error_code = error.code ?? error.type;
  // The route table says which API's error shape a route speaks.
  const dialect = dialectOf(ctx.record.path, ctx.headers);
  const response = dialect === "anthropic"
    ? anthropicErrorResponse(error, ctx.requestId)
    : dialect === "google"
    ? googleErrorResponse(error)
    : errorResponse(error);
  if (ctx.record.provider) response.headers.set("x-gateway-provider", ctx.record.provider);
  if (ctx.record.upstream_model) response.headers.set("x-gateway-model", ctx.record.upstream_model);
  if (ctx.record.attempts) response.headers.set("x-gateway-attempts", String(ctx.record.attempts));
  // What the request went without, as its record says (an answer its output guardrails withheld: lib/answer/).
  if (ctx.record.dropped) response.headers.set("x-gateway-dropped", ctx.record.dropped);
  return response;
}

/**
 * `Cache-Control: no-store` on an answer under `/admin` (and of `/metrics`), called by {@linkcode finishRequest}
 * and nowhere else:
 * admin answers hold what no shared or browser cache may keep (a token's secret in the one answer that issues
 * it, the token list, the request log, the live config), and an error is no more cacheable than a success (a
 * 401 cached by a proxy would outlive the fix of the token). It is applied outside the error boundary, so the
 * boundary's answers (400, 401, 404, 405, 409, 413, 503, …) get it too, and it judges by the path alone, so an
 * admin path no route serves does, and a route added under `/admin` cannot forget it. (Not a middleware of its
 * own: one more layer in the chain measurably slowed every API request.) Answers under `/console` get the
 * console's security headers and, unless they say how to cache themselves, no-store (lib/console/console_headers.ts).
 */
function adminNoStore(path: string, response: Response): void {
  // `/metrics` too: the gateway's own numbers (by token, alias, provider), behind the admin token by default.
  if (isAdminPath(path) || path === METRICS_PATH) response.headers.set("cache-control", "no-store");
  // The console's errors (a file it does not have, a wrong method): its security headers, and no-store.
  else if (isConsolePath(path)) consoleAnswerHeaders(response);
}

/** `x-cache` for each cache outcome of the usage record. */
const X_CACHE: Readonly<Record<string, string>> = {
  hit: "HIT",
  hit_semantic: "HIT-SEMANTIC",
  miss: "MISS",
  bypass: "BYPASS",
};

/**
 * Ends the request once its response is complete: settles the admission with the real usage, writes the
 * usage record (API requests only, denied and failed ones included), updates the metrics and writes the
 * access-log line. Adds the `x-ratelimit-*` headers of the limits that applied to the response, and
 * `Cache-Control: no-store` to admin answers.
 */
export const finishRequest: Middleware = async (_request, ctx, next) => {
  const arrived = isoNow();
  const endpoint = endpointOf(ctx.record.path);
  ctx.record.endpoint = endpoint ?? undefined;
  // Known from the route before anything can fail, so a refused or failed request is counted under it too.
  if (endpoint !== null) ctx.operation = genAiOperationOf(ctx.record.method, ctx.record.path);
  const response = await next();
  // A routed stream no body took (the request failed between routing and its answer): ended here, once.
  ctx.abandon?.();
  // An accepted WebSocket handshake is answered `101 Switching Protocols` by the edge (a web Response cannot
  // carry it): that is what its client got and what its line says.
  ctx.record.status = webSocketOf(response) === undefined ? response.status : SWITCHING_PROTOCOLS;
  adminNoStore(ctx.record.path, response);
  if (ctx.admission) {
    for (const [name, value] of Object.entries(ctx.admission.headers)) response.headers.set(name, value);
  }
  // The response cache's part (lib/answer/cached_route.ts), on every answer of a cached alias, errors included:
  // one the cache had no part in (refused before its lookup by the policy or a parameter, a token count) is a
  // bypass. A request refused before its alias was resolved names none, so no alias's cache is told of.
  const alias = ctx.record.alias;
  if (
    ctx.record.cache === undefined && alias && ctx.services.cache && ctx.state.config.models.get(alias)?.cache
  ) {
    ctx.record.cache = "bypass";
  }
  if (ctx.record.cache !== undefined) response.headers.set("x-cache", X_CACHE[ctx.record.cache]);
  const report = () => {
    const record = ctx.record;
    // A stream's ends with its body, not after its usage was counted (streamDone waits for that).
    const endedAt = ctx.endedAt ?? performance.now();
    record.latency_ms = Math.round((endedAt - ctx.startedAt) * 100) / 100;
    ctx.admission?.settle({
      tokens: (record.prompt_tokens ?? 0) + (record.completion_tokens ?? 0),
      cost: record.cost ?? 0,
    });
    // The answer's guardrails are part of the outcome the spans, the usage record and the log line all show.
    if (ctx.guardrails) noteOutputGuardrails(ctx);
    // The spans end with the request: for a stream, after its last chunk (telemetry on only).
    ctx.trace?.end(
      record,
      matchRoute(record.path)?.spec.path,
      ctx.answeredBy && genAiProviderName(ctx.answeredBy),
      endedAt,
    );
    if (record.endpoint !== undefined) {
      const usage = usageRecordOf(ctx, arrived);
      ctx.services.usage?.write(usage);
      ctx.services.metrics.recordRequest(usage, ctx.operation ?? null);
      for (const attempt of record.attempt_log ?? []) ctx.services.metrics.recordAttempt(attempt);
    }
    ctx.logger.info("request", record);
  };
  // Reporting must never take the process down (an unhandled rejection would), whatever goes wrong in it.
  const finish = () => {
    try {
      report();
    } catch (err) {
      ctx.logger.error("request_report_failed", {
        request_id: ctx.requestId,
        error: err instanceof Error ? err.message : String(err),
      });
    } finally {
      ctx.reported();
    }
  };
  if (ctx.streamDone) ctx.streamDone.then(finish, finish);
  else finish();
  return response;
};

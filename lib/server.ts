/**
 * The gateway as one web-standard fetch handler, `(Request) => Promise<Response>`: request id, routing
 * table, authentication, and the single place where errors become responses. Runtime specifics (listening,
 * signals) live in `runtime/`, so Deno and Bun serve the same handler.
 *
 * @module
 */
import { authenticate, authenticateAdmin } from "./auth/authenticate.ts";
import { GatewayError, printable } from "./errors.ts";
import type { ClientConnection, ClientRequest, EdgeHandler } from "./runtime/types.ts";
import { handleChatCompletions } from "./api/chat/handlers.ts";
import {
  type AccessRecord,
  type ClientContext,
  type GatewayServices,
  type GatewayState,
  type RequestContext,
  withIdentity,
} from "./http/context.ts";
import { type Answer, deliver } from "./http/accounting.ts";
import { compose, type Handler } from "./http/compose.ts";
import {
  handleAlerts,
  handleAudit,
  handleConfig,
  handleExplain,
  handleMetrics,
  handleReload,
  handleRequests,
  handleTargets,
  handleTeam,
  handleTeams,
  handleToken,
  handleTokenRotate,
  handleTokens,
  handleUsage,
} from "./api/admin/handlers.ts";
import { handleEmbeddings } from "./api/embeddings/handlers.ts";
import { handleModerations } from "./api/moderations/handlers.ts";
import { handleConsole, handleConsoleAsset } from "./console/serve_console.ts";
import { authOf, dialectOf, matchRoute, routeDialect, type RouteId, type ROUTES } from "./http/endpoints.ts";
import { InFlightRequests, type InFlightSubject } from "./http/in_flight.ts";
import { errorBoundary, finishRequest } from "./http/middleware.ts";
import { handshakeError } from "./http/websocket_handshake.ts";
import { handleMessages, handleMessagesCountTokens } from "./api/messages/handlers.ts";
import { handleGetModel, handleListModels } from "./api/models/handlers.ts";
import {
  handleCancelResponse,
  handleInputItems,
  handleResponses,
  handleResponsesCompact,
  handleResponsesInputTokens,
  handleResponsesWebSocket,
  handleStoredResponse,
} from "./api/responses/handlers.ts";
import type { MessageDispatch, MessageHandler } from "./http/frame_request.ts";
import { unknownUrl } from "./http/unknown_url.ts";
import { handleGeminiModel, handleGeminiModels } from "./api/gemini/handlers.ts";
import type { Logger } from "./log.ts";
import { GatewayMetrics } from "./metrics/gateway_metrics.ts";
import { createMemoryCounterStore } from "./policy/memory_counter_store.ts";
import { createPolicyEngine } from "./policy/engine.ts";
import type { Reloader } from "./reload.ts";
import { HealthRegistry } from "./routing/health.ts";
import { abortableSleep, type RouteDeps } from "./routing/route.ts";
import { createMemoryResponsesStore } from "./usage/responses_store_memory.ts";
import { guardResponsesStore } from "./usage/responses_store_guard.ts";

const JSON_TYPE = { "content-type": "application/json" };

const health: Handler = () => new Response('{"status":"ok"}', { headers: JSON_TYPE });

/** A route's handler; `param` is the path parameter, if the route has one. */
type RouteHandler = (
  request: ClientRequest,
  ctx: RequestContext,
  param: string,
) => Promise<Response> | Response;

/**
 * A client route's handler: it gets the authenticated identity and returns its answer with its outcome
 * (usage, time to first token, how a stream ended), which {@linkcode deliver} writes into the access record.
 */
type ClientHandler = (request: ClientRequest, ctx: ClientContext, param: string) => Promise<Answer>;

/** The handler of every route in the endpoint table; null for a route this gateway does not serve. */
type RouteHandlers = {
  [K in RouteId]: (typeof ROUTES)[K]["auth"] extends "client" ? ClientHandler : RouteHandler | null;
};

function routeHandlers(options: GatewayOptions): RouteHandlers {
  const reloader = options.reloader;
  return {
    chat: handleChatCompletions,
    embeddings: handleEmbeddings,
    moderations: handleModerations,
    responses: handleResponses,
    responsesInputTokens: handleResponsesInputTokens,
    responsesCompact: handleResponsesCompact,
    response: handleStoredResponse,
    responseInputItems: handleInputItems,
    responseCancel: handleCancelResponse,
    messages: handleMessages,
    messagesCountTokens: handleMessagesCountTokens,
    geminiModels: handleGeminiModels,
    geminiModel: handleGeminiModel,
    models: handleListModels,
    model: (_req, ctx, alias) => handleGetModel(alias, ctx),
    healthz: health,
    readyz: (_req, ctx) => readiness(ctx, options),
    targets: handleTargets,
    usage: handleUsage,
    config: handleConfig,
    metrics: handleMetrics,
    reload: reloader === undefined ? null : () => handleReload(reloader.reload),
    tokens: handleTokens,
    token: handleToken,
    tokenRotate: handleTokenRotate,
    audit: handleAudit,
    explain: handleExplain,
    requests: handleRequests,
    teams: handleTeams,
    team: handleTeam,
    alerts: handleAlerts,
    console: handleConsole,
    consoleAsset: handleConsoleAsset,
  };
}

/** At most this many places of a failed reload's issues are listed on `/readyz`. */
const READYZ_ISSUES = 5;

/**
 * Ready while a valid config is loaded, which is always true once serving. A failed reload does not make the
 * gateway unready (it keeps serving the previous config), but is reported here for operators and probes: how
 * many issues, and where the first few are (`line 4: providers.up.api_key:…`), never what they say. `/readyz`
 * answers anyone who reaches the port, and a message quotes the file (names, a value written into a key);
 * the messages are in the `config_reload_failed` log line, `check`'s output and `POST /admin/reload`'s answer.
 */
async function readiness(ctx: RequestContext, options: GatewayOptions): Promise<Response> {
  const last = options.reloader?.status() ?? null;
  // The response cache's store, asked now (bounded by its timeout; once per probe interval while it is down): a
  // store that is down never makes the gateway unready (requests bypass the cache), but operators see it here.
  const cache = ctx.services.cache;
  const cacheStatus = cache === null ? null : {
    store: cache.store.kind,
    ok: await cache.check(),
  };
  // Tokens issued through the admin API: whether they are current or served from the last load (fail static).
  const tokens = ctx.services.tokens?.status() ?? null;
  // The counters (Redis) and the usage database as their components last saw them: facts, not readiness. Under
  // `fail_open` the node keeps serving and a failed usage write spills, so neither changes the status code.
  const stores = ctx.services.stores?.();
  const body = {
    status: "ready",
    config: ctx.state.config.source,
    models: ctx.state.config.models.size,
    cache: cacheStatus,
    tokens: tokens === null || tokens.error === null
      ? tokens
      : { ...tokens, error: ctx.state.config.scrubber.scrub(tokens.error) },
    // Left out in a worker (`serve --workers N`), which does not own the stores.
    ...(stores === undefined ? {} : { counters: stores.counters, usage: stores.usage }),
    reload: last === null ? null : {
      ok: last.ok,
      at: last.at,
      trigger: last.trigger,
      errors: last.issues.length,
      issues: last.issues.slice(0, READYZ_ISSUES).map((i) =>
        `${i.line === undefined ? "" : `line ${i.line}: `}${i.path === "" ? "(document)" : i.path}`
      ),
      // Keys in the file not in effect until a restart (names of keys only).
      restart_required: last.restart_required,
    },
  };
  return new Response(JSON.stringify(body), { headers: JSON_TYPE });
}

/**
 * A client route that also takes a WebSocket (`GET` with `Upgrade: websocket`): its handler answers the
 * authenticated handshake (`acceptWebSocket`, lib/runtime/types.ts) and runs each message as a request of the
 * gateway through `dispatch`.
 */
type WebSocketHandler = (request: ClientRequest, ctx: ClientContext, dispatch: MessageDispatch) => Response;

const WEBSOCKETS: Partial<Record<RouteId, WebSocketHandler>> = { responses: handleResponsesWebSocket };

/** Does the request ask to become a WebSocket? */
function isWebSocketUpgrade(request: ClientRequest): boolean {
  return request.method === "GET" && request.headers.get("upgrade")?.toLowerCase() === "websocket";
}

/**
 * The client identity of a request, written into its access record: the config's tokens and the stored ones
 * the directory merged into them; a key that is none of them is a 503 while the stored ones have never loaded.
 */
function clientIdentity(
  request: ClientRequest,
  ctx: RequestContext,
  dialect?: "anthropic" | "google",
  sharedWith?: "anthropic",
) {
  const unloaded = ctx.services.tokens?.unloaded() ?? false;
  const identity = authenticate(request, ctx.state.config, Date.now(), dialect, sharedWith, unloaded);
  ctx.record.token = identity.name;
  ctx.record.environment = identity.environment;
  return identity;
}

/**
 * Routes the request; 404 for unknown paths, 405 (with `Allow`) for a known path with the wrong method. A
 * WebSocket handshake is a `GET` on a route of other methods, so it is looked for only on that path to the 405.
 */
const router = (options: GatewayOptions, dispatch: MessageDispatch): Handler => {
  const handlers: Record<RouteId, RouteHandler | ClientHandler | null> = routeHandlers(options);
  const served = (path: string) => {
    const match = matchRoute(path);
    return match !== undefined && handlers[match.id] !== null;
  };
  return (request, ctx) => {
    const path = ctx.record.path;
    const match = matchRoute(path);
    const handle = match === undefined ? null : handlers[match.id];
    if (match === undefined || handle === null) throw unknownUrl(request.method, path, served);
    const methods = match.spec.methods;
    const method = request.method === "HEAD" ? "GET" : request.method;
    if (!methods.includes(method)) {
      const webSocket = WEBSOCKETS[match.id];
      if (webSocket !== undefined && isWebSocketUpgrade(request)) {
        const identity = clientIdentity(request, ctx);
        const refused = handshakeError(request.headers);
        if (refused !== null) throw refused;
        return webSocket(request, withIdentity(ctx, identity), dispatch);
      }
      throw new GatewayError(
        405,
        `Method ${printable(request.method)} is not allowed for ${printable(path)}.`,
        {
          type: "invalid_request_error",
          code: "method_not_allowed",
          headers: { allow: (methods.includes("GET") ? [...methods, "HEAD"] : methods).join(", ") },
        },
      );
    }
    const auth = authOf(match.spec, ctx.state.config);
    if (auth === "none") return (handle as RouteHandler)(request, ctx, match.param);
    if (auth === "admin") {
      const admin = authenticateAdmin(request, ctx.state.config);
      ctx.admin = admin;
      ctx.record.token = admin.name;
      ctx.record.environment = admin.environment;
      return (handle as RouteHandler)(request, ctx, match.param);
    }
    const spec = match.spec;
    const identity = clientIdentity(request, ctx, routeDialect(spec, request.headers), spec.sharedWith);
    return (handle as ClientHandler)(request, withIdentity(ctx, identity), match.param)
      .then((answer) => deliver(ctx, answer));
  };
};

/** The path of a request URL without allocating a `URL` (the hot path runs this for every request). */
function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const end = url.slice(start).search(/[?#]/);
  return end < 0 ? url.slice(start) : url.slice(start, start + end);
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:@\/+=-]{1,128}$/;

/** 16 random hex digits per process: request ids from different processes and restarts never collide. */
const REQUEST_ID_PREFIX = Array.from(
  crypto.getRandomValues(new Uint8Array(8)),
  (b) => b.toString(16).padStart(2, "0"),
)
  .join("");
let requestCounter = 0;

/**
 * The client's `x-request-id` when it is sane, else a fresh `req_<32 hex>`: the process prefix and a counter
 * (unique like a random UUID, at a fraction of its cost per request; ids are for correlation, not secrets).
 */
export function requestIdFor(request: ClientRequest): string {
  const given = request.headers.get("x-request-id");
  if (given !== null && SANE_REQUEST_ID.test(given)) return given;
  return `req_${REQUEST_ID_PREFIX}${(requestCounter++).toString(16).padStart(16, "0")}`;
}

/** Options for {@linkcode createGateway}. */
export interface GatewayOptions {
  /** Returns the state a new request should use; called once per request, so a reload swaps it whole. */
  state: () => GatewayState;
  logger: Logger;
  /** Routing's health registry, random source and clock; defaults suit production. */
  routing?: Partial<RouteDeps>;
  /** Reload status for `/readyz` and the trigger for `POST /admin/reload`, when serving a config file. */
  reloader?: Pick<Reloader, "status" | "reload">;
  /**
   * Policy, usage store, metrics and stored responses; by default an in-memory policy, no usage store, fresh
   * metrics and an in-memory responses store.
   */
  services?: Partial<GatewayServices>;
  /** Where open requests are registered, so shutdown can end them; by default a registry of its own. */
  inFlight?: InFlightRequests;
}

/** The services a gateway runs with, defaults filled in. */
export function gatewayServices(given: Partial<GatewayServices> = {}): GatewayServices {
  return {
    policy: given.policy ?? createPolicyEngine(createMemoryCounterStore()),
    usage: given.usage ?? null,
    usageStore: given.usageStore ?? null,
    metrics: given.metrics ?? new GatewayMetrics(),
    // Every client-supplied id is checked once, here, whichever store keeps the responses (client_text.ts).
    responses: guardResponsesStore(given.responses ?? createMemoryResponsesStore()),
    tokens: given.tokens ?? null,
    cache: given.cache ?? null,
    telemetry: given.telemetry ?? null,
    alerts: given.alerts ?? null,
    ...(given.workerMetrics === undefined ? {} : { workerMetrics: given.workerMetrics }),
    ...(given.stores === undefined ? {} : { stores: given.stores }),
  };
}

/** Production routing dependencies, with any given ones swapped in. */
export function routeDeps(given: Partial<RouteDeps> = {}): RouteDeps {
  return {
    health: given.health ?? new HealthRegistry(),
    random: given.random ?? Math.random,
    sleep: given.sleep ?? abortableSleep,
    now: given.now ?? Date.now,
  };
}

/** The chain of a WebSocket message's request: the client route's, with the message's handler. */
function messageChain(handler: MessageHandler): Handler {
  return compose([finishRequest, errorBoundary], (request, ctx) => {
    const identity = clientIdentity(request, ctx);
    return handler(request, withIdentity(ctx, identity)).then((answer) => deliver(ctx, answer));
  });
}

/** The gateway's fetch handler. */
export function createGateway(options: GatewayOptions): EdgeHandler {
  const messageChains = new Map<MessageHandler, Handler>();
  const dispatch: MessageDispatch = Object.assign(
    (request: ClientRequest, handler: MessageHandler, overrides?: Partial<GatewayServices>) => {
      let chain = messageChains.get(handler);
      if (chain === undefined) messageChains.set(handler, chain = messageChain(handler));
      return serve(request, chain, overrides);
    },
    { waiting: (subject: InFlightSubject) => inFlight.waiting(subject) },
  );
  const chain = compose([finishRequest, errorBoundary], router(options, dispatch));
  const routing = routeDeps(options.routing);
  const services = gatewayServices(options.services);
  const inFlight = options.inFlight ?? new InFlightRequests();
  const serve = async (
    request: ClientRequest,
    chain: Handler,
    overrides?: Partial<GatewayServices>,
    client?: ClientConnection,
  ): Promise<Response> => {
    const requestId = requestIdFor(request);
    const record: AccessRecord = { request_id: requestId, method: request.method, path: pathOf(request.url) };
    const open = inFlight.start(client?.signal ?? request.signal, record);
    const base = options.state();
    const ctx: RequestContext = {
      requestId,
      startedAt: performance.now(),
      headers: request.headers,
      // Tokens issued through the admin API join the config's (memoized: two reference checks per request).
      state: services.tokens === null ? base : services.tokens.apply(base),
      logger: options.logger,
      routing,
      services: overrides === undefined ? services : { ...services, ...overrides },
      record,
      signal: open.signal,
      reported: open.done,
      described: open.described,
    };
    if (services.telemetry !== null) {
      // The spans mask the secrets of the config this request runs under, as its errors and records do.
      ctx.trace = services.telemetry.startRequest(request, requestId, ctx.state.config.scrubber);
      record.trace_id = ctx.trace.traceId;
    }
    const response = await chain(request, ctx);
    response.headers.set("x-request-id", requestId);
    // Anthropic's clients read the request id from `request-id` (their SDKs put it on errors).
    if (dialectOf(record.path, request.headers) === "anthropic") {
      response.headers.set("request-id", requestId);
    }
    return response;
  };
  return (request, client) => serve(request, chain, undefined, client);
}

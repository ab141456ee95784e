/**
 * The endpoint table: one row per route the gateway serves, with its path, methods, credential, endpoint name
 * and model type. The router, accounting, metrics labels, the unknown-URL hint and alias resolution all read
 * it, so a new endpoint is one row here and one handler in `server.ts` (the compiler asks for it). Handlers are
 * bound in `server.ts`, not here: this table is imported by modules the handlers themselves import.
 *
 * @module
 */
import { type Endpoint, ENDPOINTS, type ModelType } from "../config/schema.ts";
import type { ResolvedConfig } from "../config/types.ts";

/**
 * A GenAI operation (`gen_ai.operation.name`) a request may ask of a model: the conventions' `chat`,
 * `generate_content` (their value for Gemini's generateContent, which a dashboard filtering Gemini calls looks
 * for) and `embeddings`, and `moderations`, a value of the gateway's own (the conventions name none for
 * classifying a text, and allow a custom value where none of theirs applies), named as `embeddings` is: after
 * OpenAI's endpoint, which is the gateway's endpoint name too.
 */
export type GenAiOperation = "chat" | "generate_content" | "embeddings" | "moderations";

/** Whether an operation generates output (its output tokens are counted), as `chat` and `generate_content` do. */
export function generatesOutput(operation: GenAiOperation): boolean {
  return operation === "chat" || operation === "generate_content";
}

/**
 * The methods a model answers on `POST /v1beta/models/{alias}:{method}`, each with the GenAI operation it asks
 * for: its one list (the Gemini handler reads the method names here). A count asks no model to answer: none.
 */
export const GEMINI_METHODS: Readonly<Record<string, GenAiOperation | null>> = {
  generateContent: "generate_content",
  streamGenerateContent: "generate_content",
  countTokens: null,
  embedContent: "embeddings",
  batchEmbedContents: "embeddings",
};

/** Which credential a route needs: a client token, an admin token, or none. */
export type RouteAuth = "client" | "admin" | "none";

/** One route of the gateway. */
export interface RouteSpec {
  /**
   * The exact path, or a path ending in a `/{name}` parameter, for a route that takes the rest of the path (at least one
   * character, slashes included, percent-decoded) as its parameter; or a path with a `/{name}/` parameter followed by
   * a fixed rest (`/v1/responses/{id}/input_items`), whose parameter is one segment (no slash). Such a route is
   * matched before a parameter route that would take the whole rest.
   */
  readonly path: string;
  /**
   * A parameter that takes the rest of the path may end in `/` (`/v1/models/org/`): only an alias name may
   * (`ALIAS_PATTERN` allows it). No other parameter (an id, a team's or an asset's name) ever does, so there a
   * trailing `/` is the route's own path mistyped, answered 404 `unknown_url` naming the path meant, as on a
   * fixed path, rather than the parameter's not-found (docs/admin_api.md: admin routes take no trailing `/`).
   */
  readonly paramMayEndInSlash?: true;
  readonly methods: readonly string[];
  /** The credential, or a function of the config for routes whose protection is configured. */
  readonly auth: RouteAuth | ((config: ResolvedConfig) => RouteAuth);
  /** The endpoint name the request is counted under, for API routes; null outside the API. */
  readonly endpoint: Endpoint | null;
  /** The alias type the route's `model` must have, for routes that call a model. */
  readonly modelType?: ModelType;
  /**
   * The API a route speaks when it is not OpenAI's: `anthropic` for the Messages API, whose routes answer every
   * error (authentication, 404, 405, 413, limits) in Anthropic's shape, take the token from `x-api-key` too, and
   * carry a `request-id` header on every answer; `google` for the Gemini API, whose routes answer errors in
   * Google's shape and take the token from `x-goog-api-key` or `?key=` too.
   */
  readonly dialect?: "anthropic" | "google";
  /**
   * A route two APIs share: `anthropic` on `/v1/models`, which OpenAI's and Anthropic's clients both call. It
   * takes Anthropic's `x-api-key` too (when no `Authorization` came: Claude Code with `ANTHROPIC_API_KEY`
   * discovering a gateway's models), and a request carrying `anthropic-version` (every Anthropic SDK and Claude
   * Code send it; OpenAI's never do) is in Anthropic's dialect: its answers and errors in Anthropic's shape.
   * Without that header the route is OpenAI's, byte for byte.
   */
  readonly sharedWith?: "anthropic";
  /**
   * The GenAI operation a `POST` on the route asks of a model, which the GenAI histograms of `/metrics` count
   * it under ({@linkcode genAiOperationOf}), or the operation of each `:{method}` for the Gemini route, which
   * serves several. Absent where no model is asked to answer: a token count, a listing, a stored response. The
   * one source of the operation a request's trace (its GenAI span) and its metrics name.
   */
  readonly operation?: GenAiOperation | Readonly<Record<string, GenAiOperation | null>>;
}

/** Every route, by the name its handler is bound to. */
export const ROUTES = {
  chat: {
    path: "/v1/chat/completions",
    methods: ["POST"],
    auth: "client",
    endpoint: "chat",
    modelType: "chat",
    operation: "chat",
  },
  embeddings: {
    path: "/v1/embeddings",
    methods: ["POST"],
    auth: "client",
    endpoint: "embeddings",
    modelType: "embedding",
    operation: "embeddings",
  },
  moderations: {
    path: "/v1/moderations",
    methods: ["POST"],
    auth: "client",
    endpoint: "moderations",
    modelType: "moderation",
    operation: "moderations",
  },
  responses: {
    path: "/v1/responses",
    methods: ["POST"],
    auth: "client",
    endpoint: "responses",
    modelType: "chat",
    operation: "chat",
  },
  // An exact path, so it is matched before `/v1/responses/{id}` (exact paths come first); other methods get 405.
  responsesInputTokens: {
    path: "/v1/responses/input_tokens",
    methods: ["POST"],
    auth: "client",
    endpoint: "responses",
    modelType: "chat",
  },
  // An exact path too: compacting a conversation (`POST /v1/responses/compact`).
  responsesCompact: {
    path: "/v1/responses/compact",
    methods: ["POST"],
    auth: "client",
    endpoint: "responses",
    modelType: "chat",
    operation: "chat",
  },
  response: { path: "/v1/responses/{id}", methods: ["GET", "DELETE"], auth: "client", endpoint: "responses" },
  responseInputItems: {
    path: "/v1/responses/{id}/input_items",
    methods: ["GET"],
    auth: "client",
    endpoint: "responses",
  },
  // Without it, `/v1/responses/{id}` took `resp_1/cancel` as an id and answered the SDK's cancel with a 405.
  responseCancel: {
    path: "/v1/responses/{id}/cancel",
    methods: ["POST"],
    auth: "client",
    endpoint: "responses",
  },
  messages: {
    path: "/v1/messages",
    methods: ["POST"],
    auth: "client",
    endpoint: "messages",
    modelType: "chat",
    dialect: "anthropic",
    operation: "chat",
  },
  messagesCountTokens: {
    path: "/v1/messages/count_tokens",
    methods: ["POST"],
    auth: "client",
    endpoint: "messages",
    modelType: "chat",
    dialect: "anthropic",
  },
  // Google's Gemini API (v1beta): the model list, and one route for `{alias}` and `{alias}:{method}`
  // (GEMINI_METHODS), which its handler tells apart.
  geminiModels: {
    path: "/v1beta/models",
    methods: ["GET"],
    auth: "client",
    endpoint: "gemini",
    dialect: "google",
  },
  geminiModel: {
    path: "/v1beta/models/{model}",
    paramMayEndInSlash: true,
    methods: ["GET", "POST"],
    auth: "client",
    endpoint: "gemini",
    modelType: "chat",
    dialect: "google",
    operation: GEMINI_METHODS,
  },
  // OpenAI's and Anthropic's Models API share these paths (`sharedWith`).
  models: {
    path: "/v1/models",
    methods: ["GET"],
    auth: "client",
    endpoint: "models",
    sharedWith: "anthropic",
  },
  model: {
    path: "/v1/models/{id}",
    paramMayEndInSlash: true,
    methods: ["GET"],
    auth: "client",
    endpoint: "models",
    sharedWith: "anthropic",
  },
  healthz: { path: "/healthz", methods: ["GET"], auth: "none", endpoint: null },
  readyz: { path: "/readyz", methods: ["GET"], auth: "none", endpoint: null },
  targets: { path: "/admin/targets", methods: ["GET"], auth: "admin", endpoint: null },
  usage: { path: "/admin/usage", methods: ["GET"], auth: "admin", endpoint: null },
  config: { path: "/admin/config", methods: ["GET"], auth: "admin", endpoint: null },
  reload: { path: "/admin/reload", methods: ["POST"], auth: "admin", endpoint: null },
  tokens: { path: "/admin/tokens", methods: ["GET", "POST"], auth: "admin", endpoint: null },
  // A fixed rest after the id, so it is matched before `/admin/tokens/{id}`.
  tokenRotate: { path: "/admin/tokens/{id}/rotate", methods: ["POST"], auth: "admin", endpoint: null },
  token: { path: "/admin/tokens/{id}", methods: ["GET", "PATCH", "DELETE"], auth: "admin", endpoint: null },
  audit: { path: "/admin/audit", methods: ["GET"], auth: "admin", endpoint: null },
  explain: { path: "/admin/explain", methods: ["GET"], auth: "admin", endpoint: null },
  requests: { path: "/admin/requests", methods: ["GET"], auth: "admin", endpoint: null },
  teams: { path: "/admin/teams", methods: ["GET", "POST"], auth: "admin", endpoint: null },
  team: { path: "/admin/teams/{name}", methods: ["GET", "PATCH", "DELETE"], auth: "admin", endpoint: null },
  alerts: { path: "/admin/alerts", methods: ["GET"], auth: "admin", endpoint: null },
  // The console's page and assets are public (a login page and static files); every number it shows comes from
  // the admin API with the admin token the operator signs in with. Not served without an admin token.
  console: { path: "/console", methods: ["GET"], auth: "none", endpoint: null },
  consoleAsset: { path: "/console/{path}", methods: ["GET"], auth: "none", endpoint: null },
  metrics: {
    path: "/metrics",
    methods: ["GET"],
    auth: (config: ResolvedConfig): RouteAuth => config.server.public_metrics ? "none" : "admin",
    endpoint: null,
  },
} as const satisfies Record<string, RouteSpec>;

/**
 * The admin API's namespace. Every `auth: "admin"` route lives under it (endpoints_test holds that), so what
 * must hold for every admin answer, such as `Cache-Control: no-store`, is decided by the path alone, before
 * any route is matched: the 404 of an admin path no route serves and the 405 of a wrong method included.
 */
export const ADMIN_PREFIX = "/admin";

/** Whether `path` is in the admin API's namespace ({@linkcode ADMIN_PREFIX}), served or not. */
export function isAdminPath(path: string): boolean {
  return path.startsWith(ADMIN_PREFIX) &&
    (path.length === ADMIN_PREFIX.length || path[ADMIN_PREFIX.length] === "/");
}

/** The name of a route in {@linkcode ROUTES}. */
export type RouteId = keyof typeof ROUTES;

/** A route found for a path, with its parameter when it takes one. */
export interface RouteMatch {
  readonly id: RouteId;
  readonly spec: RouteSpec;
  /** The decoded path parameter (`/v1/models/{id}`), else "". */
  readonly param: string;
}

const exact = new Map<string, RouteMatch>();
/** Parameter routes: `prefix`, the parameter, then `suffix` ("" for a parameter that takes the rest). */
const prefixed: { prefix: string; suffix: string; id: RouteId; spec: RouteSpec }[] = [];
for (const [id, spec] of Object.entries(ROUTES) as [RouteId, RouteSpec][]) {
  const brace = spec.path.indexOf("/{");
  const close = spec.path.indexOf("}", brace);
  if (brace >= 0 && close >= 0) {
    prefixed.push({ prefix: spec.path.slice(0, brace + 1), suffix: spec.path.slice(close + 1), id, spec });
  } else exact.set(spec.path, { id, spec, param: "" });
}
// `/console/` is the console's page too: the trailing slash is how it is often typed.
exact.set("/console/", { ...exact.get("/console")!, param: "" });
// Routes with a fixed rest first: `/v1/responses/{id}` would otherwise take `abc/input_items` as its id.
prefixed.sort((a, b) => Number(b.suffix !== "") - Number(a.suffix !== ""));

function decodeParam(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The route serving `path`, or undefined. */
export function matchRoute(path: string): RouteMatch | undefined {
  const found = exact.get(path);
  if (found !== undefined) return found;
  for (const { prefix, suffix, id, spec } of prefixed) {
    if (!path.startsWith(prefix) || path.length <= prefix.length + suffix.length) continue;
    if (suffix === "") {
      if (path.endsWith("/") && spec.paramMayEndInSlash !== true) continue;
      return { id, spec, param: decodeParam(path.slice(prefix.length)) };
    }
    if (!path.endsWith(suffix)) continue;
    const param = path.slice(prefix.length, path.length - suffix.length);
    if (!param.includes("/")) return { id, spec, param: decodeParam(param) };
  }
  return undefined;
}

/** The credential `spec` needs under `config`. */
export function authOf(spec: RouteSpec, config: ResolvedConfig): RouteAuth {
  return typeof spec.auth === "function" ? spec.auth(config) : spec.auth;
}

/** The header by which Anthropic's clients are told apart on a route shared with OpenAI's API. */
const ANTHROPIC_VERSION = "anthropic-version";

/**
 * The dialect one request to `spec` speaks: the route's own, or, on a route shared with Anthropic's API
 * ({@linkcode RouteSpec.sharedWith}), Anthropic's when the request carries `anthropic-version`.
 */
export function routeDialect(spec: RouteSpec | undefined, headers: Headers): RouteSpec["dialect"] {
  if (spec === undefined) return undefined;
  if (spec.dialect !== undefined) return spec.dialect;
  return spec.sharedWith !== undefined && headers.has(ANTHROPIC_VERSION) ? spec.sharedWith : undefined;
}

/**
 * The API dialect of a request to `path` (see {@linkcode RouteSpec.dialect}); undefined for OpenAI's. `headers`
 * decides it on a route shared by two APIs ({@linkcode RouteSpec.sharedWith}).
 */
export function dialectOf(path: string, headers: Headers): RouteSpec["dialect"] {
  const found = exact.get(path);
  if (found !== undefined) return routeDialect(found.spec, headers);
  // Every path of Google's API answers in its shape, served or not (its 404s included); so does every path
  // under Anthropic's Messages API (`/v1/messages/batches`, a trailing slash), where only its clients call.
  if (path.startsWith("/v1beta/")) return "google";
  if (path.startsWith("/v1/messages/")) return "anthropic";
  // A parameter route shared with Anthropic's API (`/v1/models/{id}`), looked up only for its clients.
  return headers.has(ANTHROPIC_VERSION) ? routeDialect(matchRoute(path)?.spec, headers) : undefined;
}

/** The name an API request that no route serves is counted under. */
export const OTHER_ENDPOINT = "other";

/** Every endpoint label a request may be counted under: the API endpoint names and "other". */
export const ENDPOINT_LABELS: readonly string[] = [...ENDPOINTS, OTHER_ENDPOINT];

/**
 * The endpoint name of a request path: its route's, "other" for an API path (`/v1/…`) no route serves, or
 * null for paths outside the API (health, admin, metrics). A parameter route's prefix counts as the route.
 */
export function endpointOf(path: string): string | null {
  if (!path.startsWith("/v1/") && path !== "/v1" && !path.startsWith("/v1beta/")) return null;
  const found = exact.get(path);
  if (found !== undefined) return found.spec.endpoint ?? OTHER_ENDPOINT;
  for (const { prefix, spec } of prefixed) {
    if (path.startsWith(prefix)) return spec.endpoint ?? OTHER_ENDPOINT;
  }
  return OTHER_ENDPOINT;
}

/**
 * The GenAI operation a request asks of a model, by its route ({@linkcode RouteSpec.operation}): `chat` for a
 * generation (`generate_content` on the Gemini API), `embeddings` for an embedding, on any client API, `moderations` for a moderation; null for
 * anything else (a token count, a model listing, a stored response, another method, a path no route serves). Decided from the method and path alone,
 * so it is known before the request is authenticated or read (a refused or failed request has one) and in the
 * primary of `serve --workers N` for a request a dying worker left open. A handler that learns its request asks
 * nothing after all (a WebSocket prewarm) says so on its context.
 */
export function genAiOperationOf(method: string, path: string): GenAiOperation | null {
  if (method !== "POST") return null;
  const match = matchRoute(path);
  if (match === undefined) return null;
  const operation = match.spec.operation;
  if (operation === undefined || typeof operation === "string") return operation ?? null;
  // As the Gemini handler splits it: the method follows the last ':' (an alias may hold ':', `llama3:8b`).
  const colon = match.param.lastIndexOf(":");
  const name = match.param.slice(colon + 1);
  return colon >= 0 && Object.hasOwn(operation, name) ? operation[name] : null;
}

/** The path of the route serving models of `type` (for the message that points a client to it). */
export function pathFor(type: ModelType): string {
  for (const spec of Object.values(ROUTES) as RouteSpec[]) if (spec.modelType === type) return spec.path;
  return "/v1";
}

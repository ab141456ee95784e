/**
 * The admin console under `/console`: its page and assets, built from console/ by `deno task build:console`
 * and embedded in the program as text imports, so `deno task start`, `deno compile` and the Bun binary serve
 * it with no files beside them and no network. Only a fixed table of files is served (no path is ever read
 * from disk), and only when an admin token is configured: without one there is nothing to sign in with.
 *
 * The page is static and public; every number it shows comes from the admin API, called with the admin token
 * the operator signs in with. The headers forbid inline script, framing and any origin but this one.
 *
 * @module
 */
import { GatewayError } from "../errors.ts";
import type { RequestContext } from "../http/context.ts";
import type { ClientRequest } from "../runtime/types.ts";
import { SECURITY_HEADERS } from "./console_headers.ts";
import indexHtml from "./assets/index.html" with { type: "text" };
import consoleJs from "./assets/console.js" with { type: "text" };
import consoleCss from "./assets/console.css" with { type: "text" };
import uplotCss from "./assets/uplot.css" with { type: "text" };

/** One embedded file. */
interface Asset {
  /** UTF-8, encoded once at load. */
  readonly body: Uint8Array<ArrayBuffer>;
  readonly type: string;
  /** A hash of the body: the ETag, and the `?v=` that index.html asks for, so a changed file is a new URL. */
  readonly version: string;
}

/** FNV-1a (32 bits) over UTF-16 code units: a cache key, not a security measure; sync, so built at load. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, "0");
}

const encoder = new TextEncoder();

function asset(text: string, type: string): Asset {
  return { body: encoder.encode(text), type, version: fnv1a(text) };
}

/** The assets by their name under `/console/`. Nothing else is ever served. */
const ASSETS: ReadonlyMap<string, Asset> = new Map([
  ["console.js", asset(consoleJs, "text/javascript; charset=utf-8")],
  ["console.css", asset(consoleCss, "text/css; charset=utf-8")],
  ["uplot.css", asset(uplotCss, "text/css; charset=utf-8")],
]);

/** index.html with each asset's URL versioned (`/console/console.js?v=1a2b3c4d`), so assets cache for long. */
const INDEX: Asset = asset(
  indexHtml.replace(/"\/console\/([a-z.]+)"/g, (whole: string, name: string) => {
    const found = ASSETS.get(name);
    return found === undefined ? whole : `"/console/${name}?v=${found.version}"`;
  }),
  "text/html; charset=utf-8",
);

/** Long enough to never refetch a versioned URL; a new build is a new URL. */
const IMMUTABLE = "public, max-age=31536000, immutable";

function notFound(path: string): GatewayError {
  return new GatewayError(404, `No console at ${path}.`, {
    type: "invalid_request_error",
    code: "not_found",
  });
}

/** The console is off (404) unless the config has an admin token to sign in with. */
function requireEnabled(ctx: RequestContext): void {
  if (ctx.state.config.adminTokens.size === 0) throw notFound(ctx.record.path);
}

/** `?v=` of a request URL, without parsing more than needed. */
function versionOf(url: string): string | null {
  const mark = url.indexOf("?");
  return mark < 0 ? null : new URLSearchParams(url.slice(mark + 1)).get("v");
}

function respond(request: ClientRequest, file: Asset, cacheControl: string): Response {
  const headers = new Headers(SECURITY_HEADERS);
  headers.set("content-type", file.type);
  headers.set("cache-control", cacheControl);
  const etag = `"${file.version}"`;
  headers.set("etag", etag);
  if (request.headers.get("if-none-match") === etag) return new Response(null, { status: 304, headers });
  if (request.method !== "HEAD") return new Response(file.body, { headers });
  // HEAD: what GET would send, without the body.
  headers.set("content-length", String(file.body.byteLength));
  return new Response(null, { headers });
}

/** `GET /console` and `/console/`: the page (never cached: it names the current assets' versions). */
export function handleConsole(request: ClientRequest, ctx: RequestContext): Response {
  requireEnabled(ctx);
  return respond(request, INDEX, "no-store");
}

/**
 * `GET /console/{path}`: an embedded asset (or the page, as `index.html`); anything else is 404. A URL with
 * the asset's current version caches for a year; without it, the browser revalidates (ETag).
 */
export function handleConsoleAsset(request: ClientRequest, ctx: RequestContext, path: string): Response {
  requireEnabled(ctx);
  if (path === "index.html") return respond(request, INDEX, "no-store");
  const file = ASSETS.get(path);
  if (file === undefined) throw notFound(ctx.record.path);
  return respond(request, file, versionOf(request.url) === file.version ? IMMUTABLE : "no-cache");
}

/**
 * The headers of every answer under `/console`: its page's and assets' own (lib/console/serve_console.ts), and
 * those of its errors (a 404 of a file it does not have, a 405), which `finishRequest` adds
 * (lib/http/middleware.ts) with `Cache-Control: no-store`: an error is kept by no cache, and is read as nothing
 * but the JSON it is.
 *
 * @module
 */

/**
 * Only this origin's scripts, styles and API; no inline script or style element, no plugins, no framing.
 * (Scripts may still set element styles through the DOM, which uPlot does to size its canvas.)
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

/** The console's namespace: `/console` and everything under it, served or not. */
export const CONSOLE_PREFIX = "/console";

/** Whether `path` is in the console's namespace ({@linkcode CONSOLE_PREFIX}). */
export function isConsolePath(path: string): boolean {
  return path.startsWith(CONSOLE_PREFIX) &&
    (path.length === CONSOLE_PREFIX.length || path[CONSOLE_PREFIX.length] === "/");
}

/**
 * Gives an answer under `/console` the console's security headers it lacks, and `Cache-Control: no-store`
 * unless it says how to cache itself (the page and its assets do; its errors do not).
 */
export function consoleAnswerHeaders(response: Response): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) {
    if (!response.headers.has(name)) response.headers.set(name, value);
  }
  if (!response.headers.has("cache-control")) response.headers.set("cache-control", "no-store");
}

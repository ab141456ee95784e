/**
 * The Bun edge's view of a request's raw path, to refuse one with a dot segment as the node:http edge does
 * (lib/runtime/dot_segments.ts). Bun hands a handler only the URL its parser resolved (`/v1/%2e%2e/admin` is
 * `http://host/admin` there), but its router matches `routes` on the raw target, and a parameter holds a raw
 * segment, percent-decoded. So every request is routed through `/:s0`, `/:s0/:s1`, … up to
 * {@linkcode RAW_DEPTH} segments, each also ending in `/` (the console's page is `/console/`, so
 * `/v1/%2e%2e/console/` must be judged too), and its parameters are the raw segments to judge.
 *
 * A target no such route matches has an empty segment (`//`), is `/` or `*`, or is deeper than
 * {@linkcode RAW_DEPTH}. Its resolved path then says enough: a `..` that ate an empty segment (`/x//../../admin`)
 * leaves a path those routes would have matched, so such a path, with no empty segment but a last one (a
 * trailing `/`) and at most {@linkcode RAW_DEPTH} segments, cannot be the one the client sent. Only a target deeper than that whose
 * resolved path is deeper too goes unjudged: the gateway serves no path that deep but one ending in an id (a
 * model's, a token's) with as many `/`, which no id holds.
 *
 * @module
 */
import { isDotSegment } from "./dot_segments.ts";

/** The deepest raw path judged segment by segment. */
export const RAW_DEPTH = 32;

/** Whether the raw segments a route matched (the router's parameters) hold a dot segment. */
export function paramsHaveDotSegment(params: Readonly<Record<string, string>> | undefined): boolean {
  if (params === undefined) return false;
  return Object.values(params).some((segment) => isDotSegment(segment, true));
}

/**
 * Whether a request no parameter route matched was resolved from a different raw path: its resolved path (of
 * `url`, as Bun's parser made it) is one those routes match.
 */
export function resolvedFromOtherPath(url: string): boolean {
  // Bun gives only the path when the Host header names no host (lib/runtime/bun.ts).
  const start = url.startsWith("/") ? 0 : url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return false;
  const query = url.indexOf("?", start);
  const path = url.slice(start, query < 0 ? url.length : query);
  if (path === "/") return false;
  const segments = path.slice(1).split("/");
  if (segments.at(-1) === "") segments.pop(); // a trailing `/`: the routes ending in `/` match it
  return segments.length <= RAW_DEPTH && !segments.includes("");
}

/** The route patterns, `/:s0` to `/:s0/…/:s31`, each also ending in `/`, each to `handler`. */
export function rawPathRoutes<H>(handler: H): Record<string, H> {
  const routes: Record<string, H> = {};
  let pattern = "";
  for (let i = 0; i < RAW_DEPTH; i++) {
    pattern += `/:s${i}`;
    routes[pattern] = handler;
    routes[`${pattern}/`] = handler;
  }
  return routes;
}

/**
 * Request targets whose path holds a dot segment are refused at the edge, on Deno and Bun alike. The URL parser
 * both edges build a request's URL with resolves `.` and `..` segments, in any spelling (`%2e%2e`, `.%2E`, and
 * after a `\`, which it reads as `/`), so `/v1/%2e%2e/admin/tokens` would be served as `/admin/tokens`. A proxy
 * in front that allows `/v1/*` and blocks `/admin/*` by the path it sees would be walked past; no client of the
 * gateway sends such a path (SDKs and browsers resolve dot segments before sending). So the path a proxy saw is
 * the path served, or the request is refused (400 `invalid_path`, in OpenAI's shape).
 *
 * The rule is said of raw segments (the path split at `/`), as both edges can read them: the node:http edge
 * from the request line, the Bun edge from its router's parameters (Bun gives a handler only the resolved URL).
 * A segment is read with its percent-escapes decoded and split at `\`; a piece that is `.` or `..` is a dot
 * segment. (`%5c` counts as a `\` there, which the URL parser would not split at: a path no client sends either.)
 *
 * @module
 */

/** `segment` with its percent-escapes decoded; a malformed escape leaves the segment's escapes of `.` and `\`. */
function decoded(segment: string): string {
  if (!segment.includes("%")) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment.replace(/%2e/gi, ".").replace(/%5c/gi, "\\");
  }
}

/** Whether one raw segment (or a Bun router parameter, already decoded) is or holds a dot segment. */
export function isDotSegment(segment: string, alreadyDecoded = false): boolean {
  const text = alreadyDecoded ? segment : decoded(segment);
  if (!text.includes(".")) return false;
  return text.split("\\").some((piece) => piece === "." || piece === "..");
}

/**
 * Whether a raw request target (origin form `/a/b?q`, or absolute form `http://host/a/b?q`) has a dot segment
 * in its path. The query is not a path: a `..` there is a value like any other.
 */
export function targetHasDotSegment(target: string): boolean {
  let start = 0;
  if (!target.startsWith("/")) {
    // Absolute form: the path starts at the first `/` after the scheme's `//` and the authority.
    const authority = target.indexOf("//");
    if (authority < 0) return false;
    const path = target.indexOf("/", authority + 2);
    if (path < 0) return false;
    start = path;
  }
  const query = target.indexOf("?", start);
  const hash = target.indexOf("#", start);
  const ends = [query, hash].filter((i) => i >= 0);
  const path = target.slice(start, ends.length === 0 ? target.length : Math.min(...ends));
  if (!path.includes(".") && !path.includes("%")) return false;
  return path.split("/").some((segment) => isDotSegment(segment));
}

/** Thrown by the node:http edge's request builder for such a target; the edge answers it 400 `invalid_path`. */
export class DotSegmentError extends TypeError {
  constructor() {
    super("The request path has a dot segment.");
    this.name = "DotSegmentError";
  }
}

/**
 * The one schema of a map of extra HTTP headers the gateway sends (a provider's, a guardrail service's, an
 * alert receiver's, a telemetry collector's). A value is held to what the Fetch standard's `Headers` accepts,
 * Latin-1 text (a ByteString) without CR, LF or NUL, so a value that would make every call to that upstream
 * throw (a 502 per request, or an export that never leaves) is refused by `check` instead, at its path. Only
 * zod is imported, so any schema module may take it without an import cycle.
 *
 * @module
 */
import { z } from "zod";

/** A header name: a token of letters, digits and `-`. */
export const HEADER_NAME = /^[A-Za-z0-9-]+$/;

/** True when `Headers` takes `value`: every character Latin-1 (U+0000–U+00FF), none of CR, LF and NUL. */
export function isHeaderValue(value: string): boolean {
  // deno-lint-ignore no-control-regex
  return !/[^\u0001-\u0009\u000b\u000c\u000e-\u00ff]/.test(value);
}

/** A map of header names to values, as every `headers:` of the config takes it. */
export const headerMap = z.record(
  z.string().regex(HEADER_NAME, "must be a valid header name"),
  z.string().refine(
    isHeaderValue,
    "a header value must be Latin-1 text without line breaks or NUL characters (as HTTP sends it)",
  ),
);

/**
 * The one schema of a map of extra HTTP headers the gateway sends (a provider's, a guardrail service's, an
 * alert receiver's, a telemetry collector's), and of a credential sent in one. A value is held to what the
 * Fetch standard's `Headers` accepts, Latin-1 text (a ByteString) without CR, LF or NUL, so a value that
 * would make every call to that upstream throw (a 502 per request, or an export that never leaves) is
 * refused by `check` instead, at its path. Only zod is imported, so any schema module may take it without an
 * import cycle.
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

/**
 * A credential the gateway sends in a header (a provider's or a guardrail service's `api_key`, an AWS session
 * token), held to the rule of a header value: without it a key with a pasted em dash, or a `${VAR}` with a
 * line break inside, passed `check` and then made every call throw before it left, a 502 "could not be
 * reached" per request, with nothing sent upstream and nothing logged. Line breaks and spaces at its end are
 * let through: HTTP drops them (so a key read from a file that ends in a newline has always worked). The
 * message names no character, since the value is a secret.
 */
export const headerCredential = z.string().refine(
  (value) => isHeaderValue(value.replace(/[\t\n\r ]+$/, "")),
  "must be Latin-1 text without line breaks or NUL characters: it is sent in an HTTP header " +
    "(a character pasted with it, or a line break inside its variable?)",
);

/**
 * An AWS access key id: SigV4 writes it into the middle of the `Authorization` header
 * (`Credential=<id>/<scope>`), so unlike a key sent alone, a line break or space even at its end breaks every
 * call. AWS's own ids are letters and digits.
 */
export const awsAccessKeyId = headerCredential.refine(
  (value) => !/[\s]/.test(value),
  "must have no spaces or line breaks: SigV4 sends it inside the Authorization header",
);

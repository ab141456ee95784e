/**
 * The HTTP facts of an upstream attempt's client span: the status answered and the URL called (`url.full`,
 * `server.address`, `server.port`), as the HTTP client conventions ask, without the credentials a URL may carry.
 *
 * @module
 */

import type { semconvNames } from "./semconv.ts";

/** What an upstream attempt is given of its span: the headers to send, and where to say what answered. */
export interface SpanOfAttempt {
  readonly headers: Readonly<Record<string, string>>;
  answered(url: string, status: number): void;
}

/**
 * The attributes of an attempt's call to `url`, answered with `status`: `http.response.status_code`, `url.full`
 * (redacted, and scrubbed of the config's secrets), `server.address` and `server.port` (the host called, which
 * a provider without a `base_url`, Bedrock's or Azure's, has only here).
 */
export function calledAttributes(
  names: ReturnType<typeof semconvNames>,
  url: string,
  status: number,
  scrubber: { scrub(text: string): string },
): Record<string, string | number> {
  const called = URL.parse(url);
  if (called === null) return { [names.httpStatus]: status };
  return {
    [names.httpStatus]: status,
    [names.urlFull]: scrubber.scrub(redactedUrl(called)),
    [names.serverAddress]: called.hostname,
    [names.serverPort]: portOf(called),
  };
}

/**
 * Query parameters whose values are credentials: the HTTP conventions' list for `url.full` (signed URLs'
 * signatures and keys) and Google's `key` (the Gemini API's key, when a URL carries it). The config's secrets
 * are masked by the scrubber as well; these are masked whatever their value.
 */
const CREDENTIAL_PARAMS = new Set([
  "awsaccesskeyid",
  "signature",
  "sig",
  "x-goog-signature",
  "x-amz-signature",
  "x-amz-credential",
  "x-amz-security-token",
  "key",
  "api-key",
  "api_key",
]);

/** `url` as `url.full` may show it: user and password, and credential query values, replaced by `REDACTED`. */
export function redactedUrl(url: URL): string {
  if (url.username !== "") url.username = "REDACTED";
  if (url.password !== "") url.password = "REDACTED";
  for (const name of [...url.searchParams.keys()]) {
    if (CREDENTIAL_PARAMS.has(name.toLowerCase())) url.searchParams.set(name, "REDACTED");
  }
  return url.href;
}

/** The port `url` reaches: its own, else its scheme's. */
export function portOf(url: URL): number {
  if (url.port !== "") return Number(url.port);
  return url.protocol === "http:" ? 80 : 443;
}

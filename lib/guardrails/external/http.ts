/**
 * What every external guardrail adapter shares: one bounded POST, one bounded read of the answer, and errors
 * whose messages can be logged as they are. A guardrail sees the request's texts and carries credentials, so
 * an error never repeats either: a transport error names only the host (a URL may carry a key in its query),
 * a non-2xx names only the status and, for vendors, an error code token that is checked not to contain what
 * the call was given to hide.
 *
 * Timeouts and fail-open / fail-closed are the caller's: here every call is bounded by the caller's signal,
 * and an abort rejects with the signal's reason, unwrapped, so the caller can tell its own timeout apart.
 *
 * @module
 */
import { readWithin } from "../../streams/read_within.ts";

/** `fetch` as the adapters call it; injectable so tests (and a proxy-aware caller) can supply their own. */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** What an adapter factory takes besides its config entry. */
export interface ServiceDeps {
  /** Defaults to the global `fetch`. */
  readonly fetch?: FetchLike;
  /** The environment, for credentials that fall back to it (Bedrock's AWS_* variables). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** The most an answer may take: guardrail verdicts are small, and a runaway body must not fill memory. */
export const MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * A guardrail service could not be asked or answered wrongly. `service` names the adapter; `status` is the
 * HTTP status when the service answered with a non-2xx. The message never holds the texts or a credential.
 */
export class GuardrailServiceError extends Error {
  override readonly name = "GuardrailServiceError";
  constructor(readonly service: string, message: string, readonly status?: number) {
    super(`guardrail ${service}: ${message}`);
  }
}

/** One POST, as an adapter describes it. */
export interface PostInput {
  readonly service: string;
  readonly fetch: FetchLike;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly signal: AbortSignal;
  /** Strings an error message must not contain (the texts, the credentials). */
  readonly hidden: readonly string[];
  /** Pulls a vendor error code out of a non-2xx answer (its headers and parsed JSON body, if any). */
  readonly errorCode?: (headers: Headers, body: unknown) => unknown;
}

/**
 * POSTs and returns the parsed JSON answer of a 2xx. Throws {@linkcode GuardrailServiceError} for a transport
 * error, a non-2xx, an answer over {@linkcode MAX_ANSWER_BYTES} or one that is not JSON; rethrows the signal's
 * reason when the signal aborts.
 */
export async function postJson(input: PostInput): Promise<unknown> {
  input.signal.throwIfAborted();
  let response: Response;
  try {
    response = await input.fetch(input.url, {
      method: "POST",
      headers: input.headers,
      body: input.body,
      signal: input.signal,
      redirect: "manual",
    });
  } catch (error) {
    throw transportError(input, error);
  }
  let bytes: Uint8Array;
  try {
    bytes = await readBounded(response, MAX_ANSWER_BYTES, input.service);
  } catch (error) {
    if (error instanceof GuardrailServiceError) throw error;
    throw transportError(input, error);
  }
  const parsed = parseJson(bytes);
  if (!response.ok) {
    const code = input.errorCode ? safeToken(input.errorCode(response.headers, parsed), input.hidden) : null;
    throw new GuardrailServiceError(
      input.service,
      `the service answered HTTP ${response.status}${code === null ? "" : ` (${code})`}`,
      response.status,
    );
  }
  if (parsed === undefined) throw malformed(input.service, "the answer is not JSON");
  return parsed;
}

/** An error for an answer that does not have the documented shape (named by what is wrong, never by value). */
export function malformed(service: string, what: string): GuardrailServiceError {
  return new GuardrailServiceError(service, `malformed answer: ${what}`);
}

function transportError(input: PostInput, error: unknown): unknown {
  if (input.signal.aborted) return input.signal.reason;
  let host = "the service";
  try {
    host = new URL(input.url).host;
  } catch { /* keep the generic name */ }
  const kind = error instanceof Error ? error.name : "error";
  return new GuardrailServiceError(input.service, `could not reach ${host} (${kind})`);
}

/**
 * The body's bytes, refusing more than `maxBytes`: a declared `content-length` over the bound is refused
 * before reading, and a body without one is read and cancelled once it passes the bound.
 */
export async function readBounded(
  response: Response,
  maxBytes: number,
  service: string,
): Promise<Uint8Array> {
  const declared = Number(response.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw new GuardrailServiceError(service, `the answer is larger than ${maxBytes} bytes`, response.status);
  }
  if (response.body === null) return new Uint8Array(0);
  // Into blocks of its own (lib/streams/read_within.ts): kept as the runtime's chunks, a decompressed answer
  // could hold 16 times the bound on Deno.
  const bytes = await readWithin(response.body, maxBytes);
  if (bytes === undefined) {
    throw new GuardrailServiceError(service, `the answer is larger than ${maxBytes} bytes`, response.status);
  }
  return bytes;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(utf8.decode(bytes));
  } catch {
    return undefined;
  }
}

/**
 * A vendor's error code if it is a short token (`invalid_api_key`, `InvalidSignatureException`) that is not
 * part of, and does not contain, anything hidden; otherwise null. Vendors' error *messages* are never used:
 * some echo a prefix of the key or of the input.
 */
export function safeToken(value: unknown, hidden: readonly string[]): string | null {
  if (typeof value === "number" && Number.isInteger(value)) value = String(value);
  if (typeof value !== "string" || !/^[A-Za-z0-9_.:-]{1,64}$/.test(value)) return null;
  for (const secret of hidden) {
    // Texts shorter than four characters are too common to hide inside a code token.
    if (secret.includes(value) || (secret.length >= 4 && value.includes(secret))) return null;
  }
  return value;
}

/** What a category name that is not a short name stands in for, in a verdict (see {@linkcode categoryName}). */
export const UNNAMED_CATEGORY = "(unnamed)";

/**
 * A service's category name if it is a short name (`self-harm/intent`, `SelfHarm`, `CUSTOM_WORD`, a Bedrock
 * topic such as `Investment advice`): at most 64 letters, digits, spaces and `_ . : / -`, starting with a letter
 * or digit. Anything else becomes {@linkcode UNNAMED_CATEGORY}: categories are the service's own text and go
 * to the usage record, the admin API, the console and a denial's message, and a service can put anything in
 * them — the credential it was sent (quoted in an "unauthorized" category), a piece of the texts, megabytes.
 * Kept as a placeholder rather than dropped, so a flag still records that the service named something. A
 * secret that fits the shape is the config scrubber's to mask (lib/guardrails/run.ts).
 */
export function categoryName(value: string): string {
  return /^[A-Za-z0-9][A-Za-z0-9 _.:/-]{0,63}$/.test(value) ? value : UNNAMED_CATEGORY;
}

/** A plain JSON object (not null, not an array), for narrowing parsed answers. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Deduplicated and sorted, each passed through {@linkcode categoryName}, as every verdict's `categories` is:
 * every adapter makes its categories here, so none reaches a verdict (or the reason built from it) unchecked.
 */
export function sortedUnique(values: Iterable<string>): string[] {
  return [...new Set(Array.from(values, categoryName))].sort();
}

/**
 * AWS Signature Version 4 with Web Crypto only (no AWS SDK): canonical request → string to sign → HMAC
 * chain → `Authorization` header. Checked against AWS's published sig-v4 test suite.
 *
 * Path encoding is the subtle part. The request path sent on the wire is already percent-encoded once (a
 * Bedrock model id `…-v1:0` travels as `…-v1%3A0`); for every service except S3 the canonical URI encodes
 * each path segment *again* (`…-v1%253A0`), after removing `.`/`..` and empty segments. The test-suite vectors
 * start from unencoded paths (`/example space/`), which the same rule turns into `/example%20space/`.
 *
 * @module
 */

/** AWS credentials; `sessionToken` is present for temporary (STS) credentials. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** Everything that goes into one signature. */
export interface SignRequestInput {
  method: string;
  /** Absolute URL exactly as it will be sent (path already percent-encoded once). */
  url: string;
  /** Headers to sign, besides `host` and `x-amz-date` which are added. Repeated names are joined with ",". */
  headers: Iterable<readonly [string, string]>;
  body: string | Uint8Array;
  region: string;
  service: string;
  credentials: AwsCredentials;
  /** Signing time; defaults to now. */
  date?: Date;
}

/** The intermediate values of one signature, for tests and for verifying fakes. */
export interface SignatureParts {
  canonicalRequest: string;
  stringToSign: string;
  signature: string;
  signedHeaders: string;
  credentialScope: string;
  amzDate: string;
}

const encoder = new TextEncoder();

function toHex(buffer: ArrayBuffer): string {
  return Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");
}

function bytes(data: string | Uint8Array): Uint8Array<ArrayBuffer> {
  if (typeof data === "string") return encoder.encode(data);
  return new Uint8Array(data);
}

/** Lower-case hex SHA-256 of `data`. */
export async function sha256Hex(data: string | Uint8Array): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", bytes(data)));
}

async function hmac(key: Uint8Array<ArrayBuffer>, data: string): Promise<Uint8Array<ArrayBuffer>> {
  const cryptoKey = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", cryptoKey, encoder.encode(data)));
}

/** `20150830T123600Z` for a date. */
export function amzDate(date: Date): string {
  return date.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
}

/** RFC 3986 percent-encoding of everything but `A-Z a-z 0-9 - _ . ~`, as SigV4's UriEncode defines it. */
export function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * The canonical URI of a (once-encoded) request path for a non-S3 service: dot segments and empty segments
 * removed, then every segment encoded again.
 */
export function canonicalUri(path: string): string {
  const out: string[] = [];
  for (const segment of path.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") out.pop();
    else out.push(uriEncode(segment));
  }
  if (out.length === 0) return "/";
  return `/${out.join("/")}${path.endsWith("/") ? "/" : ""}`;
}

function decodeQueryPart(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The canonical query string: every name and value encoded, sorted by name then value. */
export function canonicalQuery(search: string): string {
  const raw = search.startsWith("?") ? search.slice(1) : search;
  if (raw === "") return "";
  const pairs = raw.split("&").filter((p) => p !== "").map((pair) => {
    const eq = pair.indexOf("=");
    const name = eq < 0 ? pair : pair.slice(0, eq);
    const value = eq < 0 ? "" : pair.slice(eq + 1);
    return [uriEncode(decodeQueryPart(name)), uriEncode(decodeQueryPart(value))];
  });
  pairs.sort(([an, av], [bn, bv]) => an < bn ? -1 : an > bn ? 1 : av < bv ? -1 : av > bv ? 1 : 0);
  return pairs.map(([n, v]) => `${n}=${v}`).join("&");
}

/** Canonical headers block and signed-headers list from header pairs (names lower-cased, values trimmed). */
export function canonicalHeaders(headers: Iterable<readonly [string, string]>): {
  block: string;
  signedHeaders: string;
} {
  const byName = new Map<string, string[]>();
  for (const [name, value] of headers) {
    const key = name.toLowerCase().trim();
    const clean = value.trim().replace(/\s+/g, " ");
    const list = byName.get(key);
    if (list) list.push(clean);
    else byName.set(key, [clean]);
  }
  const names = [...byName.keys()].sort();
  return {
    block: names.map((n) => `${n}:${byName.get(n)!.join(",")}\n`).join(""),
    signedHeaders: names.join(";"),
  };
}

/** The signing key: HMAC chain over date, region, service and "aws4_request". */
export async function signingKey(
  secretAccessKey: string,
  dateStamp: string,
  region: string,
  service: string,
): Promise<Uint8Array<ArrayBuffer>> {
  const kDate = await hmac(encoder.encode(`AWS4${secretAccessKey}`), dateStamp);
  const kRegion = await hmac(kDate, region);
  const kService = await hmac(kRegion, service);
  return await hmac(kService, "aws4_request");
}

/**
 * Computes every step of a signature for `input`. The `host` header is taken from the URL, `x-amz-date`
 * from the date, and `x-amz-security-token` is signed when the credentials carry a session token.
 */
export async function computeSignature(input: SignRequestInput): Promise<SignatureParts> {
  const url = new URL(input.url);
  const date = amzDate(input.date ?? new Date());
  const headerPairs: [string, string][] = [["host", url.host], ["x-amz-date", date]];
  if (input.credentials.sessionToken) {
    headerPairs.push(["x-amz-security-token", input.credentials.sessionToken]);
  }
  for (const [name, value] of input.headers) {
    const lower = name.toLowerCase();
    if (lower === "host" || lower === "x-amz-date" || lower === "x-amz-security-token") continue;
    headerPairs.push([name, value]);
  }
  return await signatureFromParts({
    method: input.method,
    path: url.pathname,
    query: url.search,
    headers: headerPairs,
    payloadHash: await sha256Hex(input.body),
    amzDate: date,
    region: input.region,
    service: input.service,
    credentials: input.credentials,
  });
}

/** What a verifier sees of a received request: the raw pieces, headers exactly as they arrived. */
export interface CanonicalParts {
  method: string;
  /** Path as sent on the wire (once-encoded). */
  path: string;
  query: string;
  headers: Iterable<readonly [string, string]>;
  payloadHash: string;
  amzDate: string;
  region: string;
  service: string;
  credentials: Pick<AwsCredentials, "accessKeyId" | "secretAccessKey">;
}

/** The signature over already-extracted request parts; used by the signer and by fakes that verify. */
export async function signatureFromParts(parts: CanonicalParts): Promise<SignatureParts> {
  const { block, signedHeaders } = canonicalHeaders(parts.headers);
  const canonicalRequest = [
    parts.method.toUpperCase(),
    canonicalUri(parts.path),
    canonicalQuery(parts.query),
    block,
    signedHeaders,
    parts.payloadHash,
  ].join("\n");
  const dateStamp = parts.amzDate.slice(0, 8);
  const credentialScope = `${dateStamp}/${parts.region}/${parts.service}/aws4_request`;
  const stringToSign = ["AWS4-HMAC-SHA256", parts.amzDate, credentialScope, await sha256Hex(canonicalRequest)]
    .join("\n");
  const key = await signingKey(parts.credentials.secretAccessKey, dateStamp, parts.region, parts.service);
  const signature = toHex((await hmac(key, stringToSign)).buffer);
  return {
    canonicalRequest,
    stringToSign,
    signature,
    signedHeaders,
    credentialScope,
    amzDate: parts.amzDate,
  };
}

/** The `Authorization` header value for computed signature parts. */
export function authorizationHeader(accessKeyId: string, parts: SignatureParts): string {
  return `AWS4-HMAC-SHA256 Credential=${accessKeyId}/${parts.credentialScope}, ` +
    `SignedHeaders=${parts.signedHeaders}, Signature=${parts.signature}`;
}

/**
 * Signs a request: returns the headers to send, i.e. the input headers plus `x-amz-date`,
 * `x-amz-security-token` (if any) and `authorization`. `host` is left to `fetch`, which derives the same value
 * from the URL.
 */
export async function signRequest(input: SignRequestInput): Promise<Record<string, string>> {
  const parts = await computeSignature(input);
  const out: Record<string, string> = {};
  for (const [name, value] of input.headers) out[name.toLowerCase()] = value;
  out["x-amz-date"] = parts.amzDate;
  if (input.credentials.sessionToken) out["x-amz-security-token"] = input.credentials.sessionToken;
  out.authorization = authorizationHeader(input.credentials.accessKeyId, parts);
  return out;
}

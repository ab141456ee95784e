/**
 * Generated request headers for `tests/chat/fuzz_requests_test.ts`: `Authorization` from valid to absurd, JSON and
 * other content types, `Content-Length` truths and lies, request ids and junk headers.
 *
 * @module
 */
import fc from "fast-check";

/** The tokens a generated request may present, by what they may do. */
export interface FuzzTokens {
  /** May use every alias. */
  client: string;
  /** May use `team/*` and `embed-*` aliases only. */
  limited: string;
  admin: string;
}

// --- headers ------------------------------------------------------------------------------------------------

/** Characters a header value may hold (fetch refuses NUL, CR, LF and anything past U+00FF). */
export const headerText = (maxLength = 40) =>
  fc.string({
    unit: fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0x80, max: 0xff }))
      .map((c) => String.fromCharCode(c)),
    maxLength,
  });

/** Who an `Authorization` header makes the caller: a client token, the limited one, the admin, or nobody. */
export type Caller = "client" | "limited" | "admin" | "nobody";

/** `Authorization` values, most of them valid. */
export function authorizationArb(tokens: FuzzTokens): fc.Arbitrary<{ value: string | null; caller: Caller }> {
  const as = (caller: Caller) => (value: string | null) => ({ value, caller });
  return fc.oneof(
    { weight: 24, arbitrary: fc.constant(`Bearer ${tokens.client}`).map(as("client")) },
    { weight: 8, arbitrary: fc.constant(`Bearer ${tokens.limited}`).map(as("limited")) },
    { weight: 2, arbitrary: fc.constant(`Bearer ${tokens.admin}`).map(as("admin")) },
    {
      weight: 10,
      arbitrary: fc.oneof(
        fc.constant(null),
        fc.constantFrom(
          "Bearer gw-wrong-token-ffffffffffffffffffff",
          "Bearer",
          "Bearer ",
          `bearer ${tokens.client}`,
          `Bearer  ${tokens.client}`,
          `Bearer ${tokens.client} extra`,
          `Basic ${btoa(`user:${tokens.client}`)}`,
          `Bearer ${"x".repeat(5_000)}`,
        ),
        headerText().map((t) => `Bearer ${t}`),
        headerText(),
      ).map(as("nobody")),
    },
  );
}

/** `Content-Type` values; `json` says whether the gateway reads the body as JSON. */
const contentTypeArb = fc.oneof(
  { weight: 20, arbitrary: fc.constant({ value: "application/json" as string | null, json: true }) },
  {
    weight: 4,
    arbitrary: fc.constantFrom<string | null>(
      null,
      "application/json; charset=utf-8",
      "APPLICATION/JSON",
      "application/vnd.api+json",
      "application/x-www-form-urlencoded",
    ).map((value) => ({ value, json: true })),
  },
  {
    weight: 2,
    arbitrary: fc.oneof(
      fc.constantFrom("text/plain", "multipart/form-data; boundary=x", "", ";", "json"),
      headerText(),
    ).map((value) => ({ value: value as string | null, json: false })),
  },
);

/** How `Content-Length` relates to the body: in-process, any lie reaches the handler. */
const contentLengthArb = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom<number | string>("exact", "none") },
  fc.integer({ min: -3, max: 3 }).filter((d) => d !== 0),
  fc.constantFrom("99999999999", "abc", "-1", "1e3", " 12 ", ""),
);

const extraHeadersArb = fc.dictionary(
  fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/).filter((name) =>
    !["authorization", "content-type", "content-length", "host", "transfer-encoding"].includes(name)
  ),
  headerText(),
  { maxKeys: 3 },
);

const requestIdArb = fc.option(
  fc.oneof(headerText(200), fc.stringMatching(/^[A-Za-z0-9._:@/+=-]{1,128}$/)),
  { freq: 4 },
);

/** The headers of one generated request (framing included). */
export interface HeaderSpec {
  authorization: { value: string | null; caller: Caller };
  contentType: { value: string | null; json: boolean };
  contentLength: number | string;
  extra: Record<string, string>;
  requestId: string | null;
}

export function headersArb(tokens: FuzzTokens): fc.Arbitrary<HeaderSpec> {
  return fc.record({
    authorization: authorizationArb(tokens),
    contentType: contentTypeArb,
    contentLength: contentLengthArb,
    extra: extraHeadersArb,
    requestId: requestIdArb,
  });
}

/** The `Headers` of `spec` for `body`, or null for a header the client's own fetch would refuse. */
export function headersOf(spec: HeaderSpec, body: Uint8Array | undefined): Headers | null {
  try {
    const headers = new Headers();
    for (const [name, value] of Object.entries(spec.extra)) headers.set(name, value);
    if (spec.authorization.value !== null) headers.set("authorization", spec.authorization.value);
    if (spec.contentType.value !== null && body !== undefined) {
      headers.set("content-type", spec.contentType.value);
    }
    if (spec.requestId !== null) headers.set("x-request-id", spec.requestId);
    if (body !== undefined) {
      const cl = spec.contentLength;
      if (cl === "exact") headers.set("content-length", String(body.byteLength));
      else if (typeof cl === "number") {
        headers.set("content-length", String(Math.max(0, body.byteLength + cl)));
      } else if (cl !== "none") headers.set("content-length", cl);
    }
    return headers;
  } catch {
    return null;
  }
}

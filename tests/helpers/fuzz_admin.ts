/**
 * Generators of admin API requests for `tests/admin/admin_fuzz_test.ts`: token bodies for `POST /admin/tokens`,
 * `PATCH /admin/tokens/{id}` and `POST /admin/tokens/{id}/rotate` (a plausible body first, then, often, a
 * field set to junk, a required one removed, an unknown one added, the JSON text damaged), query strings for
 * the admin reads, and odd ids in paths. A token id the fuzz cannot know in advance (one issued during the run)
 * is a `pick`, resolved when the request is sent.
 *
 * @module
 */
import fc from "fast-check";
import { ENDPOINTS } from "../../lib/config/schema.ts";
import { AUDIT_ACTIONS } from "../../lib/tokens/types.ts";
import { TOKEN_STATUSES } from "../../lib/tokens/token_view.ts";
import { USAGE_GROUP_KEYS } from "../../lib/usage/record.ts";
import { type FuzzTokens, headersArb, type HeaderSpec } from "./fuzz_headers.ts";
import { damageArb, damaged, junk, MAX_JSON_DEPTH, nestingDepth, utf8, wellFormed } from "./fuzz_requests.ts";

/** The aliases of the fuzz config (`chat-priced` has a price on its target, `chat-free` none). */
export const FUZZ_ALIASES = ["chat-priced", "chat-free", "embed-local"] as const;
/** Token names come from a small pool, so issues collide (409) and the store stays small. */
export const NAME_POOL = 120;
/** Where in a path a token id goes; {@linkcode AdminRequest.id} says which. */
export const ID = "{id}";
/** Where a query takes an audit entry id, or a request log cursor, seen earlier in the run. */
export const AUD = "{aud}";
export const CURSOR = "{cursor}";

/** A token id in a path: one issued during the run (`pick` of those known then), or this text as it is. */
export type IdRef = { kind: "known"; pick: number; suffix: string } | { kind: "raw"; text: string };

/** One generated admin request. */
export interface AdminRequest {
  method: string;
  /** The path and query; `{id}` stands for {@linkcode id}, resolved when sent. */
  path: string;
  id?: IdRef;
  body?: Uint8Array<ArrayBuffer>;
  spec: HeaderSpec;
  /** The error it must get when its headers let the body be read (and, for PATCH, the id is known). */
  expect?: { status: number; code: string };
}

const encoder = new TextEncoder();

// --- values -------------------------------------------------------------------------------------------------

/** Text from the plain to the odd: graphemes, lone surrogates, controls, NUL, very long. */
export const oddText = fc.oneof(
  { weight: 6, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 20 }) },
  fc.string({ unit: "binary", maxLength: 10 }),
  fc.constantFrom("", " ", "\u0000", "a\u0000b", "\ud800", "\udfff x", "\u202e", "é", "𝕏", "\r\n", "null"),
  fc.integer({ min: 100, max: 5_000 }).map((n) => "x".repeat(n)),
);

/** Mostly `plausible`, sometimes `odd`: so that a fair share of whole bodies is valid. */
const mostly = <T, U>(plausible: fc.Arbitrary<T>, odd: fc.Arbitrary<U>) =>
  fc.oneof({ weight: 9, arbitrary: plausible as fc.Arbitrary<T | U> }, odd as fc.Arbitrary<T | U>);

/** A token name: from the pool (valid, colliding), else anything. */
const tokenName = mostly(
  fc.nat(NAME_POOL - 1).map((n) => `fuzz-${n}`),
  fc.oneof(
    fc.stringMatching(/^[A-Za-z0-9._:@-]{1,12}$/).map((s) => `fz.${s}`),
    oddText,
    fc.constantFrom("fuzz-file", "cfg_fuzz-file", "a b", "ü", "x".repeat(129)),
  ),
);

/** A model pattern: aliases and globs that match, and some that do not or are too wild. */
const modelPattern = mostly(
  fc.constantFrom(...FUZZ_ALIASES, "chat-*", "*", "embed-?????", "*-free"),
  fc.oneof(
    fc.constantFrom("nope", "chat-", "**********", "*?*?*?*?*?", "CHAT-FREE", "chat-free ", ""),
    oddText,
  ),
);

/** `expires_at` values: ISO dates and date-times, future and past, and everything near them. */
export const oddDate = mostly(
  fc.oneof(
    fc.constantFrom("2099-01-01", "2099-12-31T23:59:59Z", "2099-06-30T12:00:00+05:30", "9999-12-31"),
    fc.date({ noInvalidDate: true, min: new Date("2100-01-01"), max: new Date("9999-12-31") })
      .map((d) => d.toISOString()),
  ),
  fc.oneof(
    fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    fc.constantFrom(
      "2099-02-30",
      "2099-02-29",
      "2096-02-29",
      "2099-13-01",
      "2099-00-10",
      "2099-01-01T24:00:00Z",
      "2099-01-01T23:59:60Z",
      "2099-01-01T00:00:00",
      "2099-01-01T00:00:00+25:00",
      "2099-01-01T00:00:00-00:00",
      "2099-01-01t00:00:00z",
      "2099-01-01T00:00:00.123456789Z",
      "+275760-09-13T00:00:00Z",
      "-000001-01-01T00:00:00Z",
      "0000-01-01",
      "9999-12-31T23:59:59.999Z",
      "1970-01-01T00:00:00Z",
      "2020-01-01",
      "2099",
      "2099-01",
      "now",
      "",
    ),
    oddText,
  ),
);

/** `grace` values: durations valid and not, as text and as numbers. */
const oddGrace = mostly(
  fc.oneof(
    fc.constantFrom("500ms", "60s", "5m", "1h", "30d", "0s", 0, 2_592_000_000),
    fc.integer({ min: 0, max: 2_592_000_000 }),
  ),
  fc.oneof(
    fc.stringMatching(/^[0-9]{1,4}(\.[0-9]{1,3})?(ms|s|m|h|d|MS|H|w|y)?$/),
    fc.constantFrom(
      "31d",
      "2592000001ms",
      " 5 m ",
      "-5s",
      "1e3ms",
      "1.5s",
      ".5s",
      "5",
      `${"9".repeat(400)}ms`,
      "NaNs",
      "Infinity",
      2_592_000_001,
      -1,
      1.5,
      1e308,
      -1e308,
      Number.MAX_SAFE_INTEGER + 2,
    ),
    junk,
  ),
);

/** A positive integer limit, or a number just outside what is allowed. */
const oddCount = mostly(
  fc.integer({ min: 1, max: 1_000_000 }),
  fc.constantFrom(
    0,
    -1,
    1.5,
    1e308,
    -1e308,
    Number.MAX_SAFE_INTEGER,
    Number.MAX_SAFE_INTEGER + 2,
    2 ** 53,
    5e-324,
  ),
);

const tokenFields = {
  environment: mostly(fc.constantFrom("default", "prod", "staging"), oddText),
  description: mostly(fc.oneof(fc.string({ maxLength: 40 }), fc.constant(null)), oddText),
  models: mostly(
    fc.array(modelPattern, { minLength: 1, maxLength: 3 }),
    fc.oneof(
      fc.constant([]),
      fc.integer({ min: 257, max: 400 }).map((n) => Array.from({ length: n }, () => "chat-free")),
    ),
  ),
  endpoints: mostly(
    fc.oneof(fc.subarray([...ENDPOINTS], { minLength: 1 }), fc.constant(null)),
    fc.constantFrom([], ["chat", "chat"], ["completions"], "chat"),
  ),
  limits: mostly(
    fc.oneof(
      fc.record({ rpm: oddCount, tpm: oddCount, concurrent: oddCount }, { requiredKeys: [] }),
      fc.constant(null),
    ),
    fc.constantFrom({}, { rpm: "60" }, { rps: 1 }),
  ),
  budget: mostly(
    fc.oneof(
      fc.record({
        tokens: oddCount,
        period: mostly(fc.constantFrom("day", "month"), fc.constantFrom("week", "")),
        stop_streams: fc.boolean(),
      }, { requiredKeys: ["tokens", "period"] }),
      fc.constant(null),
    ),
    fc.oneof(
      fc.constantFrom({}, { tokens: 5, cost: 5, period: "day" }),
      fc.record({
        cost: fc.oneof(
          fc.double({ min: 0.001, max: 1e6, noNaN: true }),
          fc.constantFrom(0, -1, 1e308, 5e-324),
        ),
        period: fc.constantFrom("day", "month"),
      }),
    ),
  ),
  max_tokens: mostly(fc.oneof(fc.integer({ min: 1, max: 1_000_000 }), fc.constant(null)), oddCount),
  expires_at: mostly(fc.oneof(oddDate, fc.constant(null)), oddText),
  disabled: mostly(fc.boolean(), fc.constantFrom("false", 0, null)),
};

/** Field names an admin sets, and those nobody may send. */
const FIELDS = Object.keys(tokenFields);
const FORBIDDEN = ["sha256", "token", "id", "secrets", "created_at", "created_by", "revoked_at", "source"];

/** A `POST /admin/tokens` body: name and models always, the rest often. */
const createBody = fc.record({ name: tokenName, ...tokenFields }, { requiredKeys: ["name", "models"] })
  .map((b) => b as Record<string, unknown>);
/** A `PATCH` body: a few fields. */
const patchBody = fc.record(tokenFields, { requiredKeys: [] }).map((b) => b as Record<string, unknown>);
/** A rotate body: usually `grace`, sometimes nothing. */
const rotateBody = fc.record({ grace: oddGrace }, { requiredKeys: [] }).map((b) =>
  b as Record<string, unknown>
);

/**
 * Hash- and secret-shaped values: sent only where the gateway must never echo them (as `sha256`, `token` or an
 * unknown field's value), so an answer holding one would be a leak of what was sent, and is caught as such.
 */
const secretShaped = fc.oneof(
  fc.stringMatching(/^[0-9a-f]{64}$/),
  fc.stringMatching(/^gw-[A-Za-z0-9_-]{43}$/),
);

/** One change to a body. */
type Mutation =
  | { kind: "set"; key: string; value: unknown }
  | { kind: "delete"; key: string }
  | { kind: "extra"; key: string; value: unknown };

function mutationArb(keys: readonly string[]): fc.Arbitrary<Mutation> {
  return fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({ kind: fc.constant("set" as const), key: fc.constantFrom(...keys), value: junk }),
    },
    fc.record({ kind: fc.constant("delete" as const), key: fc.constantFrom(...keys) }),
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant("extra" as const),
        key: fc.oneof(
          fc.constantFrom(...FORBIDDEN, "__proto__", "constructor", "toString", "hasOwnProperty"),
          fc.string({ maxLength: 12 }).map((k) => `x_${k}`),
          oddText,
        ),
        value: fc.oneof(secretShaped, fc.jsonValue({ maxDepth: 3 })),
      }),
    },
    // `name` is echoed when valid (a hash-shaped name is a valid one), so it gets no secret-shaped value.
    fc.record({
      kind: fc.constant("extra" as const),
      key: fc.constant("name"),
      value: fc.jsonValue({ maxDepth: 2 }),
    }),
  );
}

/** Applies `mutation` to `body` in place; a `__proto__` key stays a plain key, as JSON.parse makes it. */
function mutate(body: Record<string, unknown>, mutation: Mutation): void {
  if (mutation.kind === "delete") {
    delete body[mutation.key];
    return;
  }
  Object.defineProperty(body, mutation.key, {
    value: mutation.value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

// --- requests -----------------------------------------------------------------------------------------------

/** The fuzz config's `server.max_body_size`. */
export const FUZZ_MAX_BODY = 64 * 1024;

/** Headers with the admin token most of the time, else anything `headersArb` makes. */
function adminHeadersArb(tokens: FuzzTokens): fc.Arbitrary<HeaderSpec> {
  return fc.record({
    spec: headersArb(tokens),
    admin: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, fc.constant(false)),
  }).map(({ spec, admin }) =>
    admin ? { ...spec, authorization: { value: `Bearer ${tokens.admin}`, caller: "admin" as const } } : spec
  );
}

/** A known id most of the time (sometimes with something after it), else an odd one. */
export const idRef: fc.Arbitrary<IdRef> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("known" as const),
      pick: fc.nat(),
      suffix: fc.oneof(
        { weight: 8, arbitrary: fc.constant("") },
        fc.constantFrom("%00", "x", "%20", "/", "/..", "%2F..", "?x=1", "#frag", "%", "."),
      ),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.oneof(
      fc.stringMatching(/^tok_[0-9a-f]{24}$/),
      { weight: 2, arbitrary: fc.constantFrom("cfg_fuzz-file", "cfg_test-all") },
      fc.constantFrom("cfg_", "cfg_nope", "cfg_%00", "tok_", "TOK_0"),
      fc.string({ unit: "grapheme", maxLength: 20 }).map(encodeURIComponent),
      fc.string({ maxLength: 20 }).map((s) => s.replace(/[?#\s%/]/g, "")),
      fc.constantFrom(
        "%",
        "%E0%A4%A",
        "%00",
        "%2e%2e",
        "..",
        ".",
        "%2e",
        "a%2Fb",
        "%252e%252e",
        "%ED%A0%80",
        "%C0%AE%C0%AE",
        "%F0%9F%98%80",
        "x".repeat(3_000),
        `tok_${"z".repeat(10_000)}`,
      ),
    ).map((text) => ({ kind: "raw" as const, text })),
  },
);

/**
 * A token body request: a plausible body, often mutated, sometimes damaged, under generated headers. Well-formed
 * JSON nested past the limit must be a 400 `json_too_deep`, a body past the size limit a 413, whenever the
 * headers let the gateway read it.
 */
function bodyRequestArb(
  method: string,
  path: string,
  valid: fc.Arbitrary<Record<string, unknown>>,
  keys: readonly string[],
  tokens: FuzzTokens,
  withId: boolean,
): fc.Arbitrary<AdminRequest> {
  return fc.record({
    body: valid,
    mutations: fc.oneof(
      { weight: 3, arbitrary: fc.constant([] as Mutation[]) },
      { weight: 2, arbitrary: fc.array(mutationArb(keys), { minLength: 1, maxLength: 3 }) },
    ),
    damage: damageArb,
    huge: fc.oneof({ weight: 30, arbitrary: fc.constant(0) }, fc.integer({ min: 1, max: 3 * FUZZ_MAX_BODY })),
    empty: fc.oneof({ weight: 20, arbitrary: fc.constant(false) }, fc.constant(true)),
    id: idRef,
    spec: adminHeadersArb(tokens),
  }).map(({ body, mutations, damage, huge, empty, id, spec }) => {
    for (const mutation of mutations) mutate(body, mutation);
    if (huge > 0) body.description = "x".repeat(huge);
    const bytes = empty ? new Uint8Array(0) : damaged(JSON.stringify(body), damage);
    const readable = spec.contentType.json &&
      (spec.contentLength === "exact" || spec.contentLength === "none") &&
      spec.authorization.caller === "admin";
    let expect: AdminRequest["expect"];
    if (readable && bytes.byteLength > FUZZ_MAX_BODY) expect = { status: 413, code: "request_too_large" };
    else if (readable) {
      const text = utf8(bytes);
      if (text !== null && nestingDepth(text) > MAX_JSON_DEPTH && wellFormed(text)) {
        expect = { status: 400, code: "json_too_deep" };
      }
    }
    return { method, path, id: withId ? id : undefined, body: bytes, spec, expect };
  });
}

export const createRequestArb = (tokens: FuzzTokens) =>
  bodyRequestArb("POST", "/admin/tokens", createBody, ["name", ...FIELDS], tokens, false);

export const patchRequestArb = (tokens: FuzzTokens) =>
  bodyRequestArb("PATCH", `/admin/tokens/${ID}`, patchBody, FIELDS, tokens, true);

export const rotateRequestArb = (tokens: FuzzTokens) =>
  bodyRequestArb("POST", `/admin/tokens/${ID}/rotate`, rotateBody, ["grace"], tokens, true);

// --- queries ------------------------------------------------------------------------------------------------

/** A query value: a plausible one for the parameter, else odd text. */
const value = (plausible: fc.Arbitrary<string>) => mostly(plausible, oddText);

const isoish = value(fc.oneof(
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom("2026-12-31", "9999-99-99", "now", "+275760-09-13T00:00:00Z", "-271821-04-20", "0"),
));
const limitValue = value(
  fc.oneof(
    fc.integer({ min: 1, max: 40 }).map(String),
    fc.integer({ min: -5, max: 1_005 }).map(String),
    fc.constantFrom("1e3", "0x10", "00100", "1.0", ""),
  ),
);

/** Raw query text that URLSearchParams would not make: stray `%`, bare keys, repeated keys. */
const rawQuery = fc.constantFrom(
  "limit=%",
  "limit=%E0%A4%A",
  "token=%00",
  "q=%ED%A0%80",
  "&&&",
  "=",
  "==x",
  "limit=1&limit=2000",
  "limit",
  "after",
  "token",
  "model",
  "a[b]=1",
  "%00=1",
  "before=%2B%2F",
);

/** `?` and the pairs of `params` (each present or not), sometimes raw text after them. */
function queryArb(params: Record<string, fc.Arbitrary<string>>): fc.Arbitrary<string> {
  return fc.record({
    pairs: fc.record(params, { requiredKeys: [] }),
    raw: fc.option(rawQuery, { freq: 5, nil: "" }),
  }).map(({ pairs, raw }) => {
    const text = new URLSearchParams(pairs as Record<string, string>).toString();
    return `?${[text, raw].filter((s) => s !== "").join("&")}`;
  });
}

const nameValue = value(fc.oneof(
  fc.nat(NAME_POOL - 1).map((n) => `fuzz-${n}`),
  fc.constantFrom("fuzz-file", "ops", "FUZZ-1"),
));

/** `GET /admin/tokens` queries; `after` may name a known id, resolved when sent (`{id}`). */
export const tokensQuery = queryArb({
  environment: value(fc.constantFrom("default", "prod", "staging", "test")),
  source: value(fc.constantFrom("api", "config")),
  status: value(fc.constantFrom(...TOKEN_STATUSES)),
  q: value(fc.constantFrom("fuzz", "FUZZ-1", "-", "")),
  limit: limitValue,
  after: value(fc.constantFrom(ID, "cfg_fuzz-file", "cfg_test-all", "tok_000000000000000000000000")),
});

export const auditQuery = queryArb({
  token: value(fc.oneof(nameValue, fc.constant(ID))),
  actor: value(fc.constantFrom("ops", "unknown")),
  action: value(fc.constantFrom(...AUDIT_ACTIONS)),
  from: isoish,
  to: isoish,
  limit: limitValue,
  after: value(
    fc.oneof(fc.stringMatching(/^aud_[0-9a-f]{24}$/), fc.constantFrom(AUD, AUD, "aud_", "aud_%00")),
  ),
});

export const explainQuery = queryArb({
  token: nameValue,
  model: value(fc.constantFrom(...FUZZ_ALIASES, "__proto__", "constructor", "chat-*", "CHAT-FREE")),
  endpoint: value(fc.constantFrom(...ENDPOINTS, "__proto__", "completions", "hasOwnProperty")),
});

/** `GET /admin/usage` and `/admin/requests` queries (`status`, `limit` and `before` are read by the latter). */
export const usageQuery = queryArb({
  from: isoish,
  to: isoish,
  token: nameValue,
  environment: value(fc.constantFrom("default", "test", "prod")),
  alias: value(fc.constantFrom(...FUZZ_ALIASES)),
  provider: value(fc.constantFrom("local", "nope")),
  upstream_model: value(fc.constantFrom("echo", "hash")),
  outcome: value(fc.constantFrom("allow", "deny", "modify")),
  rule: value(fc.constantFrom("token.rpm", "alias.content:x", "a,b", "token.budget")),
  group_by: value(
    fc.array(fc.constantFrom(...USAGE_GROUP_KEYS), { maxLength: 4 }).map((k) => k.join(",")),
  ),
  status: value(fc.constantFrom("429", "4xx", "5XX", "600", "200", "2xx")),
  limit: limitValue,
  before: value(fc.constantFrom(CURSOR, CURSOR, "eyJhIjoxfQ", "WyIiLCIiXQ", "WyJcdTAwMDAiLCJ4Il0")),
});

/** A GET of `path + query` under admin-ish headers (HEAD, and a method the route does not take, sometimes). */
export function getRequestArb(
  path: string,
  query: fc.Arbitrary<string>,
  tokens: FuzzTokens,
  methods: readonly string[] = ["GET", "GET", "GET", "GET", "HEAD", "POST", "PUT"],
): fc.Arbitrary<AdminRequest> {
  return fc.record({ query, method: fc.constantFrom(...methods), spec: adminHeadersArb(tokens), id: idRef })
    .map(({ query, method, spec, id }) => ({
      method,
      path: `${path}${query}`,
      id,
      body: method === "GET" || method === "HEAD" ? undefined : encoder.encode("{}"),
      spec,
    }));
}

/** Any method on a token's path, its rotate path or what lies around them, with an odd id. */
export function idPathRequestArb(tokens: FuzzTokens): fc.Arbitrary<AdminRequest> {
  return fc.record({
    template: fc.constantFrom(
      `/admin/tokens/${ID}`,
      `/admin/tokens/${ID}`,
      `/admin/tokens/${ID}/rotate`,
      `/admin/tokens/${ID}/rotate/`,
      `/admin/tokens/${ID}/x`,
      `/admin/tokens/${ID}/`,
      "/admin/tokens//rotate",
      "/admin/tokens/",
      `/admin/tokens/${ID}/rotate?grace=1h`,
    ),
    method: fc.oneof(
      { weight: 12, arbitrary: fc.constantFrom("GET", "PATCH", "POST", "HEAD") },
      fc.constantFrom("DELETE", "PUT", "OPTIONS", "TRACE"),
    ),
    body: fc.oneof(
      fc.constant(undefined),
      fc.constantFrom('{"disabled":true}', '{"grace":"1s"}', "{}", "null", "{", '{"description":"\\u0000"}')
        .map((t) => encoder.encode(t)),
    ),
    id: idRef,
    spec: adminHeadersArb(tokens),
  }).map(({ template, method, body, id, spec }) => ({
    method,
    path: template,
    id,
    body: method === "GET" || method === "HEAD" ? undefined : body,
    spec,
  }));
}

/**
 * The "JSON error in a 200" tests: an upstream (a proxy such as OpenRouter, in any vendor's format) answers HTTP
 * 200 with an error as its JSON body, in place of the answer or of the event stream that was asked. The gateway
 * must take it for the upstream's error (its status, its words with the key scrubbed, retried and fallen back
 * from as that HTTP error would be, recorded as failed), not for a broken answer (a generic 502).
 *
 * A test file keeps its vendor's bodies and its client API's request; this helper runs the rest: one raw
 * upstream ({@linkcode startRawUpstream}) behind a gateway with a short backoff ({@linkcode withTestGateway}),
 * and the checks every client API's stream case makes.
 *
 * @module
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "./gateway.ts";
import { type RawRequest, type RawStep, type RawUpstream, startRawUpstream } from "./raw_upstream.ts";
import { usageRows } from "./usage_rows.ts";
import { withTestGateway } from "./with_gateway.ts";

/** An error body as a client API's client reads it: every shape has an `error` object. */
export interface ErrorBody {
  type?: string;
  error: { type?: string; code?: string | number; status?: string; message: string };
}

/**
 * Runs `fn` against a gateway whose `providers:` and `models:` (`config(url)`) point at one raw upstream at
 * `url`, answering each request by `stepFor` (the alias's targets differ by model), with a backoff of a few
 * milliseconds; stops both whatever happens.
 */
export function withUpstreamGateway(
  config: (url: string) => string,
  stepFor: (request: RawRequest) => RawStep,
  fn: (gw: TestGateway, upstream: RawUpstream) => Promise<void>,
): Promise<void> {
  return withTestGateway(() => {
    const upstream = startRawUpstream();
    upstream.stepFor = stepFor;
    const yaml = `${
      config(upstream.url).trim()
    }\nrouting: { backoff_base: 5ms, backoff_max: 10ms }\n${TEST_TOKENS_YAML}`;
    return { fakes: upstream, config: yaml };
  }, fn);
}

/**
 * Asserts that a request whose upstream answered a 200 with its error got that error over HTTP, as an HTTP 429
 * would be (a stream request too: nothing of its stream was sent yet): status 429 after `attempts` attempts, a
 * JSON error body without the upstream's `key`. Returns the body, for the client API's own shape.
 */
export async function assertRefused(
  res: Response,
  { attempts = "2", key }: { attempts?: string; key: string },
): Promise<ErrorBody> {
  const text = await res.text();
  assert.equal(res.status, 429, text);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/, text);
  assert.equal(res.headers.get("x-gateway-attempts"), attempts, text);
  assert(!text.includes(key), text);
  const body = JSON.parse(text) as ErrorBody;
  assert.equal(typeof body.error.message, "string", text);
  return body;
}

/**
 * Asserts that the usage store holds `count` records, each a failed request: status 429 and the error's code in
 * the client API's words (`rate_limit_exceeded`; Anthropic's Messages API: `rate_limit_error`).
 */
export async function assertRecordedRateLimited(
  gw: TestGateway,
  count: number,
  code = "rate_limit_exceeded",
): Promise<void> {
  const rows = await usageRows<{ status: number; error_code: string | null }>(gw, count);
  assert.deepEqual(
    rows.map((r) => [r.status, r.error_code]),
    Array.from({ length: count }, () => [429, code]),
  );
}

/** Asserts that a stream request was served as a 200 event stream by `model`; returns the stream's text. */
export async function assertStreamServed(res: Response, model: string): Promise<string> {
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/, text);
  assert.equal(res.headers.get("x-gateway-model"), model);
  return text;
}

/** A chat completion stream request for `model`: chat's own, or one translated to another vendor's upstream. */
export function chatStream(gw: TestGateway, model: string): Promise<Response> {
  return fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model, stream: true, messages: [{ role: "user", content: "hi" }] }),
  });
}

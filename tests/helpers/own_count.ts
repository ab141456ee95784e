/**
 * The gateway's own token count, seen end to end: an upstream that answers without any usage has its answer
 * counted by the gateway (`tokens_estimated`), and what the model wrote in a call, a reasoning field or a code
 * part must count as the same text does where it is plain content. One such test asks the same question of two
 * answers that differ only in where the text stands, in a JSON answer and in a stream, and compares the two
 * records' `completion_tokens`: left out, an answer made of calls would be recorded (and settled against token
 * limits and budgets) as a few tokens.
 *
 * A test file keeps its vendor's answers and its client API's request; this helper runs them: a raw upstream
 * ({@linkcode startRawUpstream}) answering as the test says, a gateway in-process ({@linkcode inProcessGateway})
 * routing one alias to it, the request, and the record it wrote.
 *
 * @module
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { UsageRecord } from "../../lib/usage/record.ts";
import { inProcessGateway } from "./in_process.ts";
import { type RawRequest, type RawStep, startRawUpstream } from "./raw_upstream.ts";
import { waitFor } from "./usage.ts";

/** The alias every own-count gateway routes to its one upstream, and the token that may use it. */
export const OWN_COUNT_ALIAS = "counted";
export const OWN_COUNT_TOKEN = "gw-own-count-usage-0123456789";

/** A client's request to the gateway: its path from the root, its headers and its JSON body. */
export interface ClientCall {
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

/** One vendor and client API of the own-count tests, answering {@linkcode OwnCountCase.answer}'s text as `K`. */
export interface OwnCountCase<K extends string> {
  /** The `up` provider's YAML flow mapping for an upstream at `url`: `{ type: gemini, base_url: "…/v1beta", … }`. */
  provider(url: string): string;
  /** The upstream's answer saying the test's text as `kind`, without any usage, JSON or streamed. */
  answer(kind: K, stream: boolean): RawStep;
  /**
   * The client's request, JSON or streamed, to `alias` with `token` (in its API's own header), for an answer
   * saying the text as `kind` (a request offers the tool its answer calls).
   */
  request(ask: { kind: K; stream: boolean; alias: string; token: string }): ClientCall;
  /** A piece of the text that the client's answer must carry, whatever `kind` said it. */
  shows: string;
}

/** Whether the gateway asked the upstream for a stream: Gemini's stream method, or a body's `stream: true`. */
function asksStream(request: RawRequest): boolean {
  if (request.path.includes(":streamGenerateContent")) return true;
  try {
    return (JSON.parse(request.body) as { stream?: unknown }).stream === true;
  } catch {
    return false;
  }
}

/**
 * The usage record of one request of `spec`'s client API whose upstream answered as `kind`, JSON or streamed (a
 * stream's record is written as it ends, so this waits for it); asserts the client got a 200 carrying
 * {@linkcode OwnCountCase.shows}, and exactly one record.
 */
export async function ownCountRecord<K extends string>(
  spec: OwnCountCase<K>,
  kind: K,
  stream: boolean,
): Promise<UsageRecord> {
  const upstream = startRawUpstream();
  upstream.stepFor = (request) => spec.answer(kind, asksStream(request));
  try {
    const gw = inProcessGateway(`
providers:
  up: ${spec.provider(upstream.url)}
models:
  ${OWN_COUNT_ALIAS}: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ] }
tokens:
  - { name: app, sha256: ${hashToken(OWN_COUNT_TOKEN)}, models: ["*"] }
`);
    const call = spec.request({ kind, stream, alias: OWN_COUNT_ALIAS, token: OWN_COUNT_TOKEN });
    const res = await gw.fetch(call.path, {
      method: "POST",
      headers: { ...call.headers, "content-type": "application/json" },
      body: JSON.stringify(call.body),
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert(text.includes(spec.shows), text);
    await waitFor(() => gw.records.length > 0, 5_000).catch(() => {}); // asserted just below
    assert.equal(gw.records.length, 1, JSON.stringify(gw.records));
    return gw.records[0];
  } finally {
    await upstream.stop();
  }
}

/**
 * Asserts that the gateway counts an answer saying the text as `kind` as it counts one saying it as `like` (the
 * plain-content form), both by its own count, and that the plain one counts more than a few tokens (so the two
 * agreeing is not two zeros).
 */
export async function assertCountedAlike<K extends string>(
  spec: OwnCountCase<K>,
  kind: K,
  like: K,
  stream: boolean,
): Promise<void> {
  const said = await ownCountRecord(spec, kind, stream);
  const plain = await ownCountRecord(spec, like, stream);
  assert.equal(said.tokens_estimated, true, JSON.stringify(said));
  assert.equal(plain.tokens_estimated, true, JSON.stringify(plain));
  assert(plain.completion_tokens > 10, JSON.stringify(plain));
  assert.equal(said.completion_tokens, plain.completion_tokens, JSON.stringify(said));
}

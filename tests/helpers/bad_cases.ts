/**
 * The shared shape of the bad-request tables (`tests/chat/bad_requests_test.ts` for the API, and
 * `tests/admin/admin_bad_requests_test.ts` for the admin API): a case, the request it makes in-process or over a
 * socket, and what every error answer must satisfy whatever the route.
 *
 * @module
 */
import assert from "node:assert/strict";

export type Bytes = Uint8Array<ArrayBuffer>;
/** A raw body: text, bytes, or a chunked stream (no Content-Length) made of these chunks. */
export type RawBody = string | Bytes | { chunks: Bytes[] };

/** One bad request and the error it must get. */
export interface BadCase {
  name: string;
  method: string;
  path: string;
  /** Headers on top of the defaults (the credential, a JSON content type with a body); `null` removes one. */
  headers?: Record<string, string | null>;
  body?: RawBody;
  status: number;
  type: string;
  code: string | null;
  param: string | null;
  /** Expected `Allow` header (405 only). */
  allow?: string;
}

const encoder = new TextEncoder();

/** The request of `c` with `authorization`; `wire` when it goes over a socket (fetch adds Content-Length). */
export function requestInit(
  c: BadCase,
  authorization: string,
  wire: boolean,
): RequestInit & { duplex?: "half" } {
  const headers = new Headers({ authorization });
  if (c.body !== undefined) headers.set("content-type", "application/json");
  for (const [name, value] of Object.entries(c.headers ?? {})) {
    if (value === null) headers.delete(name);
    else headers.set(name, value);
  }
  const init: RequestInit & { duplex?: "half" } = { method: c.method, headers };
  if (c.body === undefined) return init;
  if (typeof c.body === "object" && "chunks" in c.body) {
    const chunks = c.body.chunks;
    init.body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        controller.close();
      },
    });
    init.duplex = "half";
    return init;
  }
  // Bytes, never a string: a string body would get an implicit text/plain content type.
  const bytes = typeof c.body === "string" ? encoder.encode(c.body) : c.body;
  init.body = bytes;
  // A socket request carries Content-Length; fetch adds it there, so in-process we add it by hand.
  if (!wire) headers.set("content-length", String(bytes.byteLength));
  return init;
}

/** A frame of a stack trace or a source path: never part of an error message. */
export const STACK_LINE = /\bat \S*(\/|\\)\S*|\.ts:\d|file:\/\//;

/**
 * Everything every error answer must satisfy (status, JSON content type, request id, exactly OpenAI's error
 * keys, a message without a stack trace, this case's type, code and param, `Allow` on a 405,
 * `WWW-Authenticate` on a 401, none of `secrets`); resolves to the body text for further checks.
 */
export async function assertErrorResponse(
  c: BadCase,
  response: Response,
  secrets: readonly string[],
): Promise<{ text: string; message: string }> {
  const label = `case "${c.name}"`;
  const text = await response.text();
  assert.equal(response.status, c.status, `${label}: status (body: ${text.slice(0, 500)})`);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json\b/, `${label}: content-type`);
  assert.ok(response.headers.get("x-request-id"), `${label}: x-request-id`);
  const body = JSON.parse(text);
  assert.deepEqual(Object.keys(body), ["error"], `${label}: top-level keys`);
  assert.deepEqual(
    Object.keys(body.error).sort(),
    ["code", "message", "param", "type"],
    `${label}: error keys`,
  );
  const { message, type, code, param } = body.error;
  assert.ok(typeof message === "string" && message.length > 0, `${label}: empty message`);
  assert.doesNotMatch(message, STACK_LINE, `${label}: stack trace in message`);
  assert.deepEqual({ type, code, param }, { type: c.type, code: c.code, param: c.param }, label);
  for (const secret of secrets) assert.ok(!text.includes(secret), `${label}: a token leaked`);
  if (c.allow !== undefined) assert.equal(response.headers.get("allow"), c.allow, `${label}: Allow`);
  if (c.status === 401) assert.ok(response.headers.get("www-authenticate"), `${label}: WWW-Authenticate`);
  return { text, message };
}

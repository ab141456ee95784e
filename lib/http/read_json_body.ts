/**
 * Reads a request body as a JSON object while enforcing the size limit as the bytes arrive, so a client
 * cannot make the gateway buffer more than the limit, and every way a body can be wrong gets its own clear
 * 4xx in OpenAI's error shape.
 *
 * @module
 */
import { GatewayError, invalidRequest } from "../errors.ts";
import type { JsonObject } from "../providers/types.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

function tooLarge(limit: number): GatewayError {
  return new GatewayError(413, `Request body too large: the limit is ${limit} bytes.`, {
    type: "invalid_request_error",
    code: "request_too_large",
  });
}

/**
 * True for `application/json` and `application/*+json`, with or without parameters, and for
 * `application/x-www-form-urlencoded`: `curl -d '{…}'` sends that by default, and refusing the most common way
 * people first try an API would help nobody (the body must still be JSON).
 */
function isJsonMediaType(contentType: string): boolean {
  const mediaType = contentType.split(";", 1)[0].trim().toLowerCase();
  return mediaType === "application/json" || mediaType === "application/x-www-form-urlencoded" ||
    /^application\/[a-z0-9.+-]+\+json$/.test(mediaType);
}

/**
 * OpenAI answers every body it cannot parse with this 400 (code and param null); the gateway does the same
 * for malformed, truncated, empty and non-UTF-8 bodies, adding only what exactly was wrong.
 */
function unparseable(detail: string): GatewayError {
  return invalidRequest(
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your " +
      "HTTP library correctly. The API expects a JSON payload, but what was sent was not valid JSON.)" +
      (detail ? ` ${detail}` : ""),
  );
}

async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
  if (request.body === null) return new Uint8Array(0);
  if (declared !== null) {
    // The length is known and within the limit, and HTTP framing stops the body at that length: read it in
    // one call instead of chunk by chunk.
    try {
      return new Uint8Array(await request.arrayBuffer());
    } catch (err) {
      throw new GatewayError(400, "The request body could not be read completely.", {
        type: "invalid_request_error",
        cause: err,
      });
    }
  }
  const reader = request.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  while (true) {
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await reader.read();
    } catch (err) {
      // The client went away or broke its chunked encoding mid-body: a client error, not a gateway bug.
      throw new GatewayError(400, "The request body could not be read completely.", {
        type: "invalid_request_error",
        cause: err,
      });
    }
    const { done, value } = chunk;
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    parts.push(value);
  }
  if (parts.length === 1) return parts[0];
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.byteLength;
  }
  return bytes;
}

function jsonKind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

/**
 * Returns the body as a JSON object or throws a {@linkcode GatewayError}: 415 for a non-JSON content type
 * (a missing one, or curl's default form type, is read as JSON), 413 over `limit` bytes, 400 for a body
 * that could not be read, invalid UTF-8, malformed JSON, or JSON that is not an object.
 */
export async function readJsonBody(request: Request, limit: number): Promise<JsonObject> {
  const contentType = request.headers.get("content-type");
  if (contentType !== null && !isJsonMediaType(contentType)) {
    throw new GatewayError(415, "Unsupported Content-Type: send the request body as application/json.", {
      type: "invalid_request_error",
      code: "unsupported_media_type",
    });
  }
  const bytes = await readLimited(request, limit);
  if (bytes.byteLength === 0) throw unparseable("(The request body is empty.)");
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw unparseable("(The request body is not valid UTF-8.)");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw unparseable("");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw invalidRequest(
      `Invalid type for the request body: expected a JSON object, but got ${jsonKind(value)} instead.`,
    );
  }
  return value as JsonObject;
}

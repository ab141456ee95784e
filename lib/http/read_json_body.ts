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

/** True for `application/json`, `application/*+json`, with or without parameters. */
function isJsonMediaType(contentType: string): boolean {
  const mediaType = contentType.split(";", 1)[0].trim().toLowerCase();
  return mediaType === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(mediaType);
}

async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  while (true) {
    const { done, value } = await reader.read();
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

/**
 * Returns the body as a JSON object or throws a {@linkcode GatewayError}: 415 for a non-JSON content type
 * (a missing content type is accepted, as curl users often omit it), 413 over `limit` bytes, 400 for invalid
 * UTF-8, malformed JSON, or JSON that is not an object.
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
  if (bytes.byteLength === 0) {
    throw invalidRequest("The request body is empty; send a JSON object.", null, "invalid_json");
  }
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw invalidRequest("The request body is not valid UTF-8.", null, "invalid_encoding");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidRequest(
      "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your " +
        "HTTP library correctly. The API expects a JSON payload, but what was sent was not valid JSON.)",
      null,
      "invalid_json",
    );
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw invalidRequest("The request body must be a JSON object.", null, "invalid_json");
  }
  return value as JsonObject;
}

/**
 * A request body's `Content-Encoding` (RFC 9110 §8.4), undone before the body is read as JSON. Real clients
 * compress what they send: the Codex CLI signed in with ChatGPT sends its `/v1/responses` bodies zstd-compressed
 * (`Content-Encoding: zstd`), and a gateway that ignored the header answered them 400 ("not valid UTF-8"),
 * while a body marked with a coding nobody knows passed as if it were plain.
 *
 * What is decoded, and how strictly (the gateway interprets the header, so it holds it to the RFCs):
 * - `identity` is no coding; `gzip` and `x-gzip` (RFC 1952, several members in a row too), `deflate` (the zlib
 *   format of RFC 1950, as RFC 9110 §8.4.1.2 defines it: raw deflate without the zlib wrapper, which some
 *   browsers accept in *responses*, is refused as corrupt, since no client is known to send it), `br`
 *   (RFC 7932) and `zstd` (RFC 8878, several frames in a row too, each frame checked whole).
 * - Codings listed together (`gzip, zstd`) were applied in that order, so they are undone last first. At most
 *   {@linkcode MAX_CODINGS} of them: each layer may cost a decode up to the size limit, and no client stacks more.
 * - Any other coding, or more layers, is a 415 before the body is read (RFC 9110 §15.5.16).
 *
 * Every layer's output is bounded by `server.max_body_size`, the bound of the body as it arrives: the decoders
 * (node:zlib, on both runtimes) are given it as `maxOutputLength` and stop once they pass it, so a small body
 * that would decode to gigabytes costs about the limit, never the gigabytes (the 413 of a body too large).
 * Decoding is synchronous: a 4 MiB body takes a few milliseconds of the thread, less than parsing its JSON.
 *
 * @module
 */
import zlib from "node:zlib";
import { GatewayError } from "../errors.ts";
import { ZstdFrameError, zstdFrames } from "./zstd_frames.ts";

/** A content coding the gateway decodes (`x-gzip` is read as `gzip`). */
export type ContentCoding = "gzip" | "deflate" | "br" | "zstd";

/** How many codings one body may stack. */
export const MAX_CODINGS = 2;

const KNOWN: Readonly<Record<string, ContentCoding>> = {
  "gzip": "gzip",
  "x-gzip": "gzip",
  "deflate": "deflate",
  "br": "br",
  "zstd": "zstd",
};

/** The 413 of a body past `server.max_body_size`, as it arrived or once decoded. */
export function bodyTooLarge(limit: number): GatewayError {
  return new GatewayError(413, `Request body too large: the limit is ${limit} bytes.`, {
    type: "invalid_request_error",
    code: "request_too_large",
  });
}

function unsupported(detail: string): GatewayError {
  return new GatewayError(
    415,
    `Unsupported Content-Encoding: ${detail} The request body may be sent as it is (identity) or compressed ` +
      `with one or ${MAX_CODINGS} of gzip, deflate, br and zstd.`,
    { type: "invalid_request_error", code: "unsupported_content_encoding" },
  );
}

function undecodable(coding: ContentCoding, err: unknown): GatewayError {
  const detail = err instanceof ZstdFrameError ? ` (${err.message}.)` : "";
  return new GatewayError(
    400,
    `The request body could not be decoded: it is not valid ${coding} data, as its Content-Encoding says.` +
      detail,
    { type: "invalid_request_error", code: "invalid_body_encoding" },
  );
}

/**
 * The codings of a `Content-Encoding` header value in the order they were applied, `identity` and empty list
 * elements left out (so `[]` means the body is as sent). Throws the 415 for a coding the gateway does not
 * decode (named in the message) or more than {@linkcode MAX_CODINGS} of them.
 */
export function contentCodings(header: string): ContentCoding[] {
  const codings: ContentCoding[] = [];
  for (const element of header.split(",")) {
    const name = element.trim().toLowerCase();
    if (name === "" || name === "identity") continue;
    const coding = Object.hasOwn(KNOWN, name) ? KNOWN[name] : undefined;
    if (coding === undefined) {
      throw unsupported(`"${name.slice(0, 40)}" is not a coding the gateway decodes.`);
    }
    codings.push(coding);
  }
  if (codings.length > MAX_CODINGS) throw unsupported(`${codings.length} codings are stacked.`);
  return codings;
}

/** node:zlib's error for output past `maxOutputLength` (a `RangeError` on both runtimes). */
function isPastLimit(err: unknown): boolean {
  return err instanceof RangeError || (err as { code?: unknown } | null)?.code === "ERR_BUFFER_TOO_LARGE";
}

function decodeOne(bytes: Uint8Array, coding: ContentCoding, limit: number): Uint8Array {
  // maxOutputLength must be at least 1: a layer with no room left is still allowed to decode to nothing.
  const options = { maxOutputLength: Math.max(limit, 1) };
  let out: Uint8Array;
  switch (coding) {
    case "gzip":
      out = zlib.gunzipSync(bytes, options);
      break;
    case "deflate":
      out = zlib.inflateSync(bytes, options);
      break;
    case "br":
      out = zlib.brotliDecompressSync(bytes, options);
      break;
    case "zstd":
      out = decodeZstd(bytes, limit);
      break;
  }
  if (out.byteLength > limit) throw new RangeError("past the limit");
  return out;
}

/** Each frame decoded on its own (Deno's decoder stops after the first), within what the limit has left. */
function decodeZstd(bytes: Uint8Array, limit: number): Uint8Array {
  const frames = zstdFrames(bytes);
  if (frames.length === 1) return zlib.zstdDecompressSync(frames[0], { maxOutputLength: Math.max(limit, 1) });
  const parts: Uint8Array[] = [];
  let size = 0;
  for (const frame of frames) {
    const part = zlib.zstdDecompressSync(frame, { maxOutputLength: Math.max(limit - size, 1) });
    size += part.byteLength;
    if (size > limit) throw new RangeError("past the limit");
    parts.push(part);
  }
  const whole = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    whole.set(part, at);
    at += part.byteLength;
  }
  return whole;
}

/**
 * `bytes` with `codings` (as {@linkcode contentCodings} returned them) undone, last first, each layer's output
 * at most `limit` bytes. Throws the 413 past the limit and a 400 (`invalid_body_encoding`) for data that is not
 * what its coding says. An empty body stays empty (the reader's own 400 says so).
 */
export function decodeBody(bytes: Uint8Array, codings: readonly ContentCoding[], limit: number): Uint8Array {
  let out = bytes;
  for (let i = codings.length - 1; i >= 0 && out.byteLength > 0; i--) {
    try {
      out = decodeOne(out, codings[i], limit);
    } catch (err) {
      if (isPastLimit(err)) throw bodyTooLarge(limit);
      throw undecodable(codings[i], err);
    }
  }
  return out;
}

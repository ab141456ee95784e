/**
 * The request a handler gets from a `node:http` request (the edge's and its WebSocket handshakes'): its URL from
 * the request line, never the Host header, and its body in one buffer when it has arrived whole, else as a
 * stream fed by Node's `'data'` events.
 *
 * @module
 */
import type http from "node:http";
import { BufferedRequest } from "./buffered_request.ts";
import { DotSegmentError, targetHasDotSegment } from "./dot_segments.ts";
import type { ClientRequest } from "./types.ts";

/** The methods the Fetch standard refuses to build a web Request with (a {@linkcode BufferedRequest} takes them). */
const FETCH_FORBIDDEN_METHODS: ReadonlySet<string> = new Set(["CONNECT", "TRACE", "TRACK"]);

/** A `'data'` chunk smaller than this is copied into the body's scratch buffer rather than enqueued by itself. */
const SMALL_CHUNK_BYTES = 4 * 1024;

/** How many bytes of small chunks are gathered before they are enqueued as one chunk. */
const GATHER_BYTES = 16 * 1024;

/**
 * The request body as a web stream fed by Node's `'data'` events, paused while the stream's queue is full.
 * (`Readable.toWeb` costs several times more per request.) A connection closed before the body's end calls
 * `gone` before the stream fails: the client went away, and whoever reads the body learns it as that (a 499),
 * not as a body it could not read (Node tells the response's `'close'` only after).
 *
 * Small chunks are gathered into one scratch buffer and enqueued together once it holds `GATHER_BYTES` (or the
 * body ends): a chunked body sent a byte per HTTP chunk is a `'data'` event per byte, and a queue entry per event
 * costs hundreds of bytes each, for as long as the reader keeps them (a web Request's `bytes()` keeps every one
 * until the end). Every reader of a request body reads it whole, so holding up to `GATHER_BYTES` costs nobody
 * anything; a chunk of `SMALL_CHUNK_BYTES` or more (a body arriving in ordinary socket reads) is enqueued as
 * before, uncopied.
 */
function bodyOf(req: http.IncomingMessage, gone: () => void): ReadableStream<Uint8Array> {
  let settled = false;
  let scratch: Uint8Array | null = null;
  let gathered = 0;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const enqueue = (chunk: Uint8Array) => {
        controller.enqueue(chunk);
        if ((controller.desiredSize ?? 0) <= 0) req.pause();
      };
      /** Enqueues what the scratch buffer holds, as a copy of its own, and empties it. */
      const flush = () => {
        if (gathered === 0) return;
        enqueue(scratch!.slice(0, gathered));
        gathered = 0;
      };
      req.on("data", (chunk: Uint8Array) => {
        // Resumed after a cancel (a 413, say) only to be drained: nothing reads it any more.
        if (settled) return;
        if (chunk.byteLength >= SMALL_CHUNK_BYTES) {
          flush();
          enqueue(chunk);
          return;
        }
        if (gathered + chunk.byteLength > GATHER_BYTES) flush();
        scratch ??= new Uint8Array(GATHER_BYTES);
        scratch.set(chunk, gathered);
        gathered += chunk.byteLength;
        if (gathered === GATHER_BYTES) flush();
      });
      req.once("end", () => {
        if (settled) return;
        settled = true;
        flush();
        scratch = null;
        controller.close();
      });
      req.once("close", () => {
        if (settled) return;
        settled = true;
        scratch = null;
        gone();
        controller.error(new Error("The client closed the connection before the body was complete."));
      });
      req.on("error", () => {});
    },
    pull() {
      req.resume();
    },
    cancel() {
      settled = true;
      scratch = null;
      req.resume();
    },
  }, { highWaterMark: 65_536, size: (chunk) => chunk.byteLength });
}

/**
 * The whole body when it has already arrived (a small body comes in the same packet as its head, and Node's
 * parser has read it by the time the first microtask runs): one buffer is much cheaper than a stream.
 */
function bufferedBody(req: http.IncomingMessage): Uint8Array<ArrayBuffer> | null {
  if (!req.complete) return null;
  const parts: Uint8Array[] = [];
  for (let chunk = req.read(); chunk !== null; chunk = req.read()) parts.push(chunk);
  // A copy as a plain Uint8Array: Node's chunk may be a view of a pooled buffer, and a Buffer's `slice` does not
  // copy, where a web Request's bytes are the request's own.
  if (parts.length === 1) return new Uint8Array(parts[0]);
  const whole = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    whole.set(part, offset);
    offset += part.byteLength;
  }
  return whole;
}

/** Does this request carry a body (a declared length above zero, or a chunked one)? */
function hasBody(req: http.IncomingMessage): boolean {
  const length = req.headers["content-length"];
  if (length !== undefined) return length !== "0";
  return req.headers["transfer-encoding"] !== undefined;
}

/**
 * The request's URL: the path and query of its request line, under the address served. Never under the Host
 * header: the handlers route on the URL, and a Host holding `/`, `?` or `#` would put a path of the client's
 * choosing before the request line's (nothing in the gateway reads the host). A target in absolute form (RFC
 * 9112 §3.2.2, as a client speaking to a proxy sends it) gives its path and query; any other form (`*`) throws,
 * the edge's 400. A path with a dot segment throws a {@linkcode DotSegmentError} (lib/runtime/dot_segments.ts).
 */
function urlOf(target: string | undefined, origin: string): string {
  if (target === undefined) return `${origin}/`;
  if (targetHasDotSegment(target)) throw new DotSegmentError();
  if (target.startsWith("/")) return origin + target;
  const absolute = new URL(target);
  if (absolute.protocol !== "http:" && absolute.protocol !== "https:") {
    throw new TypeError("The request target is neither a path nor an http URL.");
  }
  return origin + absolute.pathname + absolute.search;
}

/**
 * The request the handler gets for `req`: a {@linkcode BufferedRequest} when its body has arrived (or it has
 * none), else a web Request reading the body as it comes. Without a signal either way: the client's goes to
 * the handler beside it (ClientConnection), as a Request given one builds a signal of its own that follows it.
 */
export function toRequest(
  req: http.IncomingMessage,
  origin: string,
  gone: () => void = () => {},
): ClientRequest {
  const raw = req.rawHeaders;
  const headers = new Headers();
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i], raw[i + 1]);
  const url = urlOf(req.url, origin);
  const method = req.method ?? "GET";
  if (method === "GET" || method === "HEAD" || !hasBody(req)) {
    return new BufferedRequest(url, method, headers, null);
  }
  const buffered = bufferedBody(req);
  if (buffered !== null) return new BufferedRequest(url, method, headers, buffered);
  // No web Request takes these methods, and no route does either: the 405 reads no body.
  if (FETCH_FORBIDDEN_METHODS.has(method)) return new BufferedRequest(url, method, headers, null);
  return new Request(url, {
    method,
    headers,
    body: bodyOf(req, gone),
    // Needed for a stream body (a Node-style option; Deno's Request accepts and ignores it otherwise).
    duplex: "half",
  } as RequestInit);
}

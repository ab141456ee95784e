/**
 * A `node:http` request's body for the handler: whole when it has already arrived (one buffer), else a web
 * stream fed as it comes; split from node_http_edge.ts, which serves the connection.
 *
 * @module
 */
import type http from "node:http";

/**
 * The request body as a web stream fed by Node's `'data'` events, paused while the stream's queue is full.
 * (`Readable.toWeb` costs several times more per request.) A connection closed before the body's end calls
 * `gone` before the stream fails: the client went away, and whoever reads the body learns it as that (a 499),
 * not as a body it could not read (Node tells the response's `'close'` only after).
 */
export function bodyOf(req: http.IncomingMessage, gone: () => void): ReadableStream<Uint8Array> {
  let settled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      req.on("data", (chunk: Uint8Array) => {
        controller.enqueue(chunk);
        if ((controller.desiredSize ?? 0) <= 0) req.pause();
      });
      req.once("end", () => {
        if (settled) return;
        settled = true;
        controller.close();
      });
      req.once("close", () => {
        if (settled) return;
        settled = true;
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
      req.resume();
    },
  }, { highWaterMark: 65_536, size: (chunk) => chunk.byteLength });
}

/**
 * The whole body when it has already arrived (a small body comes in the same packet as its head, and Node's
 * parser has read it by the time the first microtask runs): one buffer is much cheaper than a stream.
 */
export function bufferedBody(req: http.IncomingMessage): Uint8Array<ArrayBuffer> | null {
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
export function hasBody(req: http.IncomingMessage): boolean {
  const length = req.headers["content-length"];
  if (length !== undefined) return length !== "0";
  return req.headers["transfer-encoding"] !== undefined;
}

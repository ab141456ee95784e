/**
 * The `node:http` edge's request when its body has already arrived whole (or there is none): what a web
 * `Request` built from the same parts would give the handlers, for less. On Deno, `new Request(…)` costs about
 * 9 µs (its init dictionary converted, an inner request, a signal, a body wrapper), and CPU per request through
 * the gateway fell by 6–9% without it (bench/README.md). A body still arriving keeps the web `Request`,
 * whose stream the edge feeds.
 *
 * @module
 */
import type { ClientRequest } from "./types.ts";

/** A request whose body is in memory: read once, as a web Request's body is. */
export class BufferedRequest implements ClientRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Headers;
  #bytes: Uint8Array<ArrayBuffer> | null;
  #stream: ReadableStream<Uint8Array> | null = null;
  #used = false;
  #signal: AbortSignal | null = null;

  /**
   * Throws a TypeError where `new Request(url, { method, headers, body })` would for a URL that does not parse.
   * `url` is kept as the URL standard serialises it, so paths and queries read the same as from a web Request.
   * Unlike a web Request, it takes the methods the Fetch standard forbids (`CONNECT`, `TRACE`, `TRACK`), as
   * Bun's Request does: no route serves them, and the server answers them its 405 with the path's `Allow`.
   */
  constructor(url: string, method: string, headers: Headers, body: Uint8Array<ArrayBuffer> | null) {
    this.url = new URL(url).href;
    this.method = method;
    this.headers = headers;
    this.#bytes = body;
  }

  /** A stream of the body, made on first use (the JSON handlers read {@linkcode bytes} and never need one). */
  get body(): ReadableStream<Uint8Array> | null {
    if (this.#stream !== null || this.#bytes === null) return this.#stream;
    const bytes = this.#bytes;
    this.#stream = new ReadableStream<Uint8Array>({
      pull: (controller) => {
        this.#used = true;
        controller.enqueue(bytes);
        controller.close();
      },
    });
    return this.#stream;
  }

  /** Has the body been read (by {@linkcode bytes}, or through {@linkcode body})? */
  get bodyUsed(): boolean {
    return this.#used;
  }

  /** A signal that never aborts: the edge gives the client's own beside the request (`ClientConnection`). */
  get signal(): AbortSignal {
    return this.#signal ??= new AbortController().signal;
  }

  /** The whole body; a second read fails, as on a web Request. */
  bytes(): Promise<Uint8Array<ArrayBuffer>> {
    if (this.#used || this.#stream?.locked) {
      return Promise.reject(new TypeError("The body has already been read."));
    }
    // Once its stream has been handed out, the body is that stream's: read through it, so it is used up there too.
    if (this.#stream !== null) return new Response(this.#stream).bytes();
    this.#used = true;
    return Promise.resolve(this.#bytes ?? new Uint8Array(0));
  }
}

/**
 * An upstream that writes raw HTTP/1.1 bytes from a script, for fault tests of every provider type: any status
 * and body, any bytes (SSE, AWS event-stream, gzip), a socket closed before the headers or after the first
 * chunk, or no answer at all. One listener serves every provider; the test sets the step for the next request.
 *
 * @module
 */

/** What the upstream does with the next request. */
export interface RawStep {
  /** Close the socket as soon as the request has arrived, before any byte of an answer. */
  reset?: "before-headers" | "after-first-chunk";
  /** Never answer (until the upstream stops or the gateway gives up). */
  hang?: boolean;
  status?: number;
  headers?: Record<string, string>;
  /** Sent chunked, one write each; with `reset: "after-first-chunk"` the socket closes after the first. */
  chunks?: (string | Uint8Array)[];
  /** Before writing chunk `at`, wait until `open` settles: the test holds the answer there. */
  hold?: { at: number; open: Promise<unknown> };
}

/**
 * A 200 whose body is `body` as JSON. `lead` goes before it (OpenRouter sends blank lines to keep a connection
 * open before its body); `contentType` is the vendor's.
 */
export function jsonStep(
  body: unknown,
  { lead = "", contentType = "application/json" }: { lead?: string; contentType?: string } = {},
): RawStep {
  return { status: 200, headers: { "content-type": contentType }, chunks: [lead + JSON.stringify(body)] };
}

/** A 200 event stream of `sse`'s text, in one chunk. */
export function sseStep(sse: string): RawStep {
  return { status: 200, headers: { "content-type": "text/event-stream" }, chunks: [sse] };
}

/** An event stream's text whose events are each one `data:` line (OpenAI's chat completions, Gemini's). */
export function dataEvents(events: readonly unknown[], done = false): string {
  return events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + (done ? "data: [DONE]\n\n" : "");
}

/** An event stream's text whose events are named by their `type` (Anthropic's Messages, OpenAI's Responses). */
export function typedEvents<E extends { type: string }>(events: readonly E[]): string {
  return events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join("");
}

/** How far one answer got. */
export interface RawAnswer {
  /** Bytes of the step's chunks written so far (chunk framing not counted). */
  sent: number;
  /** Bytes of all the step's chunks. */
  total: number;
  /** Settles when the answer is over: `true` when every chunk was written, `false` when the gateway hung up first. */
  ended: Promise<boolean>;
}

/** A request as the upstream received it. */
export interface RawRequest {
  method: string;
  path: string;
  headers: Headers;
  body: string;
}

/** A running raw upstream. */
export interface RawUpstream {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** The step for the next request; it is kept until replaced. */
  next: RawStep;
  /** When set, the step for each request instead of `next` (targets of one alias answered differently). */
  stepFor?: (request: RawRequest) => RawStep;
  requests: RawRequest[];
  /** One per answer begun with chunks, in order. */
  answers: RawAnswer[];
  stop(): Promise<void>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const bytes = (part: string | Uint8Array) => typeof part === "string" ? encoder.encode(part) : part;

async function readRequest(conn: Deno.Conn): Promise<RawRequest | null> {
  let buffer = new Uint8Array(0);
  const chunk = new Uint8Array(65536);
  const append = (n: number) => {
    const next = new Uint8Array(buffer.length + n);
    next.set(buffer);
    next.set(chunk.subarray(0, n), buffer.length);
    buffer = next;
  };
  let headEnd = -1;
  while (headEnd < 0) {
    const n = await conn.read(chunk);
    if (n === null) return null;
    append(n);
    headEnd = decoder.decode(buffer).indexOf("\r\n\r\n");
  }
  const head = decoder.decode(buffer).slice(0, headEnd);
  const [requestLine, ...lines] = head.split("\r\n");
  const headers = new Headers();
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  const length = Number(headers.get("content-length") ?? 0);
  const bodyStart = encoder.encode(head).length + 4;
  while (buffer.length - bodyStart < length) {
    const n = await conn.read(chunk);
    if (n === null) return null;
    append(n);
  }
  const [method, path] = requestLine.split(" ");
  return { method, path, headers, body: decoder.decode(buffer.subarray(bodyStart, bodyStart + length)) };
}

/** Writes all of `data`: one `write` may take only part of a large buffer. */
async function writeAll(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  for (let at = 0; at < data.length;) at += await conn.write(data.subarray(at));
}

async function answer(conn: Deno.Conn, step: RawStep, progress: RawAnswer): Promise<void> {
  if (step.reset === "before-headers") return;
  if (step.hang) {
    await new Promise<void>((resolve) => {
      const buf = new Uint8Array(1);
      conn.read(buf).then(() => resolve(), () => resolve()); // until the gateway hangs up
    });
    return;
  }
  const status = step.status ?? 200;
  const head = [`HTTP/1.1 ${status} X`, "connection: close", "transfer-encoding: chunked"];
  for (const [name, value] of Object.entries(step.headers ?? {})) head.push(`${name}: ${value}`);
  await writeAll(conn, encoder.encode(`${head.join("\r\n")}\r\n\r\n`));
  const chunks = step.chunks ?? [];
  for (const [i, part] of chunks.entries()) {
    if (step.hold?.at === i) await step.hold.open;
    const data = bytes(part);
    await writeAll(conn, encoder.encode(`${data.length.toString(16)}\r\n`));
    await writeAll(conn, data);
    progress.sent += data.length;
    await writeAll(conn, encoder.encode("\r\n"));
    if (step.reset === "after-first-chunk") {
      await new Promise((r) => setTimeout(r, 50)); // let the first chunk reach the gateway before the reset
      return;
    }
  }
  await writeAll(conn, encoder.encode("0\r\n\r\n"));
}

/** Starts the upstream on a free port. */
export function startRawUpstream(): RawUpstream {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  const upstream: RawUpstream = {
    url: `http://127.0.0.1:${listener.addr.port}`,
    next: {},
    requests: [],
    answers: [],
    async stop() {
      listener.close();
      for (const conn of conns) {
        try {
          conn.close();
        } catch { /* already closed */ }
      }
      await accepting;
    },
  };
  const serve = async (conn: Deno.Conn) => {
    conns.add(conn);
    const ended = Promise.withResolvers<boolean>();
    try {
      const request = await readRequest(conn);
      if (request === null) return;
      upstream.requests.push(request);
      const step = upstream.stepFor?.(request) ?? upstream.next;
      const progress: RawAnswer = {
        sent: 0,
        total: (step.chunks ?? []).reduce((sum, part) => sum + bytes(part).length, 0),
        ended: ended.promise,
      };
      if (step.chunks !== undefined) upstream.answers.push(progress);
      await answer(conn, step, progress);
      ended.resolve(true);
    } catch {
      // The gateway hung up first (it gave up on a hang, or aborted an oversized answer): expected.
      ended.resolve(false);
    } finally {
      conns.delete(conn);
      try {
        conn.close();
      } catch { /* already closed */ }
    }
  };
  const accepting = (async () => {
    try {
      for await (const conn of listener) void serve(conn);
    } catch { /* listener closed */ }
  })();
  return upstream;
}

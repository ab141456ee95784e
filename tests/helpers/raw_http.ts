/**
 * Raw TCP clients for the connection tests: what an HTTP client library would never do on purpose (trickle a
 * head, stop mid-body, hang up before the answer) is exactly what these tests need.
 *
 * @module
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A raw connection to a gateway at `url` (`http://127.0.0.1:<port>`). */
export async function connect(url: string): Promise<Deno.TcpConn> {
  const { hostname, port } = new URL(url);
  return await Deno.connect({ hostname, port: Number(port) });
}

/** Writes `text`; false if the server has already closed the connection. */
export async function send(conn: Deno.Conn, text: string | Uint8Array): Promise<boolean> {
  try {
    const bytes = typeof text === "string" ? encoder.encode(text) : text;
    let off = 0;
    while (off < bytes.byteLength) off += await conn.write(bytes.subarray(off));
    return true;
  } catch {
    return false;
  }
}

/** What a connection received before it closed, or before `ms` ran out. */
export interface Received {
  text: string;
  /** The server closed (or reset) the connection. */
  closed: boolean;
  /** Milliseconds from the call until the close (or until `ms`). */
  after: number;
}

/** Reads until the server closes the connection or `ms` passes; the connection is closed afterwards. */
export async function readUntilClosed(conn: Deno.Conn, ms: number): Promise<Received> {
  const started = performance.now();
  let text = "";
  let closed = false;
  const timer = setTimeout(() => conn.close(), ms);
  const buf = new Uint8Array(16_384);
  try {
    while (true) {
      const n = await conn.read(buf);
      if (n === null) {
        closed = true;
        break;
      }
      text += decoder.decode(buf.subarray(0, n));
    }
  } catch (err) {
    // Our own timer closing the connection is "still open"; a reset by the server is a close.
    closed = !(err instanceof Deno.errors.BadResource || err instanceof Deno.errors.Interrupted);
  }
  clearTimeout(timer);
  try {
    conn.close();
  } catch {
    // already closed by the timer
  }
  return { text, closed, after: performance.now() - started };
}

/** Reads one whole response with a `content-length` (enough for the small answers these tests read). */
export async function readResponse(conn: Deno.Conn, ms = 5_000): Promise<{ status: number; body: string }> {
  const deadline = setTimeout(() => conn.close(), ms);
  let text = "";
  const buf = new Uint8Array(16_384);
  try {
    while (true) {
      const end = text.indexOf("\r\n\r\n");
      if (end >= 0) {
        const length = Number(/content-length: *(\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
        if (encoder.encode(text.slice(end + 4)).byteLength >= length) {
          return { status: Number(text.slice(9, 12)), body: text.slice(end + 4) };
        }
      }
      const n = await conn.read(buf);
      if (n === null) throw new Error(`connection closed mid-response: ${JSON.stringify(text)}`);
      text += decoder.decode(buf.subarray(0, n));
    }
  } finally {
    clearTimeout(deadline);
  }
}

/** A raw POST of a JSON body. */
export function postJson(path: string, body: unknown, headers: Record<string, string> = {}): string {
  const json = JSON.stringify(body);
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  return `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n` +
    `content-length: ${encoder.encode(json).byteLength}\r\n${extra}\r\n${json}`;
}

/** Writes `head` and `body` on a fresh connection and reads the answer (or nothing) within `ms`. */
export async function rawExchange(port: number, head: string, body: Uint8Array, ms: number): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(encoder.encode(head));
    if (body.byteLength > 0) await conn.write(body);
    let text = "";
    const buffer = new Uint8Array(8192);
    const deadline = performance.now() + ms;
    while (performance.now() < deadline) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const n = await Promise.race([
        conn.read(buffer).catch(() => null),
        new Promise<"wait">((r) =>
          timer = setTimeout(() => r("wait"), Math.max(1, deadline - performance.now()))
        ),
      ]);
      clearTimeout(timer);
      if (n === "wait" || n === null) break;
      text += decoder.decode(buffer.subarray(0, n));
      const headEnd = text.indexOf("\r\n\r\n");
      const length = /\r\ncontent-length: (\d+)/i.exec(text);
      if (headEnd >= 0 && length && text.length - headEnd - 4 >= Number(length[1])) break;
    }
    return text;
  } finally {
    conn.close();
  }
}

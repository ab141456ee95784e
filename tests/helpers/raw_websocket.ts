/**
 * A WebSocket client over a raw TCP connection, for what a browser-style `WebSocket` never does: stop reading
 * (its buffers fill, the server's output backs up), or leave the server's close frame unanswered. It speaks
 * just enough of RFC 6455 for the gateway's tests: the handshake, masked text and close frames out, and the
 * server's unmasked frames in.
 *
 * @module
 */
import { connect, send } from "./raw_http.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A handshake key (any base64 of 16 bytes will do; the server only echoes its digest). */
export const HANDSHAKE_KEY = "dGhlIHNhbXBsZSBub25jZQ==";

/** One frame from the server. */
export interface Frame {
  opcode: number;
  payload: Uint8Array;
}

/** The opcodes these tests meet. */
export const TEXT = 0x1;
export const CLOSE = 0x8;

/** A client frame: FIN, `opcode`, masked as RFC 6455 §5.3 requires of a client. */
export function maskedFrame(opcode: number, payload: Uint8Array): Uint8Array {
  const length = payload.byteLength;
  const head = length < 126
    ? [0x80 | opcode, 0x80 | length]
    : length < 65_536
    ? [0x80 | opcode, 0x80 | 126, length >> 8, length & 0xff]
    : [
      0x80 | opcode,
      0x80 | 127,
      0,
      0,
      0,
      0,
      length >>> 24,
      (length >>> 16) & 0xff,
      (length >>> 8) & 0xff,
      length & 0xff,
    ];
  const mask = crypto.getRandomValues(new Uint8Array(4));
  const out = new Uint8Array(head.length + 4 + length);
  out.set(head);
  out.set(mask, head.length);
  for (let i = 0; i < length; i++) out[head.length + 4 + i] = payload[i] ^ mask[i & 3];
  return out;
}

/** The close code of a close frame's payload (1005 when it has none). */
export function closeCode(frame: Frame): number {
  return frame.payload.byteLength >= 2 ? (frame.payload[0] << 8) | frame.payload[1] : 1005;
}

/** An open raw WebSocket. */
export class RawWebSocket {
  #buffer: Uint8Array;
  #ended = false;

  private constructor(readonly conn: Deno.TcpConn, rest: Uint8Array) {
    this.#buffer = rest;
  }

  /**
   * Connects to `url` (`http://127.0.0.1:<port>`) and performs the handshake on `path` with `headers`; throws
   * with the answer when it is not `101`.
   */
  static async open(url: string, path: string, headers: Record<string, string>): Promise<RawWebSocket> {
    const conn = await connect(url);
    const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
    await send(
      conn,
      `GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nupgrade: websocket\r\nconnection: Upgrade\r\n` +
        `sec-websocket-key: ${HANDSHAKE_KEY}\r\nsec-websocket-version: 13\r\n${extra}\r\n`,
    );
    let received: Uint8Array<ArrayBuffer> = new Uint8Array(0);
    const buf = new Uint8Array(16_384);
    while (true) {
      const end = indexOfHeadEnd(received);
      if (end >= 0) {
        const head = decoder.decode(received.subarray(0, end));
        if (!head.startsWith("HTTP/1.1 101 ")) {
          conn.close();
          throw new Error(`handshake refused: ${head}`);
        }
        return new RawWebSocket(conn, received.slice(end + 4));
      }
      const n = await conn.read(buf);
      if (n === null) throw new Error("closed during the handshake");
      received = concat(received, buf.subarray(0, n));
    }
  }

  /** Sends a text message. */
  sendText(text: string): Promise<boolean> {
    return send(this.conn, maskedFrame(TEXT, encoder.encode(text)));
  }

  /** Sends a close frame with `code`. */
  sendClose(code: number): Promise<boolean> {
    return send(this.conn, maskedFrame(CLOSE, new Uint8Array([code >> 8, code & 0xff])));
  }

  /** The next frame; null once the server closed the TCP connection. */
  async next(): Promise<Frame | null> {
    const buf = new Uint8Array(1 << 16);
    while (true) {
      const frame = this.#parse();
      if (frame !== undefined) return frame;
      if (this.#ended) return null;
      const n = await this.conn.read(buf).catch(() => null);
      if (n === null) this.#ended = true;
      else this.#buffer = concat(this.#buffer, buf.subarray(0, n));
    }
  }

  /**
   * Reads frames until the server's close frame and returns it; null when the connection ended without one or
   * `ms` passed. The close frame is answered, as a client must, unless `answer` is false (a client that leaves
   * the closing handshake unfinished).
   */
  async closeFrame(ms: number, answer = true): Promise<Frame | null> {
    const timer = setTimeout(() => this.close(), ms);
    try {
      while (true) {
        const frame = await this.next();
        if (frame === null) return null;
        if (frame.opcode === CLOSE) {
          if (answer) await this.sendClose(closeCode(frame));
          return frame;
        }
      }
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    try {
      this.conn.close();
    } catch {
      // already closed
    }
  }

  /** A whole frame at the start of the buffer, taken off it. */
  #parse(): Frame | undefined {
    const b = this.#buffer;
    if (b.byteLength < 2) return undefined;
    let length = b[1] & 0x7f;
    let offset = 2;
    if (length === 126) {
      if (b.byteLength < 4) return undefined;
      length = (b[2] << 8) | b[3];
      offset = 4;
    } else if (length === 127) {
      if (b.byteLength < 10) return undefined;
      length = Number(new DataView(b.buffer, b.byteOffset + 2, 8).getBigUint64(0));
      offset = 10;
    }
    if (b.byteLength < offset + length) return undefined;
    const frame = { opcode: b[0] & 0x0f, payload: b.slice(offset, offset + length) };
    this.#buffer = b.subarray(offset + length);
    return frame;
  }
}

function indexOfHeadEnd(bytes: Uint8Array): number {
  for (let i = 0; i + 3 < bytes.byteLength; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) return i;
  }
  return -1;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array<ArrayBuffer> {
  if (a.byteLength === 0) return b.slice();
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a);
  out.set(b, a.byteLength);
  return out;
}

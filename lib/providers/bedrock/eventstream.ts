/**
 * Decoder for AWS's binary event-stream framing (`application/vnd.amazon.eventstream`), the body of
 * Bedrock's ConverseStream. Each message is
 *
 *   [total_len u32][headers_len u32][prelude_crc u32][headers][payload][message_crc u32]
 *
 * big-endian, with CRC-32 (zlib) over the first 8 bytes and over everything before the last 4. The decoder is
 * a stream stage (a transformer run by `pullThrough`): frames may be split across reads
 * anywhere or several may arrive in one read; buffering is bounded by the message limit
 * (`server.upstream_limits.max_event_size`, default {@linkcode MAX_MESSAGE_BYTES}); a bad checksum or malformed
 * frame errors the stream with a 502 instead of hanging or crashing.
 *
 * @module
 */
import { badGateway, type GatewayError } from "../../errors.ts";
import { crc32 } from "./crc32.ts";
import type { SyncTransformer } from "../../streams/pull_through.ts";

/** A header value, by wire type: bool (0/1), byte/short/int/long (2–5), bytes (6), string (7), timestamp (8), uuid (9). */
export type EventStreamHeaderValue = boolean | number | bigint | string | Uint8Array | Date;

/** One decoded message. */
export interface EventStreamMessage {
  headers: Record<string, EventStreamHeaderValue>;
  payload: Uint8Array;
}

/** Prelude (12 bytes) plus message CRC (4 bytes). */
const OVERHEAD = 16;
/**
 * The largest message accepted. AWS SDKs cap payloads at 24 MiB; Bedrock's stream events are small JSON
 * objects, so anything near this is corruption and must not make the gateway buffer without bound.
 */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

function corrupt(detail: string): GatewayError {
  return badGateway(`The upstream event stream is corrupt: ${detail}.`, "upstream_invalid_response");
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

const utf8Decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * A header name or string value as text. The fatal decoder throws a plain `TypeError` on bytes that are not
 * UTF-8; that is the upstream's corruption like any other, so it becomes the same 502 (which routing falls
 * over from) rather than escaping as the gateway's own 500.
 */
function utf8(bytes: Uint8Array, what: string): string {
  try {
    return utf8Decoder.decode(bytes);
  } catch {
    throw corrupt(`a header ${what} is not valid UTF-8`);
  }
}

/** Parses the header block of one message; throws a 502 `GatewayError` on any malformation. */
export function decodeHeaders(block: Uint8Array): Record<string, EventStreamHeaderValue> {
  const view = new DataView(block.buffer, block.byteOffset, block.byteLength);
  const headers: Record<string, EventStreamHeaderValue> = {};
  let at = 0;
  const need = (n: number) => {
    if (at + n > block.length) throw corrupt("a header runs past the header block");
  };
  while (at < block.length) {
    need(1);
    const nameLen = view.getUint8(at++);
    need(nameLen + 1);
    const name = utf8(block.subarray(at, at + nameLen), "name");
    at += nameLen;
    const type = view.getUint8(at++);
    let value: EventStreamHeaderValue;
    switch (type) {
      case 0:
      case 1:
        value = type === 0;
        break;
      case 2:
        need(1);
        value = view.getInt8(at);
        at += 1;
        break;
      case 3:
        need(2);
        value = view.getInt16(at);
        at += 2;
        break;
      case 4:
        need(4);
        value = view.getInt32(at);
        at += 4;
        break;
      case 5:
      case 8: {
        need(8);
        const big = view.getBigInt64(at);
        at += 8;
        const small = Number(big);
        value = type === 8 ? new Date(small) : Number.isSafeInteger(small) ? small : big;
        break;
      }
      case 6:
      case 7: {
        need(2);
        const len = view.getUint16(at);
        at += 2;
        need(len);
        const bytes = block.subarray(at, at + len);
        at += len;
        value = type === 6 ? bytes.slice() : utf8(bytes, `value ("${name}")`);
        break;
      }
      case 9: {
        need(16);
        const h = hex(block.subarray(at, at + 16));
        at += 16;
        value = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
        break;
      }
      default:
        throw corrupt(`unknown header value type ${type}`);
    }
    if (Object.hasOwn(headers, name)) throw corrupt(`duplicate header "${name}"`);
    headers[name] = value;
  }
  return headers;
}

/** Options for {@linkcode eventStreamTransformer}. */
export interface EventStreamOptions {
  /**
   * The largest message accepted (`server.upstream_limits.max_event_size`); a bigger one is a 502
   * `upstream_response_too_large` before any of its body is buffered. Default {@linkcode MAX_MESSAGE_BYTES}.
   */
  maxMessageBytes?: number;
  /** The provider's name in config, for the error message. */
  provider?: string;
}

/**
 * Bytes → messages. Keeps at most one incomplete message (bounded by {@linkcode MAX_MESSAGE_BYTES}) between
 * reads; validates the prelude CRC before waiting for a body, so a corrupt length fails at once. The bytes of an
 * incomplete message are copied into one buffer of the length its prelude gives, never kept as the reads they
 * came in: a message trickled a byte per read would otherwise hold one small array per byte (~500 times its
 * size in memory), and a large message in small reads is still copied once, not once per read.
 */
export function eventStreamTransformer(
  options: EventStreamOptions = {},
): SyncTransformer<Uint8Array, EventStreamMessage> {
  const limit = options.maxMessageBytes ?? MAX_MESSAGE_BYTES;
  /** The incomplete message's bytes so far: `held[0, heldBytes)`, room for `wanted` once its prelude is read. */
  let held = new Uint8Array(0);
  let heldBytes = 0;
  /** Bytes needed before decoding can progress: a prelude, or the whole message whose prelude was read. */
  let wanted = 12;
  /** Copies `bytes` after what is held, in a buffer with room for at least `wanted` bytes. */
  function hold(bytes: Uint8Array): void {
    const needed = heldBytes + bytes.length;
    if (needed > held.length) {
      const grown = new Uint8Array(Math.max(needed, wanted));
      grown.set(held.subarray(0, heldBytes));
      held = grown;
    }
    held.set(bytes, heldBytes);
    heldBytes = needed;
  }
  return {
    transform(chunk, controller) {
      let pending: Uint8Array;
      if (heldBytes === 0 && chunk.length >= wanted) {
        pending = chunk;
      } else {
        hold(chunk);
        if (heldBytes < wanted) return;
        pending = held.subarray(0, heldBytes);
      }
      let at = 0;
      wanted = 12;
      while (pending.length - at >= 12) {
        const view = new DataView(pending.buffer, pending.byteOffset + at, pending.length - at);
        const total = view.getUint32(0);
        const headersLen = view.getUint32(4);
        if (crc32(pending.subarray(at, at + 8)) !== view.getUint32(8)) throw corrupt("bad prelude CRC");
        if (total < OVERHEAD) throw corrupt(`message length ${total}`);
        if (total > limit) {
          const who = options.provider === undefined ? "The upstream" : `Provider "${options.provider}"`;
          throw badGateway(
            `${who} sent a stream message of ${total} bytes, larger than the gateway's limit of ${limit} bytes ` +
              "(server.upstream_limits.max_event_size).",
            "upstream_response_too_large",
          );
        }
        if (headersLen > total - OVERHEAD) throw corrupt(`headers length ${headersLen}`);
        if (pending.length - at < total) {
          wanted = total;
          break;
        }
        const message = pending.subarray(at, at + total);
        if (crc32(message.subarray(0, total - 4)) !== view.getUint32(total - 4)) {
          throw corrupt("bad message CRC");
        }
        const headers = decodeHeaders(message.subarray(12, 12 + headersLen));
        controller.enqueue({ headers, payload: message.slice(12 + headersLen, total - 4) });
        at += total;
      }
      // The remainder is copied into a buffer of its own (room for its whole message once its prelude is read),
      // so neither a large upstream read nor the last message's buffer is kept alive by a small tail.
      const rest = pending.subarray(at);
      held = new Uint8Array(0);
      heldBytes = 0;
      if (rest.length > 0) hold(rest);
    },
    flush() {
      if (heldBytes > 0) throw corrupt(`the stream ended inside a message (${heldBytes} bytes)`);
    },
  };
}

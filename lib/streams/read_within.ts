/**
 * Reads a byte stream whole, at most `limit` bytes, holding about what it read: a bounded body read costs its
 * bytes, not what the runtime's chunks happen to weigh.
 *
 * Keeping the chunks a stream hands out, and joining them at the end, can cost far more than their bytes. Deno's
 * fetch body, read the default way, allocates 64 KiB for every read however small the chunk, and the chunk is a
 * view on it: what `fetch` decompresses arrives 4 KiB at a time (as does an upstream that writes in small
 * pieces), so 32 MiB of a gzip answer kept as chunks held 512 MiB (measured: an upstream's 1 GiB gzip bomb, ~1 MB
 * on the wire, against the default `server.upstream_limits.max_body_size`, peaked the gateway at 501 MB
 * resident). Where the stream is a byte stream (Deno), it is read instead with a BYOB reader into blocks of our
 * own, each filled before the next is made; where it is not (Bun, whose chunks are already sized to their data),
 * a chunk is kept as it is when it owns its buffer, and copied when it is a view on a larger one. Blocks, not one
 * buffer that doubles: a doubling buffer's last copy holds one and a half times the limit.
 *
 * @module
 */
import { concatBytes } from "./concat_bytes.ts";

/** The first block: a chat answer or an error body fits in it. */
export const FIRST_BLOCK_BYTES = 16 * 1024;

/** Every later block: a 32 MiB answer is 128 of them, and the last one's unused part is the only slack. */
export const BLOCK_BYTES = 256 * 1024;

/**
 * Whether a body has been seen that is not a byte stream: then every later one is read chunk by chunk without
 * asking. Asking throws, and a throw per answer cost 5 µs (a quarter of the gateway's own time per request in
 * `bench/hot_path_ab.ts`); a runtime's `fetch` hands out one kind (byte streams on Deno, others on Bun), so this is
 * learned once. A wrong guess after a stream of the other kind costs only the BYOB reader's saving: both reads
 * hold about the bytes they read.
 */
let byobUnsupported = false;

/**
 * The stream's bytes, or `undefined` when it holds more than `limit`: then it is cancelled as soon as a byte past
 * the limit arrives, and nothing more is read. A read's error is thrown as it is.
 */
export async function readWithin(
  body: ReadableStream<Uint8Array>,
  limit: number,
): Promise<Uint8Array<ArrayBuffer> | undefined> {
  if (byobUnsupported) return await keepWithin(body.getReader(), limit);
  let byob: ReadableStreamBYOBReader;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    byobUnsupported = true;
    return await keepWithin(body.getReader(), limit);
  }
  const blocks: Uint8Array<ArrayBuffer>[] = [];
  let size = 0;
  let block = new ArrayBuffer(Math.min(FIRST_BLOCK_BYTES, limit));
  let filled = 0;
  while (true) {
    if (filled === block.byteLength) {
      if (filled > 0) blocks.push(new Uint8Array(block));
      if (size === limit) {
        // Every byte the limit allows is here: one more says the body is too large, its end that it fits.
        if (!(await byob.read(new Uint8Array(1))).done) {
          await byob.cancel().catch(() => {});
          return undefined;
        }
        return joined(blocks, size);
      }
      block = new ArrayBuffer(Math.min(BLOCK_BYTES, limit - size));
      filled = 0;
    }
    const { done, value } = await byob.read(new Uint8Array(block, filled));
    // The read transferred the block: what it gives back is a view on it (empty at the end).
    if (value === undefined) throw new TypeError("The body was cancelled while it was read.");
    block = value.buffer as ArrayBuffer;
    if (done) break;
    filled += value.byteLength;
    size += value.byteLength;
  }
  if (filled > 0) blocks.push(new Uint8Array(block, 0, filled));
  return joined(blocks, size);
}

/** A stream that is not a byte stream: its chunks, each kept only if it holds no more memory than its bytes. */
async function keepWithin(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  limit: number,
): Promise<Uint8Array<ArrayBuffer> | undefined> {
  const parts: Uint8Array<ArrayBuffer>[] = [];
  let size = 0;
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return undefined;
    }
    const owns = value.byteLength === value.buffer.byteLength && value.buffer instanceof ArrayBuffer;
    parts.push(owns ? value as Uint8Array<ArrayBuffer> : value.slice());
  }
  return joined(parts, size);
}

function joined(parts: Uint8Array<ArrayBuffer>[], size: number): Uint8Array<ArrayBuffer> {
  return parts.length === 1 ? parts[0] : concatBytes(parts, size);
}

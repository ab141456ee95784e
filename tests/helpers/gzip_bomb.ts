/**
 * Gzip bombs of any size for the raw upstream: one compressed unit repeated. Each unit is
 * {@linkcode BOMB_UNIT_BYTES} of one byte, compressed and sync-flushed, so it comes out as the same ~1 KB every
 * time once the compressor's window is full: a bomb of N MiB is its head and N - 2 copies of the unit, costs no
 * compression to send, and every unit can be decompressed as soon as it has arrived (a test can hold the answer
 * between two units and know what the gateway has been given).
 *
 * @module
 */
import { constants, createGzip } from "node:zlib";

/** What one unit decompresses to. */
export const BOMB_UNIT_BYTES = 1024 * 1024;

/** A bomb's pieces: `head` (the gzip header, `prefix` and two units), then `unit` as often as wanted. */
export interface GzipBomb {
  head: Uint8Array;
  unit: Uint8Array;
  /** Decompressed bytes of `head` (its prefix and two units). */
  headBytes: number;
}

/**
 * The pieces of a bomb whose body is `prefix` and then `fill` repeated (`"a"` after `data: ` makes one endless
 * SSE event; spaces are valid JSON whitespace that never ends a document).
 */
export async function gzipBomb(prefix: string, fill: string): Promise<GzipBomb> {
  const gzip = createGzip({ level: 9 });
  const out: Uint8Array[] = [];
  gzip.on("data", (data: Uint8Array) => out.push(data));
  const flushed = (data: Uint8Array) =>
    new Promise<Uint8Array>((resolve) => {
      const from = out.length;
      gzip.write(data);
      gzip.flush(constants.Z_SYNC_FLUSH, () => resolve(joined(out.slice(from))));
    });
  const text = new TextEncoder();
  const unitText = text.encode(fill.repeat(BOMB_UNIT_BYTES / fill.length));
  const first = await flushed(joined([text.encode(prefix), unitText]));
  const second = await flushed(unitText);
  const unit = await flushed(unitText);
  const again = await flushed(unitText);
  gzip.destroy();
  if (again.length !== unit.length || !again.every((b, i) => b === unit[i])) {
    throw new Error("the compressed unit does not repeat: the bomb cannot be made of copies");
  }
  return { head: joined([first, second]), unit, headBytes: text.encode(prefix).length + 2 * BOMB_UNIT_BYTES };
}

function joined(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

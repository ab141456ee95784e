/**
 * The shared memory a worker writes its request reports into and the primary reads them from: one producer,
 * one consumer, length-prefixed UTF-8 frames in a ring, positions published with `Atomics`. A report costs
 * the worker a `JSON.stringify` and a copy, and nobody a wake-up: a message per report (`postMessage`) cost
 * as much CPU as the rest of the request on Bun. The primary reads on a short timer, before anything else
 * the worker asks of it, and after the worker is gone — what was written before a worker died is read.
 *
 * @module
 */

/** Bytes of the two positions at the start of the buffer: written so far, read so far (both wrap at 2^31). */
const HEADER_BYTES = 8;
const WRITTEN = 0;
const READ = 1;
/** Bytes of a frame's length prefix. */
const PREFIX_BYTES = 4;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Creates the shared buffer of a ring holding `capacity` bytes of frames: a power of two (at most 2^30), so a
 * position that wraps at 2^32 still masks to the right byte.
 */
export function createRingBuffer(capacity: number): SharedArrayBuffer {
  if (capacity < 64 || capacity > 2 ** 30 || (capacity & (capacity - 1)) !== 0) {
    throw new RangeError("a ring's capacity is a power of two from 64 to 2^30");
  }
  return new SharedArrayBuffer(HEADER_BYTES + capacity);
}

/** One end of a ring over a buffer from {@linkcode createRingBuffer}. */
export class ReportRing {
  readonly #positions: Int32Array;
  readonly #bytes: Uint8Array;
  readonly #capacity: number;
  readonly #mask: number;
  #scratch = new Uint8Array(4096);

  constructor(buffer: SharedArrayBuffer) {
    this.#positions = new Int32Array(buffer, 0, 2);
    this.#bytes = new Uint8Array(buffer, HEADER_BYTES);
    this.#capacity = this.#bytes.byteLength;
    this.#mask = this.#capacity - 1;
  }

  /** The writer's side: appends `text` as one frame; false (nothing written) when it does not fit now. */
  write(text: string): boolean {
    let encoded = encoder.encodeInto(text, this.#scratch);
    if (encoded.read < text.length) {
      this.#scratch = new Uint8Array(Math.max(this.#scratch.byteLength * 2, text.length * 3));
      encoded = encoder.encodeInto(text, this.#scratch);
    }
    const length = encoded.written;
    const written = Atomics.load(this.#positions, WRITTEN);
    const used = (written - Atomics.load(this.#positions, READ)) | 0;
    if (used + PREFIX_BYTES + length > this.#capacity) return false;
    const at = this.#put(
      written & this.#mask,
      Uint8Array.of(length >>> 24, (length >>> 16) & 255, (length >>> 8) & 255, length & 255),
    );
    this.#put(at, this.#scratch.subarray(0, length));
    // Published after the bytes: the reader never sees a frame before all of it is there.
    Atomics.store(this.#positions, WRITTEN, (written + PREFIX_BYTES + length) | 0);
    return true;
  }

  /** The reader's side: every frame written since the last read, in order. */
  read(): string[] {
    const frames: string[] = [];
    const written = Atomics.load(this.#positions, WRITTEN);
    let read = Atomics.load(this.#positions, READ);
    while (read !== written) {
      const prefix = this.#take(read & this.#mask, PREFIX_BYTES);
      const length = ((prefix[0] << 24) | (prefix[1] << 16) | (prefix[2] << 8) | prefix[3]) >>> 0;
      frames.push(decoder.decode(this.#take((read + PREFIX_BYTES) & this.#mask, length)));
      read = (read + PREFIX_BYTES + length) | 0;
    }
    // Published after the frames are copied out: the writer may reuse their bytes only then.
    Atomics.store(this.#positions, READ, read);
    return frames;
  }

  /** Copies `data` into the ring at `at`, wrapping at its end; returns the position after it. */
  #put(at: number, data: Uint8Array): number {
    const first = Math.min(data.byteLength, this.#capacity - at);
    this.#bytes.set(data.subarray(0, first), at);
    if (first < data.byteLength) this.#bytes.set(data.subarray(first), 0);
    return (at + data.byteLength) & this.#mask;
  }

  /** `length` bytes from `at`, wrapping at the ring's end, copied into memory of this thread alone. */
  #take(at: number, length: number): Uint8Array {
    if (this.#scratch.byteLength < length) this.#scratch = new Uint8Array(length * 2);
    const first = Math.min(length, this.#capacity - at);
    this.#scratch.set(this.#bytes.subarray(at, at + first), 0);
    if (first < length) this.#scratch.set(this.#bytes.subarray(0, length - first), first);
    return this.#scratch.subarray(0, length);
  }
}

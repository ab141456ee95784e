import assert from "node:assert/strict";
import zlib from "node:zlib";
import { readJsonBody } from "./read_json_body.ts";
import { decodeBody } from "./body_encoding.ts";
import { cpuTimed } from "../../tests/helpers/cpu_time.ts";
import type { ClientRequest } from "../runtime/types.ts";

const LIMITS = { max_body_size: 1024 * 1024, max_json_depth: 64, connections: { body_timeout: 10_000 } };

/**
 * A chunked request (no `content-length`) whose body comes a byte at a time, each read a view on the one buffer
 * the source reuses (as a runtime may hand out views on its own read buffer): the reader must copy what it keeps.
 */
function byteByByte(text: string): ClientRequest {
  const bytes = new TextEncoder().encode(text);
  const scratch = new Uint8Array(1);
  let at = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at === bytes.byteLength) return controller.close();
      scratch[0] = bytes[at++];
      controller.enqueue(scratch);
    },
  }, { highWaterMark: 0 });
  return new Request("http://gateway.test/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    duplex: "half",
  } as RequestInit);
}

Deno.test("readJsonBody: a chunked body read a byte at a time comes out as sent, whatever the source does with its buffer", async () => {
  const content = "x".repeat(20_000);
  const sent = JSON.stringify({ model: "chat", messages: [{ role: "user", content }] });
  const body = await readJsonBody(byteByByte(sent), LIMITS);
  assert.deepEqual(body, { model: "chat", messages: [{ role: "user", content }] });
});

Deno.test("readJsonBody: a chunked body over the limit is a 413, however it is cut", async () => {
  const sent = JSON.stringify({ model: "chat", content: "y".repeat(3_000) });
  await assert.rejects(
    readJsonBody(byteByByte(sent), { ...LIMITS, max_body_size: 2_000 }),
    (err: { status?: number; code?: string }) => err.status === 413 && err.code === "request_too_large",
  );
  const fits = await readJsonBody(byteByByte(sent), { ...LIMITS, max_body_size: sent.length });
  assert.equal(fits.model, "chat");
});

// Content-Encoding (body_encoding.ts): each coding round-trips through node:zlib's own compressors.

const BODY = {
  model: "chat",
  input: "Bonjour — héllo ✓",
  messages: [{ role: "user", content: "z".repeat(5_000) }],
};

/** A request with a declared length (as Codex sends its zstd bodies), marked with `encoding`. */
function encoded(bytes: Uint8Array, encoding: string, contentLength = true): ClientRequest {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "content-encoding": encoding,
  };
  if (contentLength) headers["content-length"] = String(bytes.byteLength);
  return new Request("http://gateway.test/v1/responses", {
    method: "POST",
    headers,
    body: Uint8Array.from(bytes), // a copy: a Buffer's .buffer may be a pool larger than it
  });
}

const json = () => new TextEncoder().encode(JSON.stringify(BODY));

const COMPRESSORS: Record<string, (bytes: Uint8Array) => Uint8Array> = {
  gzip: (b) => zlib.gzipSync(b),
  "x-gzip": (b) => zlib.gzipSync(b),
  deflate: (b) => zlib.deflateSync(b),
  br: (b) => zlib.brotliCompressSync(b),
  // Codex's request compression: zstd at level 3.
  zstd: (b) => zlib.zstdCompressSync(b, { params: { [zlib.constants.ZSTD_c_compressionLevel]: 3 } }),
};

/** Asserts that `promise` rejects with `status` and `code`, and returns the error's message. */
async function refusal(promise: Promise<unknown>, status: number, code: string | null): Promise<string> {
  let message = "";
  await assert.rejects(promise, (err: { status?: number; code?: string | null; message: string }) => {
    assert.equal(err.status, status, err.message);
    assert.equal(err.code, code, err.message);
    message = err.message;
    return true;
  });
  return message;
}

for (const [name, compress] of Object.entries(COMPRESSORS)) {
  Deno.test(`readJsonBody: a ${name} body is decoded before it is parsed (declared length and chunked)`, async () => {
    const sent = compress(json());
    assert.deepEqual(await readJsonBody(encoded(sent, name), LIMITS), BODY);
    assert.deepEqual(await readJsonBody(encoded(sent, name.toUpperCase(), false), LIMITS), BODY);
  });
}

Deno.test("readJsonBody: identity, an empty header and empty list elements leave the body as sent", async () => {
  for (const encoding of ["identity", "", " , identity ,"]) {
    assert.deepEqual(await readJsonBody(encoded(json(), encoding), LIMITS), BODY, encoding);
  }
});

Deno.test("readJsonBody: stacked codings are undone last first; more than two are a 415", async () => {
  const gzipThenZstd = COMPRESSORS.zstd(zlib.gzipSync(json()));
  assert.deepEqual(await readJsonBody(encoded(gzipThenZstd, "gzip, zstd"), LIMITS), BODY);
  assert.deepEqual(await readJsonBody(encoded(gzipThenZstd, "gzip, identity, zstd"), LIMITS), BODY);
  // The same layers named in the wrong order are not what the body is.
  await refusal(readJsonBody(encoded(gzipThenZstd, "zstd, gzip"), LIMITS), 400, "invalid_body_encoding");
  const three = zlib.gzipSync(zlib.gzipSync(zlib.gzipSync(json())));
  const message = await refusal(
    readJsonBody(encoded(three, "gzip, gzip, gzip"), LIMITS),
    415,
    "unsupported_content_encoding",
  );
  assert.match(message, /3 codings/);
});

Deno.test("readJsonBody: gzip members and zstd frames in a row are decoded whole", async () => {
  const text = new TextEncoder().encode(JSON.stringify(BODY));
  const [head, tail] = [text.subarray(0, 100), text.subarray(100)];
  const members = new Uint8Array([...zlib.gzipSync(head), ...zlib.gzipSync(tail)]);
  assert.deepEqual(await readJsonBody(encoded(members, "gzip"), LIMITS), BODY);
  // Deno's zstdDecompressSync alone stops after the first frame.
  const frames = new Uint8Array([...zlib.zstdCompressSync(head), ...zlib.zstdCompressSync(tail)]);
  assert.deepEqual(await readJsonBody(encoded(frames, "zstd"), LIMITS), BODY);
});

Deno.test("readJsonBody: an unknown coding is a 415 naming it, before the body is read", async () => {
  let pulled = false;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled = true;
      controller.enqueue(json());
      controller.close();
    },
  }, { highWaterMark: 0 });
  const request = new Request("http://gateway.test/v1/responses", {
    method: "POST",
    headers: { "content-type": "application/json", "content-encoding": "x-bogus" },
    body,
    duplex: "half",
  } as RequestInit);
  const message = await refusal(readJsonBody(request, LIMITS), 415, "unsupported_content_encoding");
  assert.match(message, /"x-bogus"/);
  assert.equal(pulled, false, "the body was not read");
  for (const encoding of ["compress", "gzip;q=1", "zstd, x-bogus", "deflate-raw"]) {
    await refusal(readJsonBody(encoded(json(), encoding), LIMITS), 415, "unsupported_content_encoding");
  }
});

Deno.test("readJsonBody: a body that is not what its coding says is a 400 invalid_body_encoding", async () => {
  const cases: [string, Uint8Array][] = [
    ["gzip", json()],
    ["gzip", zlib.gzipSync(json()).subarray(0, 40)],
    ["gzip", new Uint8Array([...zlib.gzipSync(json()), 1, 2, 3, 4])],
    // Raw deflate, without the zlib wrapper RFC 9110 asks for.
    ["deflate", zlib.deflateRawSync(json())],
    ["zstd", json()],
    // Cut short inside a frame, and followed by bytes that are no frame: the decoders let both pass.
    ["zstd", COMPRESSORS.zstd(json()).subarray(0, 30)],
    ["zstd", new Uint8Array([...COMPRESSORS.zstd(json()), 0x7b, 0x7d])],
  ];
  for (const [encoding, bytes] of cases) {
    const message = await refusal(
      readJsonBody(encoded(bytes, encoding), LIMITS),
      400,
      "invalid_body_encoding",
    );
    assert.match(message, new RegExp(`not valid ${encoding} data`), message);
  }
  // Deno's brotli decoder gives back nothing, or what it read up to the cut, without an error: what it gives
  // is then no JSON object, a 400 all the same (Bun's decoder reports it, as invalid_body_encoding).
  const brotli = COMPRESSORS.br(json());
  for (const bytes of [json(), brotli.subarray(0, brotli.byteLength - 4)]) {
    await assert.rejects(readJsonBody(encoded(bytes, "br"), LIMITS), (err: { status?: number }) => {
      assert.equal(err.status, 400);
      return true;
    });
  }
});

Deno.test("readJsonBody: a body that decodes past max_body_size is a 413, whichever coding", async () => {
  const big = new TextEncoder().encode(JSON.stringify({ model: "chat", input: " ".repeat(3_000) }));
  const limits = { ...LIMITS, max_body_size: 2_000 };
  for (const [name, compress] of Object.entries(COMPRESSORS)) {
    const sent = compress(big);
    assert.ok(sent.byteLength < 2_000);
    await refusal(readJsonBody(encoded(sent, name), limits), 413, "request_too_large");
  }
  // Exactly the limit once decoded still fits.
  const fits = await readJsonBody(encoded(zlib.gzipSync(big), "gzip"), {
    ...LIMITS,
    max_body_size: big.length,
  });
  assert.equal(fits.model, "chat");
  // The inner layer of two is held to the limit too.
  const twice = zlib.gzipSync(zlib.gzipSync(big));
  await refusal(readJsonBody(encoded(twice, "gzip, gzip"), limits), 413, "request_too_large");
});

/**
 * A zstd frame of RLE blocks (RFC 8878 §3.1.1.2): 4 bytes a block, each 128 KiB of spaces once decoded, and
 * the whole declared in the header's Frame_Content_Size; a decoder that allocated what is declared, or decoded
 * it all, would need that much memory.
 */
function zstdBomb(blocks: number): Uint8Array {
  const out = new Uint8Array(14 + blocks * 4);
  const view = new DataView(out.buffer);
  view.setUint32(0, 0xfd2fb528, true);
  out[4] = 0b1100_0000; // Frame_Content_Size in 8 bytes, a window descriptor follows
  out[5] = 0x58; // a window of 2 MiB
  view.setBigUint64(6, BigInt(blocks) * 131_072n, true);
  for (let i = 0, at = 14; i < blocks; i++, at += 4) {
    const header = (i === blocks - 1 ? 1 : 0) | (1 << 1) | (131_072 << 3);
    out[at] = header & 0xff;
    out[at + 1] = (header >> 8) & 0xff;
    out[at + 2] = header >> 16;
    out[at + 3] = 0x20;
  }
  return out;
}

Deno.test("readJsonBody: a zstd body declaring 8 GiB is a 413, decoded no further than the limit", async () => {
  const small = zstdBomb(2);
  assert.equal(zlib.zstdDecompressSync(small).byteLength, 262_144, "the bomb is valid zstd");
  const bomb = zstdBomb(65_536); // 256 KiB sent, 8 GiB declared and encoded
  const limits = { ...LIMITS, max_body_size: 1024 * 1024 };
  await refusal(readJsonBody(encoded(bomb, "zstd"), limits), 413, "request_too_large");
  const [error, cpuMs] = cpuTimed(() => {
    try {
      decodeBody(bomb, ["zstd"], limits.max_body_size);
    } catch (err) {
      return err as { status?: number };
    }
  });
  assert.equal(error?.status, 413);
  // Decoding it all would take seconds (and 8 GiB); stopping at 1 MiB takes milliseconds.
  assert.ok(cpuMs < 400, `decoding stopped at the limit: ${cpuMs} ms of CPU`);
});

Deno.test("readJsonBody: a gzip body of 256 MiB of zeros is a 413 that costs about the limit's decoding", async () => {
  const member = zlib.gzipSync(new Uint8Array(1024 * 1024)); // about 1 KiB
  const bomb = new Uint8Array(member.byteLength * 256);
  for (let i = 0; i < 256; i++) bomb.set(member, i * member.byteLength);
  const limits = { ...LIMITS, max_body_size: 1024 * 1024 };
  assert.ok(bomb.byteLength < limits.max_body_size);
  await refusal(readJsonBody(encoded(bomb, "gzip"), limits), 413, "request_too_large");
  const [error, cpuMs] = cpuTimed(() => {
    try {
      decodeBody(bomb, ["gzip"], limits.max_body_size);
    } catch (err) {
      return err as { status?: number };
    }
  });
  assert.equal(error?.status, 413);
  // The whole 256 MiB takes about two seconds of CPU to inflate; the first MiB, a few milliseconds.
  assert.ok(cpuMs < 400, `decoding stopped at the limit: ${cpuMs} ms of CPU`);
});

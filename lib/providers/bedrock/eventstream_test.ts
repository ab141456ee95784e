import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { crc32 } from "./crc32.ts";
import { type EventStreamMessage, eventStreamTransformer, MAX_MESSAGE_BYTES } from "./eventstream.ts";
import { runStages } from "../../../tests/helpers/run_stages.ts";
// The fake Bedrock server's encoder, written apart from the decoder under test.
import { encodeFrame } from "../../../tests/helpers/fake_bedrock.ts";

function fromHex(text: string): Uint8Array {
  return new Uint8Array(text.match(/../g)!.map((h) => parseInt(h, 16)));
}

async function decodeAll(chunks: Uint8Array[]): Promise<EventStreamMessage[]> {
  const source = ReadableStream.from(chunks);
  return await Array.fromAsync(runStages(source, eventStreamTransformer()));
}

function event(type: string, payload: unknown): Uint8Array {
  return encodeFrame({
    ":message-type": "event",
    ":event-type": type,
    ":content-type": "application/json",
  }, JSON.stringify(payload));
}

const FRAMES = [
  event("messageStart", { role: "assistant" }),
  event("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Hel" } }),
  event("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "lo ✓" } }),
  event("messageStop", { stopReason: "end_turn" }),
];
const ALL = new Uint8Array(FRAMES.reduce((n, f) => n + f.length, 0));
FRAMES.reduce((at, f) => (ALL.set(f, at), at + f.length), 0);

function summary(messages: EventStreamMessage[]) {
  return messages.map((m) => [m.headers[":event-type"], new TextDecoder().decode(m.payload)]);
}

Deno.test("eventstream: several frames in one read", async () => {
  const got = await decodeAll([ALL]);
  assert.equal(got.length, 4);
  assert.deepEqual(got[0].headers, {
    ":message-type": "event",
    ":event-type": "messageStart",
    ":content-type": "application/json",
  });
  assert.deepEqual(JSON.parse(new TextDecoder().decode(got[2].payload)), {
    contentBlockIndex: 0,
    delta: { text: "lo ✓" },
  });
});

Deno.test("eventstream: split into two reads at every byte offset", async () => {
  const expected = summary(await decodeAll([ALL]));
  for (let cut = 0; cut <= ALL.length; cut++) {
    const got = await decodeAll([ALL.slice(0, cut), ALL.slice(cut)]);
    assert.deepEqual(summary(got), expected, `cut at ${cut}`);
  }
});

Deno.test("eventstream: one byte per read", async () => {
  const bytes = Array.from(ALL, (b) => new Uint8Array([b]));
  assert.deepEqual(summary(await decodeAll(bytes)), summary(await decodeAll([ALL])));
});

Deno.test("eventstream: AWS's published vectors decode (botocore / aws-c-event-stream)", async () => {
  const [empty] = await decodeAll([fromHex("000000100000000005c248eb7d98c8ff")]);
  assert.deepEqual(empty.headers, {});
  assert.equal(empty.payload.length, 0);
  const [int8] = await decodeAll([fromHex("000000170000000729860158046279746502ffc2f869dc")]);
  assert.deepEqual(int8.headers, { byte: -1 });
  const oneHeader =
    "0000003d0000002007fd83960c636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e" +
    "7b27666f6f273a27626172277d8d9c08b1";
  const [json] = await decodeAll([fromHex(oneHeader)]);
  assert.deepEqual(json.headers, { "content-type": "application/json" });
  assert.equal(new TextDecoder().decode(json.payload), "{'foo':'bar'}");
});

Deno.test("eventstream: every header value type", async () => {
  // botocore ALL_HEADERS_TYPES: total 0x62, headers 0x52, prelude crc 03b5cb9c, message crc 63353671.
  const headerBlock = fromHex(
    "01300001310101320202013303000301340400000004013505000000000000000501360600056279746573" +
      "013707000475746638013808000000000000000801390930313233343536373839616263646566",
  );
  const total = 16 + headerBlock.length;
  const frame = new Uint8Array(total);
  const view = new DataView(frame.buffer);
  view.setUint32(0, total);
  view.setUint32(4, headerBlock.length);
  view.setUint32(8, crc32(frame.subarray(0, 8)));
  frame.set(headerBlock, 12);
  view.setUint32(total - 4, crc32(frame.subarray(0, total - 4)));
  assert.equal(total, 0x62);
  assert.equal(view.getUint32(8), 0x03b5cb9c);
  assert.equal(view.getUint32(total - 4), 0x63353671);
  const [message] = await decodeAll([frame]);
  assert.deepEqual(message.headers, {
    "0": true,
    "1": false,
    "2": 2,
    "3": 3,
    "4": 4,
    "5": 5,
    "6": new TextEncoder().encode("bytes"),
    "7": "utf8",
    "8": new Date(8),
    "9": "30313233-3435-3637-3839-616263646566",
  });
});

async function rejectsWith(chunks: Uint8Array[], pattern: RegExp) {
  await assert.rejects(decodeAll(chunks), (err: unknown) => {
    assert.ok(err instanceof GatewayError, `expected GatewayError, got ${err}`);
    assert.equal(err.status, 502);
    assert.equal(err.code, "upstream_invalid_response");
    assert.match(err.message, pattern);
    return true;
  });
}

Deno.test("eventstream: a bad prelude CRC errors, however the bytes are split", async () => {
  const bad = FRAMES[1].slice();
  bad[9] ^= 0xff;
  for (let cut = 0; cut <= bad.length; cut++) {
    await rejectsWith([FRAMES[0], bad.slice(0, cut), bad.slice(cut)], /bad prelude CRC/);
  }
  // botocore CORRUPTED_LENGTH: first byte flipped, prelude CRC no longer matches.
  await rejectsWith(
    [fromHex("0100001d00000000fd528c5a7b27666f6f273a27626172277dc3653936")],
    /bad prelude CRC/,
  );
});

Deno.test("eventstream: a bad message CRC errors", async () => {
  const bad = FRAMES[2].slice();
  bad[bad.length - 10] ^= 0x01; // inside the payload
  await rejectsWith([FRAMES[0], bad], /bad message CRC/);
  const badTail = FRAMES[2].slice();
  badTail[badTail.length - 1] ^= 0x01;
  await rejectsWith([badTail], /bad message CRC/);
});

Deno.test("eventstream: absurd lengths are refused before buffering", async () => {
  const frame = new Uint8Array(12);
  const view = new DataView(frame.buffer);
  view.setUint32(0, MAX_MESSAGE_BYTES + 1);
  view.setUint32(8, crc32(frame.subarray(0, 8)));
  await assert.rejects(decodeAll([frame]), { status: 502, code: "upstream_response_too_large" });
  view.setUint32(0, 8);
  view.setUint32(8, crc32(frame.subarray(0, 8)));
  await rejectsWith([frame], /message length 8/);
  view.setUint32(0, 32);
  view.setUint32(4, 17);
  view.setUint32(8, crc32(frame.subarray(0, 8)));
  await rejectsWith([frame], /headers length 17/);
});

Deno.test("eventstream: a stream that ends inside a frame errors", async () => {
  await rejectsWith([FRAMES[0], FRAMES[1].slice(0, 20)], /ended inside a message/);
});

Deno.test("eventstream: duplicate headers and unknown header types error", async () => {
  // botocore DUPLICATE_HEADER: two int32 headers named "test"; both CRCs valid.
  const dup = "00000024000000144bb982d0" + "047465737404617364660474657374046173646" + "6f3f47563";
  await rejectsWith([fromHex(dup)], /duplicate header "test"/);
  const block = new Uint8Array([1, 0x78, 10]);
  const frame = new Uint8Array(16 + block.length);
  const view = new DataView(frame.buffer);
  view.setUint32(0, frame.length);
  view.setUint32(4, block.length);
  view.setUint32(8, crc32(frame.subarray(0, 8)));
  frame.set(block, 12);
  view.setUint32(frame.length - 4, crc32(frame.subarray(0, frame.length - 4)));
  await rejectsWith([frame], /unknown header value type 10/);
});

/** A frame with valid CRCs around an arbitrary header block (and payload `{}`). */
function frameWithHeaderBlock(block: Uint8Array): Uint8Array {
  const payload = new TextEncoder().encode("{}");
  const frame = new Uint8Array(16 + block.length + payload.length);
  const view = new DataView(frame.buffer);
  view.setUint32(0, frame.length);
  view.setUint32(4, block.length);
  view.setUint32(8, crc32(frame.subarray(0, 8)));
  frame.set(block, 12);
  frame.set(payload, 12 + block.length);
  view.setUint32(frame.length - 4, crc32(frame.subarray(0, frame.length - 4)));
  return frame;
}

Deno.test("eventstream: a header name or string value that is not UTF-8 is a 502, not the gateway's own error", async () => {
  const name = new TextEncoder().encode(":event-type");
  // A string header (type 7) whose value is 0xff 0xfe "A".
  const badValue = new Uint8Array([name.length, ...name, 7, 0, 3, 0xff, 0xfe, 0x41]);
  await rejectsWith(
    [FRAMES[0], frameWithHeaderBlock(badValue)],
    /header value \(":event-type"\) is not valid UTF-8/,
  );
  // A header name 0xc3 (a truncated two-byte sequence), bool value.
  const badName = new Uint8Array([1, 0xc3, 0]);
  await rejectsWith([frameWithHeaderBlock(badName)], /header name is not valid UTF-8/);
});

Deno.test("eventstream: a message over the configured limit is a 502 upstream_response_too_large", async () => {
  const big = FRAMES[2];
  const decoder = eventStreamTransformer({ maxMessageBytes: big.length - 1, provider: "aws" });
  const source = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(big.slice(0, 12)); // the prelude alone is enough to refuse it
      c.close();
    },
  });
  await assert.rejects(Array.fromAsync(runStages(source, decoder)), (err: GatewayError) => {
    assert.ok(err instanceof GatewayError);
    assert.equal(err.status, 502);
    assert.equal(err.code, "upstream_response_too_large");
    assert.match(err.message, /Provider "aws" sent a stream message of \d+ bytes/);
    return true;
  });
  // At the limit it decodes.
  const exact = await Array.fromAsync(
    runStages([big], eventStreamTransformer({ maxMessageBytes: big.length })),
  );
  assert.equal(exact.length, 1);
});

/**
 * The bytes copied by typed-array copies (`set`, `slice`) while `fn` runs: counted, not timed, so a loaded machine
 * cannot fail the bound nor a fast one hide a quadratic copy.
 */
function bytesCopied(fn: () => void): number {
  const proto = Uint8Array.prototype;
  const { set, slice } = proto; // both inherited from %TypedArray%.prototype: own properties shadow them here
  let copied = 0;
  Object.defineProperties(proto, {
    set: {
      configurable: true,
      value(this: Uint8Array, source: ArrayLike<number>, offset?: number) {
        copied += source.length;
        return set.call(this, source, offset);
      },
    },
    slice: {
      configurable: true,
      value(this: Uint8Array, start?: number, end?: number) {
        const out = slice.call(this, start, end);
        copied += out.length;
        return out;
      },
    },
  });
  try {
    fn();
  } finally {
    Reflect.deleteProperty(proto, "set");
    Reflect.deleteProperty(proto, "slice");
  }
  return copied;
}

Deno.test("eventstream: a large message arriving in small reads is copied a few times over, not once per read", () => {
  const payload = new Uint8Array(1024 * 1024).fill(120);
  const frame = new Uint8Array(16 + payload.length);
  const view = new DataView(frame.buffer);
  view.setUint32(0, frame.length);
  view.setUint32(4, 0);
  view.setUint32(8, crc32(frame.subarray(0, 8)));
  frame.set(payload, 12);
  view.setUint32(frame.length - 4, crc32(frame.subarray(0, frame.length - 4)));
  const messages: EventStreamMessage[] = [];
  const controller: TransformStreamDefaultController<EventStreamMessage> = {
    desiredSize: 1,
    enqueue: (m) => void messages.push(m!),
    error: (reason) => {
      throw reason;
    },
    terminate: () => {},
  };
  const decoder = eventStreamTransformer();
  // 2,049 reads of 512 bytes: copying what is held again on each read would copy about a gigabyte.
  const copied = bytesCopied(() => {
    for (let i = 0; i < frame.length; i += 512) decoder.transform(frame.subarray(i, i + 512), controller);
    decoder.flush?.(controller);
  });
  assert.equal(messages.length, 1);
  assert.deepEqual(messages[0].payload, payload);
  // Into the message's buffer once, out as its payload once.
  assert.ok(copied <= 3 * frame.length, `${copied} bytes copied for a message of ${frame.length}`);
});

Deno.test("eventstream: the reads of an incomplete message are copied into its buffer, never kept", () => {
  // A message trickled a byte per read used to be kept as its reads (one small array each: ~500 times its size
  // in memory). A decoder that keeps a read it was given sees it change when its owner reuses it; one that
  // copies it does not.
  const decoder = eventStreamTransformer();
  const out: EventStreamMessage[] = [];
  const controller: TransformStreamDefaultController<EventStreamMessage> = {
    desiredSize: 1,
    enqueue: (m) => void out.push(m!),
    error: (reason) => {
      throw reason;
    },
    terminate: () => {},
  };
  const reused = new Uint8Array(1);
  for (const byte of ALL) {
    reused[0] = byte;
    decoder.transform(reused, controller);
  }
  decoder.flush?.(controller);
  assert.deepEqual(summary(out), [
    ["messageStart", '{"role":"assistant"}'],
    ["contentBlockDelta", '{"contentBlockIndex":0,"delta":{"text":"Hel"}}'],
    ["contentBlockDelta", '{"contentBlockIndex":0,"delta":{"text":"lo ✓"}}'],
    ["messageStop", '{"stopReason":"end_turn"}'],
  ]);
});

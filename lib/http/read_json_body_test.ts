import assert from "node:assert/strict";
import { readJsonBody } from "./read_json_body.ts";
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

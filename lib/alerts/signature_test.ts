/**
 * The body signature: a published HMAC-SHA256 vector, and what a receiver does to check it (WebCrypto's
 * `verify` over the raw body), including that a changed body or another key fails.
 */
import assert from "node:assert/strict";
import { SIGNATURE_HEADER, signBody } from "./signature.ts";

const encoder = new TextEncoder();

/** What a receiver does: recompute the HMAC of the raw body with its copy of the secret. */
async function receiverVerifies(secret: string, rawBody: string, header: string): Promise<boolean> {
  const m = /^sha256=([0-9a-f]{64})$/.exec(header);
  if (!m) return false;
  const mac = new Uint8Array(m[1].match(/../g)!.map((h) => parseInt(h, 16)));
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["verify"],
  );
  return await crypto.subtle.verify("HMAC", key, mac, encoder.encode(rawBody));
}

Deno.test("signature: matches RFC 4231 test case 2, as sha256=<lowercase hex>", async () => {
  assert.equal(
    await signBody("Jefe", "what do ya want for nothing?"),
    "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
  );
  assert.equal(SIGNATURE_HEADER, "x-gateway-signature");
});

Deno.test("signature: a receiver verifies it from the raw body; another body or key does not", async () => {
  const body = JSON.stringify({ id: "alr_1", type: "budget", note: "ünïcödé ✓" });
  const signature = await signBody("s3cret", body);
  assert.equal(await receiverVerifies("s3cret", body, signature), true);
  assert.equal(await receiverVerifies("s3cret", body + " ", signature), false);
  assert.equal(await receiverVerifies("other", body, signature), false);
});

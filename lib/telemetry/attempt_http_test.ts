import assert from "node:assert/strict";
import { portOf, redactedUrl } from "./attempt_http.ts";

Deno.test("url.full: user, password and credential query values are REDACTED; the rest of the URL is kept", () => {
  const url = new URL(
    "https://bob:hunter2@example.com/v1beta/models/g:generateContent?alt=sse&key=AIza-secret",
  );
  const shown = redactedUrl(url);
  assert.equal(
    shown,
    "https://REDACTED:REDACTED@example.com/v1beta/models/g:generateContent?alt=sse&key=REDACTED",
  );
  assert.ok(!shown.includes("hunter2") && !shown.includes("AIza-secret"));
  // A presigned URL's signature and credential, in any case.
  const signed = redactedUrl(new URL("https://s3.example/o?X-Amz-Signature=abc&X-AMZ-CREDENTIAL=AKIA1&a=1"));
  assert.equal(signed, "https://s3.example/o?X-Amz-Signature=REDACTED&X-AMZ-CREDENTIAL=REDACTED&a=1");
  // Nothing to redact: the URL as it was called.
  const plain = "http://127.0.0.1:8080/openai/deployments/d/chat/completions?api-version=2024-10-21";
  assert.equal(redactedUrl(new URL(plain)), plain);
});

Deno.test("server.port: the URL's own port, else its scheme's", () => {
  assert.equal(portOf(new URL("http://127.0.0.1:8080/v1")), 8080);
  assert.equal(portOf(new URL("https://api.openai.com/v1")), 443);
  assert.equal(portOf(new URL("http://localhost/v1")), 80);
});

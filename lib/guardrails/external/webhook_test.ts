/**
 * The webhook adapter against the webhook fake over a real socket: the request it sends (body, headers, HMAC
 * signature the fake verifies), each of the four answers, strict refusal of anything else (shape, extra
 * fields, a replace of the wrong length, non-JSON, an oversized body), non-2xx without leaking, and abort.
 */
import assert from "node:assert/strict";
import { startFakeWebhook } from "../../../tests/helpers/fake_guardrails.ts";
import { MAX_ANSWER_BYTES } from "./http.ts";
import { abortStops, input, never, rejectsWithout } from "./test_helpers.ts";
import { createWebhookGuardrail, parseWebhookAnswer } from "./webhook.ts";

const SECRET = "whsec-0123456789abcdef";
const HEADER_VALUE = "Bearer hook-token-abcdef0123";

Deno.test("webhook: posts the phase, alias, token and texts, signed, with the configured headers", async () => {
  const fake = startFakeWebhook({ secret: SECRET });
  try {
    const service = createWebhookGuardrail({
      url: `${fake.url}/check?k=1`,
      headers: { authorization: HEADER_VALUE, "x-tenant": "acme" },
      secret: SECRET,
    });
    assert.deepEqual(await service.check(input(["hello", "world"], "output"), never), { action: "allow" });
    assert.deepEqual(fake.signatures, [true]);
    const [call] = fake.calls;
    assert.equal(call.path, "/check");
    assert.deepEqual(call.body, {
      phase: "output",
      alias: "chat",
      token: "team-a",
      texts: ["hello", "world"],
    });
    assert.equal(call.headers["x-tenant"], "acme");
    assert.equal(call.headers.authorization, "<redacted>");
    assert.equal(call.headers["content-type"], "application/json");
    assert.match(call.headers["x-gateway-signature"], /^sha256=[0-9a-f]{64}$/);
  } finally {
    await fake.stop();
  }
});

Deno.test("webhook: a wrong secret fails the fake's signature check, and the error hides the secret", async () => {
  const fake = startFakeWebhook({ secret: SECRET });
  try {
    const service = createWebhookGuardrail({ url: fake.url, secret: "another-secret-value" });
    const error = await rejectsWithout(service.check(input(["hi there"]), never), [
      "another-secret-value",
      "hi there",
    ]);
    assert.match(error.message, /HTTP 401/);
    assert.deepEqual(fake.signatures, [false]);
  } finally {
    await fake.stop();
  }
});

Deno.test("webhook: deny, replace and flag answers become verdicts", async () => {
  const fake = startFakeWebhook();
  try {
    const service = createWebhookGuardrail({ url: fake.url });
    fake.answer = { action: "deny", reason: "no secrets please", categories: ["SECRET", "PII", "SECRET"] };
    assert.deepEqual(await service.check(input(["a"]), never), {
      action: "deny",
      reason: "no secrets please",
      categories: ["PII", "SECRET"],
    });
    fake.answer = { action: "deny" };
    assert.deepEqual(await service.check(input(["a"]), never), {
      action: "deny",
      reason: "refused by a guardrail",
      categories: [],
    });
    fake.answer = (body: unknown) => ({
      action: "replace",
      texts: (body as { texts: string[] }).texts.map((t) => t.toUpperCase()),
      categories: ["CASE"],
    });
    assert.deepEqual(await service.check(input(["a", "b"]), never), {
      action: "replace",
      texts: ["A", "B"],
      categories: ["CASE"],
    });
    fake.answer = { action: "flag", categories: ["TOXIC"] };
    assert.deepEqual(await service.check(input(["a"]), never), { action: "flag", categories: ["TOXIC"] });
  } finally {
    await fake.stop();
  }
});

Deno.test("webhook: malformed answers throw", async () => {
  const fake = startFakeWebhook();
  try {
    const service = createWebhookGuardrail({ url: fake.url });
    const bad: unknown[] = [
      { action: "block" },
      { action: "allow", extra: true },
      { action: "flag" },
      { action: "flag", categories: "PII" },
      { action: "flag", categories: [""] },
      { action: "deny", reason: 7 },
      { action: "replace", texts: ["only one"] },
      { action: "replace", texts: [1, 2] },
      ["allow"],
      null,
    ];
    for (const answer of bad) {
      fake.answer = answer;
      const error = await rejectsWithout(service.check(input(["first", "second"]), never), [
        "first",
        "second",
      ]);
      assert.match(error.message, /malformed answer/, JSON.stringify(answer));
    }
    fake.rawAnswer = "allow";
    await assert.rejects(service.check(input(["x"]), never), /not JSON/);
    fake.rawAnswer = `{"action":"allow","pad":"${"x".repeat(MAX_ANSWER_BYTES)}"}`;
    await assert.rejects(service.check(input(["x"]), never), /larger than/);
  } finally {
    await fake.stop();
  }
});

Deno.test("parseWebhookAnswer: a replace must keep the count", () => {
  assert.throws(() => parseWebhookAnswer({ action: "replace", texts: [] }, 1), /0 texts for 1 sent/);
  assert.deepEqual(parseWebhookAnswer({ action: "replace", texts: [] }, 0), {
    action: "replace",
    texts: [],
    categories: [],
  });
});

Deno.test("webhook: a non-2xx throws without the texts, the secret or header values", async () => {
  const fake = startFakeWebhook();
  try {
    fake.faults.failStatus = 503;
    const service = createWebhookGuardrail({
      url: `${fake.url}/?key=url-key-999`,
      headers: { authorization: HEADER_VALUE },
      secret: SECRET,
    });
    const error = await rejectsWithout(service.check(input(["my private text"]), never), [
      "my private text",
      SECRET,
      HEADER_VALUE,
      "url-key-999",
    ]);
    assert.match(error.message, /HTTP 503/);
  } finally {
    await fake.stop();
  }
});

Deno.test("webhook: an unreachable service throws naming only its host", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const service = createWebhookGuardrail({ url: `http://127.0.0.1:${port}/?key=url-key-999` });
  const error = await rejectsWithout(service.check(input(["text"]), never), ["url-key-999", "text"]);
  assert.match(error.message, /could not reach 127\.0\.0\.1/);
});

Deno.test("webhook: aborting the signal stops the call", async () => {
  const fake = startFakeWebhook();
  try {
    const service = createWebhookGuardrail({ url: fake.url });
    await abortStops(fake, (signal) => service.check(input(["slow"]), signal));
  } finally {
    await fake.stop();
  }
});

Deno.test("webhook: a category that is no short name is recorded as (unnamed), never as the receiver wrote it", () => {
  const verdict = parseWebhookAnswer(
    {
      action: "flag",
      categories: ["self-harm/intent", "Investment advice", "x".repeat(65), "a\nb", "-lead"],
    },
    1,
  );
  assert.deepEqual(verdict, {
    action: "flag",
    categories: ["(unnamed)", "Investment advice", "self-harm/intent"],
  });
});

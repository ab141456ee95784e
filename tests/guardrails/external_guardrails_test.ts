/**
 * External guardrails through the gateway (issue 27, acceptance 4 and 5): a service that does not answer is
 * given up on at the guardrail's timeout (its record says `timeout`, which only that timeout sets; that it is the
 * configured timeout and not the default is shown by the order of two timers, not by a clock), and it or a
 * failing one lets the request through under `fail_open` and refuses it with a clear 503 under `fail_closed`;
 * neither puts the request's text in the logs. The moderation adapter reached through a configured `openai`
 * provider refuses a flagged request; the Bedrock adapter's masking replaces a text before the upstream sees it
 * (its fake verifies the SigV4 signature).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { nthLog, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { inProcessGateway } from "../helpers/in_process.ts";
import { backstop, eventually } from "../helpers/backstop.ts";
import { type ScriptedChat, startScriptedChat } from "../helpers/scripted_chat.ts";
import {
  FAKE_GUARDRAIL_AWS,
  FAKE_MODERATION_KEY,
  type FakeBedrockGuardrail,
  type FakeModeration,
  type FakeWebhook,
  startFakeBedrockGuardrail,
  startFakeModeration,
  startFakeWebhook,
} from "../helpers/fake_guardrails.ts";

const TOKEN = "gw-ext-guardrails-0123456789abcdef";
const ADMIN = "gw-ext-guardrails-admin-0123456789";
const SECRET_TEXT = "the quarterly numbers are 12345-confidential";
/**
 * The rig's webhook guardrails' timeout. Not a few hundred milliseconds: the rig's tests whose webhook answers
 * at once (deny, replace) would see a loaded machine's stall as a timeout and let the request through.
 */
const RIG_TIMEOUT = "3s";
/**
 * How long the webhook fake holds a call before it allows it, for a service that does not answer: far past the
 * rig's 3 s timeout and anything a healthy run comes near, so a request it holds that long shows the
 * timeout never fired (its record then names no `timeout`). The fake's `stop()` ends the hold.
 */
const NO_ANSWER_MS = 60_000;

interface Rig {
  gw: TestGateway;
  up: ScriptedChat;
  hook: FakeWebhook;
  moderation: FakeModeration;
  bedrock: FakeBedrockGuardrail;
}

async function withRig(fn: (rig: Rig) => Promise<void>) {
  const up = startScriptedChat();
  const hook = startFakeWebhook();
  const moderation = startFakeModeration();
  const bedrock = startFakeBedrockGuardrail();
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-scripted-0123456789 }
  mod: { type: openai, base_url: "${moderation.url}/v1", api_key: ${FAKE_MODERATION_KEY} }
guardrails:
  hook-open: { type: webhook, url: "${hook.url}/check", timeout: ${RIG_TIMEOUT}, on_failure: fail_open }
  hook-closed: { type: webhook, url: "${hook.url}/check", timeout: ${RIG_TIMEOUT}, on_failure: fail_closed }
  moderation: { type: openai_moderation, provider: mod }
  aws:
    type: bedrock
    guardrail_identifier: ${FAKE_GUARDRAIL_AWS.guardrailIdentifier}
    guardrail_version: "${FAKE_GUARDRAIL_AWS.guardrailVersion}"
    region: ${FAKE_GUARDRAIL_AWS.region}
    endpoint: "${bedrock.url}"
    access_key_id: ${FAKE_GUARDRAIL_AWS.accessKeyId}
    secret_access_key: "${FAKE_GUARDRAIL_AWS.secretAccessKey}"
models:
  open: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [hook-open] }
  closed: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [hook-closed] }
  moderated: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [moderation] }
  aws: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [aws] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`);
  try {
    await fn({ gw, up, hook, moderation, bedrock });
  } finally {
    await gw.stop();
    await Promise.all([up.stop(), hook.stop(), moderation.stop(), bedrock.stop()]);
  }
}

function ask(gw: TestGateway, model: string, content: string): Promise<Response> {
  return fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content }] }),
  });
}

/**
 * The usage records naming `guardrail`. A JSON answer's record is queued before the answer is sent, and
 * `/admin/requests` stores what is queued before it reads, so a request already answered is there.
 */
async function recordsOf(gw: TestGateway, guardrail: string): Promise<Record<string, unknown>[]> {
  const res = await fetch(`${gw.url}/admin/requests?guardrail=${guardrail}`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  return (await res.json()).data;
}

Deno.test("external guardrails: a service that does not answer is given up at the timeout, open or closed; no text in logs", async () => {
  await withRig(async ({ gw, up, hook }) => {
    hook.faults.delayMs = NO_ANSWER_MS;
    const open = await ask(gw, "open", SECRET_TEXT);
    assert.equal(open.status, 200, await open.clone().text());
    await open.body?.cancel();
    assert.equal(up.seen.length, 1);
    const [opened] = await recordsOf(gw, "hook-open");
    assert.deepEqual(
      opened?.guardrails,
      [{ name: "hook-open", phase: "input", action: "error", error: "timeout" }],
      "the guardrail's timeout ended the wait, not the service's answer",
    );

    const closed = await ask(gw, "closed", SECRET_TEXT);
    assert.equal(closed.status, 503);
    const error = (await closed.json()).error;
    assert.equal(error.code, "guardrail_unavailable");
    assert.match(error.message, /hook-closed could not be reached \(timeout\)/);
    assert.equal(up.seen.length, 1, "a request refused by fail_closed never reaches the upstream");

    // A service that answers 500: the same two outcomes.
    hook.faults.delayMs = 0;
    hook.faults.failStatus = 500;
    assert.equal((await ask(gw, "open", SECRET_TEXT)).status, 200);
    assert.equal((await ask(gw, "closed", SECRET_TEXT)).status, 503);
    // Every chat request's log line is in (a gateway binary writes its log in bursts).
    await nthLog(gw, (l) => l.msg === "request" && l.path === "/v1/chat/completions", 4);
    const logs = JSON.stringify(gw.logs);
    assert.ok(!logs.includes("12345-confidential"), "the request's text is in no log line");
    assert.match(logs, /guardrail:hook-open/, "the fail-open request's record names the guardrail");
  });
});

/**
 * A configured `timeout` is the one the call is given up at, not the 2 s default, shown by the order of two
 * timers in one event loop rather than by a clock. The gateway runs in this process; the service holds the call
 * and answers "allow" one second after the call reached it. The guardrail's deadline was armed before the call
 * left, so a 300 ms one falls before that answer (timers fire in the order of their deadlines, however loaded the
 * machine) and the request fails open with `timeout`; the 2 s default would fall after it, and the service's
 * answer would pass the request with no timeout.
 */
Deno.test("external guardrails: the configured timeout, not the 2 s default, ends a call the service holds", async () => {
  const hook = startFakeWebhook();
  const answer = Promise.withResolvers<void>();
  hook.faults.holdUntil = answer.promise;
  const gw = inProcessGateway(`
providers:
  local: { type: builtin }
guardrails:
  hook-short: { type: webhook, url: "${hook.url}/check", timeout: 300ms, on_failure: fail_open }
models:
  guarded: { type: chat, targets: [ { provider: local, model: echo } ], guardrails: [hook-short] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
  try {
    const asked = gw.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "guarded", messages: [{ role: "user", content: "hello" }] }),
    });
    await eventually("the guardrail service has the call", () => hook.calls.length === 1);
    await new Promise((r) => setTimeout(r, 1_000));
    answer.resolve();
    const response = await backstop(asked, "the guarded request's answer");
    assert.equal(response.status, 200, await response.clone().text());
    await response.body?.cancel();
    assert.deepEqual(
      gw.records.map((r) => r.guardrails),
      [[{ name: "hook-short", phase: "input", action: "error", error: "timeout" }]],
      "given up at the configured 300 ms, before the service answered",
    );
  } finally {
    answer.resolve();
    await hook.stop();
  }
});

Deno.test("external guardrails: webhook deny and replace, moderation through a provider, Bedrock masking", async () => {
  await withRig(async ({ gw, up, hook, moderation, bedrock }) => {
    hook.answer = { action: "deny", reason: "not today", categories: ["finance"] };
    const denied = await ask(gw, "open", SECRET_TEXT);
    assert.equal(denied.status, 400);
    assert.match((await denied.json()).error.message, /not today/);
    hook.answer = (body: unknown) => ({
      action: "replace",
      texts: (body as { texts: string[] }).texts.map((t) => t.replace("12345-confidential", "[hidden]")),
      categories: ["finance"],
    });
    assert.equal((await ask(gw, "open", SECRET_TEXT)).status, 200);
    assert.match(JSON.stringify(up.seen.at(-1)), /\[hidden\]/);
    assert.ok(!JSON.stringify(up.seen.at(-1)).includes("12345-confidential"));

    const flagged = await ask(gw, "moderated", `plan the ${moderation.flagWord} now`);
    assert.equal(flagged.status, 400);
    assert.match((await flagged.json()).error.message, /violence/);
    assert.equal((await ask(gw, "moderated", "a calm question")).status, 200);

    const masked = await ask(gw, "aws", "mail me at bob@example.com");
    assert.equal(masked.status, 200);
    await masked.body?.cancel();
    assert.ok(
      !JSON.stringify(up.seen.at(-1)).includes("bob@example.com"),
      "the guardrail's mask went upstream",
    );
    assert.ok(bedrock.calls.length > 0);
    assert.ok(
      bedrock.signatures.length > 0 && bedrock.signatures.every(Boolean),
      "every ApplyGuardrail call was signed correctly",
    );
  });
});

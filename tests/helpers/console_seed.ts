/**
 * A gateway for the console's browser test, and a seeded run of real requests through it with the `openai` SDK:
 * allowed chat and embedding calls, a content-rule denial, an rpm denial, a forbidden alias, upstream errors and
 * a target that fails until it is ejected. The test then checks that the console shows each of them.
 *
 * @module
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { createSqliteStore } from "../../lib/usage/sqlite_store.ts";
import type { StoredUsageRecord } from "../../lib/usage/store.ts";
import { startGateway, type TestGateway } from "./gateway.ts";
import {
  ADMIN_TOKEN,
  ALERT_HOOK_PATH,
  ALERT_SECRET,
  ask,
  CI_BOT_TOKEN,
  PAYMENTS_API_TOKEN,
  PAYMENTS_BATCH_TOKEN,
  sdk,
  SECRET_PROMPT,
  WEB_APP_TOKEN,
} from "./console_fixture.ts";

/** An upstream that answers every request with a 500, so its target fails until it is ejected. */
export interface FailingUpstream {
  baseURL: string;
  hits: number;
  stop(): Promise<void>;
}

export function startFailingUpstream(): FailingUpstream {
  const upstream: FailingUpstream = { baseURL: "", hits: 0, stop: async () => {} };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    upstream.hits++;
    await request.body?.cancel();
    return Response.json(
      { error: { message: "upstream is down", type: "server_error", param: null, code: null } },
      { status: 500 },
    );
  });
  upstream.baseURL = `http://127.0.0.1:${server.addr.port}/v1`;
  upstream.stop = () => server.shutdown();
  return upstream;
}

/** A webhook receiver for the gateway's alerts: answers every post with 204 and keeps its body. */
export interface AlertReceiver {
  /** The URL for `alerts:`, with {@linkcode ALERT_HOOK_PATH} (a key the console must never show). */
  url: string;
  bodies: string[];
  stop(): Promise<void>;
}

export function startAlertReceiver(): AlertReceiver {
  const bodies: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    bodies.push(await request.text());
    return new Response(null, { status: 204 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}${ALERT_HOOK_PATH}`,
    bodies,
    stop: () => server.shutdown(),
  };
}

/**
 * With an alert receiver, the spend-control part of the config: the `payments` team (1,000 tokens a month,
 * 600 rpm, `chat-*` aliases) with two config tokens, and the receiver, alerted at 50% of any budget and of
 * every ejection.
 */
function spendConfig(alertUrl: string | undefined): { tokens: string; sections: string } {
  if (alertUrl === undefined) return { tokens: "", sections: "" };
  return {
    tokens: `  - name: payments-api
    environment: production
    sha256: ${hashToken(PAYMENTS_API_TOKEN)}
    models: ["chat-default"]
    team: payments
  - name: payments-batch
    environment: production
    sha256: ${hashToken(PAYMENTS_BATCH_TOKEN)}
    models: ["chat-default"]
    team: payments
`,
    sections: `teams:
  payments:
    description: "Card payments squad"
    budget: { tokens: 1000, period: month }
    limits: { rpm: 600 }
    models: ["chat-*"]
alerts:
  - url: "${alertUrl}"
    secret: ${ALERT_SECRET}
    budget_thresholds: [50]
    ejections: true
    timeout: 2s
    retries: 0
`,
  };
}

/**
 * The config: `chat-default` (builtin echo, priced, with a deny rule), `chat-fallback` (the failing upstream
 * first, ejected after two failures for ten minutes, then the builtin), `chat-broken` (only the failing
 * upstream: errors), `embed-default`; `ci-bot` may use everything, `web-app` only the default aliases at 4 rpm.
 * With `alertUrl`, also the `payments` team, its tokens and the alert receiver (`spendConfig`).
 */
export function consoleConfig(
  failing: FailingUpstream,
  { admin = true, alertUrl }: { admin?: boolean; alertUrl?: string } = {},
): string {
  const admins = admin ? `admin_tokens:\n  - { name: ops-admin, sha256: ${hashToken(ADMIN_TOKEN)} }\n` : "";
  const spend = spendConfig(alertUrl);
  return `
routing: { backoff_base: 10ms, backoff_max: 20ms, eject_after: 2, eject_cooldown: 10m }
providers:
  local: { type: builtin }
  flaky: { type: openai, base_url: "${failing.baseURL}", api_key: "sk-upstream-secret-0123456789" }
models:
  chat-default:
    type: chat
    targets: [ { provider: local, model: echo, price: { input: 1000, output: 2000 } } ]
    content_rules:
      - { name: secrets, pattern: "TOPSECRET", action: deny, message: "Secrets may not be sent." }
      - { name: email, pattern: "[a-z]+@example[.]com", action: redact }
  chat-fallback:
    type: chat
    targets: [ { provider: flaky, model: always-fails, retries: 0 }, { provider: local, model: echo } ]
  chat-broken:
    type: chat
    targets: [ { provider: flaky, model: down, retries: 0 } ]
  embed-default:
    type: embedding
    targets: [ { provider: local, model: hash } ]
tokens:
  - name: ci-bot
    environment: staging
    sha256: ${hashToken(CI_BOT_TOKEN)}
    models: ["*"]
    limits: { rpm: 1000 }
  - name: web-app
    environment: production
    sha256: ${hashToken(WEB_APP_TOKEN)}
    models: ["chat-default", "embed-default"]
    limits: { rpm: 4 }
${spend.tokens}${spend.sections}${admins}`;
}

/** A gateway serving {@linkcode consoleConfig} with its failing upstream (and alert receiver); `stop` ends all. */
export interface ConsoleGateway {
  gw: TestGateway;
  failing: FailingUpstream;
  receiver: AlertReceiver | null;
  stop(): Promise<void>;
}

/**
 * A usage database holding `records` (written before the gateway opens it, as records of days before would
 * be), and the config's `usage:` section for it; "" and nothing written when there are none.
 */
async function usageWith(records: readonly StoredUsageRecord[], dir: string): Promise<string> {
  if (records.length === 0) return "";
  const store = createSqliteStore(`${dir}/usage.sqlite`);
  await store.insert(records);
  await store.close();
  return `usage: { sqlite: "${dir}/usage.sqlite", spill: "${dir}/spill.jsonl", flush_interval: 50ms }\n`;
}

/**
 * Starts the gateway of {@linkcode consoleConfig}; `admin: false` leaves out the admin token, `spend: true`
 * adds the `payments` team and an alert receiver, `records` are in its usage database from the start.
 */
export async function startConsoleGateway(
  options: { admin?: boolean; spend?: boolean; records?: readonly StoredUsageRecord[] } = {},
): Promise<ConsoleGateway> {
  const failing = startFailingUpstream();
  const receiver = options.spend ? startAlertReceiver() : null;
  const dir = await Deno.makeTempDir({ prefix: "console-usage-" });
  let gw: TestGateway;
  try {
    const usage = await usageWith(options.records ?? [], dir);
    gw = await startGateway(
      consoleConfig(failing, { admin: options.admin, alertUrl: receiver?.url }) + usage,
    );
  } catch (err) {
    await failing.stop();
    await receiver?.stop();
    await Deno.remove(dir, { recursive: true });
    throw err;
  }
  return {
    gw,
    failing,
    receiver,
    async stop() {
      await gw.stop();
      await failing.stop();
      await receiver?.stop();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** The status of an SDK call that must fail. */
async function failedStatus(call: Promise<unknown>): Promise<number> {
  try {
    await call;
  } catch (err) {
    if (err instanceof OpenAI.APIError && typeof err.status === "number") return err.status;
    throw err;
  }
  throw new Error("the call was expected to fail");
}

/**
 * Sends the seeded run and answers how many requests it made; checks the gateway answered each as the config
 * says, so a broken seed fails here rather than as a puzzling empty chart later.
 */
export async function seedRequests(gw: TestGateway): Promise<number> {
  const ci = sdk(gw.baseURL, CI_BOT_TOKEN);
  const web = sdk(gw.baseURL, WEB_APP_TOKEN);
  let sent = 0;
  for (let i = 0; i < 5; i++, sent++) {
    const answer = await ask(ci, "chat-default", `hello number ${i}`);
    assert.equal(answer.choices[0].message.content?.includes(`number ${i}`), true);
  }
  const stream = await ci.chat.completions.create({
    model: "chat-default",
    messages: [{ role: "user", content: "a streamed hello" }],
    stream: true,
    stream_options: { include_usage: true },
  });
  for await (const _ of stream) { /* read to the end */ }
  sent++;
  const redacted = await ask(ci, "chat-default", "write to bob@example.com");
  assert.ok(!redacted.choices[0].message.content?.includes("bob@example.com"), "alias.content:email redacts");
  sent++;
  await ci.embeddings.create({ model: "embed-default", input: ["one", "two"] });
  sent++;
  // Two failures on the flaky target eject it; every call still succeeds on the builtin fallback.
  for (let i = 0; i < 3; i++, sent++) await ask(ci, "chat-fallback");
  for (let i = 0; i < 2; i++, sent++) assert.ok((await failedStatus(ask(ci, "chat-broken"))) >= 500);

  await ask(web, "chat-default");
  sent++;
  assert.equal(await failedStatus(ask(web, "chat-default", SECRET_PROMPT)), 400, "alias.content:secrets");
  sent++;
  // A forbidden alias answers like an unknown one (404), so a token cannot discover what exists.
  assert.equal(await failedStatus(ask(web, "chat-fallback")), 404, "an alias web-app may not use");
  sent++;
  // 4 rpm: keep asking until the limit answers (how many of the calls above it counted is not our concern).
  let limited = false;
  for (let i = 0; i < 6 && !limited; i++, sent++) {
    try {
      await ask(web, "chat-default");
    } catch (err) {
      if (!(err instanceof OpenAI.RateLimitError)) throw err;
      limited = true;
    }
  }
  assert.ok(limited, "web-app reached its rpm limit");
  return sent;
}

/** Words in each of the payments team's two requests: the builtin echo counts 300 tokens for each. */
const SPEND_WORDS = 150;

interface AlertsAnswer {
  configured: boolean;
  data: { alert: { type: string }; deliveries: { status: string }[] }[];
}

/**
 * For a gateway started with `spend: true`, after {@linkcode seedRequests}: `payments-api` spends 600 of its
 * team's 1,000 tokens in two requests, which crosses the 50% threshold; then waits (bounded) until the
 * receiver has taken that budget alert and the seeded run's ejection alert, so the console shows both as
 * delivered. Answers how many requests it made.
 */
export async function seedSpend(gw: TestGateway): Promise<number> {
  const payments = sdk(gw.baseURL, PAYMENTS_API_TOKEN);
  const prompt = Array.from({ length: SPEND_WORDS }, (_, i) => `pay${i}`).join(" ");
  for (let i = 0; i < 2; i++) {
    const answer = await ask(payments, "chat-default", prompt);
    assert.equal(answer.usage?.total_tokens, 2 * SPEND_WORDS, "the echo spends the prompt and as much again");
  }
  const deadline = Date.now() + 10_000;
  let last: AlertsAnswer | undefined;
  while (Date.now() < deadline) {
    const response = await fetch(`${gw.url}/admin/alerts`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    last = await response.json() as AlertsAnswer;
    const types = last.data.map((a) => a.alert.type);
    const delivered = last.data.every((a) => a.deliveries.every((d) => d.status === "delivered"));
    if (types.includes("budget") && types.includes("ejection") && delivered) return 2;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the budget and ejection alerts were not delivered; last seen: ${JSON.stringify(last)}`);
}

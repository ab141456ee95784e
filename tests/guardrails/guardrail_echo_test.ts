/**
 * External guardrail services that quote the credential they were sent: their categories (a webhook's list, a
 * moderation answer's category keys, an Azure analysis's `category`, a Bedrock topic's `name`) and a deny's
 * reason are the service's own text. None of it may put a gateway secret into the usage record, `GET
 * /admin/requests`, a log line or a client's error (SECURITY.md, "Secrets"). One raw upstream plays every
 * service and the chat upstream, answering by path, each echoing the credential it was given.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway } from "../helpers/gateway.ts";
import { type RawRequest, type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";
import { usageRows } from "../helpers/usage_rows.ts";

const TOKEN = "gw-guard-echo-0123456789abcdef";
const ADMIN = "gw-guard-echo-admin-0123456789abcdef";
const HOOK_KEY = "whk-Xq7vB2mNp4Lk9TzR8wYc3FhJ";
const MOD_KEY = "sk-mod-Pq8rT3vWx5Yz7Ab9Cd2Ef4Gh";
const AZURE_KEY = "az-Kd83JfPq0WmZx7Lr2Tv9Bn4Y";
const AWS_SECRET = "Ws9xQ2vN7bK4mZ8pL3tR6yH1cF5gJ0dA";
const SECRETS = [HOOK_KEY, MOD_KEY, AZURE_KEY, AWS_SECRET];

const json = (value: unknown): RawStep => ({
  status: 200,
  headers: { "content-type": "application/json" },
  chunks: [JSON.stringify(value)],
});

/** Each service's answer, quoting what it was sent (the Bedrock fake quotes the secret it signs with). */
function answer(req: RawRequest): RawStep {
  const auth = req.headers.get("authorization") ?? "";
  if (req.path.startsWith("/hook-flag")) {
    return json({ action: "flag", categories: [`unauthorized ${auth}`] });
  }
  if (req.path.startsWith("/hook-deny")) {
    return json({
      action: "deny",
      reason: `key ${auth} is not allowed`,
      categories: [auth.slice(7), "x".repeat(90)],
    });
  }
  if (req.path.endsWith("/moderations")) {
    const name = `bad-key ${auth.replace("Bearer ", "")}`;
    return json({
      id: "modr-1",
      model: "omni",
      results: [{ flagged: true, categories: { [name]: true }, category_scores: { [name]: 0.99 } }],
    });
  }
  if (req.path.includes("text:analyze")) {
    const key = req.headers.get("ocp-apim-subscription-key");
    return json({ categoriesAnalysis: [{ category: `Hate ${key}`, severity: 6 }], blocklistsMatch: [] });
  }
  if (req.path.includes("/guardrail/")) {
    return json({
      action: "GUARDRAIL_INTERVENED",
      outputs: [],
      assessments: [{ topicPolicy: { topics: [{ name: AWS_SECRET, type: "DENY", action: "BLOCKED" }] } }],
    });
  }
  return json({
    id: "c",
    object: "chat.completion",
    created: 1,
    model: "m",
    choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  });
}

Deno.test("guardrail echo: a service's categories and reason quoting its credential stay out of records, admin API, logs and errors", async () => {
  const up = startRawUpstream();
  up.stepFor = answer;
  const alias = (name: string, guardrail: string) =>
    `  ${name}: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ], guardrails: [${guardrail}] }`;
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${up.url}/v1", api_key: sk-up-0123456789abcdefXYZ }
guardrails:
  hook-flag: { type: webhook, url: "${up.url}/hook-flag", headers: { authorization: "Bearer ${HOOK_KEY}" } }
  hook-deny: { type: webhook, url: "${up.url}/hook-deny", headers: { authorization: "Bearer ${HOOK_KEY}" } }
  mod-flag: { type: openai_moderation, base_url: "${up.url}/v1", api_key: ${MOD_KEY}, action_on_flag: flag }
  mod-deny: { type: openai_moderation, base_url: "${up.url}/v1", api_key: ${MOD_KEY} }
  azure: { type: azure_content_safety, endpoint: "${up.url}", api_key: ${AZURE_KEY} }
  aws:
    type: bedrock
    guardrail_identifier: gr0echo1
    guardrail_version: "1"
    region: us-east-1
    endpoint: "${up.url}"
    access_key_id: AKIAECHOTEST00000001
    secret_access_key: "${AWS_SECRET}"
models:
${["hook-flag", "hook-deny", "mod-flag", "mod-deny", "azure", "aws"].map((g) => alias(g, g)).join("\n")}
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`);
  try {
    const expected = {
      "hook-flag": 200,
      "hook-deny": 400,
      "mod-flag": 200,
      "mod-deny": 400,
      azure: 400,
      aws: 400,
    };
    const answers: string[] = [];
    for (const [model, status] of Object.entries(expected)) {
      const res = await fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: "hello" }] }),
      });
      const text = await res.text();
      assert.equal(res.status, status, `${model}: ${text}`);
      answers.push(text);
    }
    // Read first: `/admin/requests` stores the records still queued (each queued before its JSON answer was
    // sent) before it reads, so the database holds all six after it, read once.
    const admin =
      await (await fetch(`${gw.url}/admin/requests`, { headers: { authorization: `Bearer ${ADMIN}` } }))
        .text();
    const rows = await usageRows<{ guardrails: string | null }>(gw, 6, { tries: 1 });
    const stored = rows.map((r) => r.guardrails ?? "").join("\n");
    const logs = JSON.stringify(gw.logs);
    for (const [where, text] of Object.entries({ stored, admin, logs, answers: answers.join("\n") })) {
      for (const secret of SECRETS) {
        // Any 8-character run of a key is a leak (upstreams quote keys in part).
        assert.ok(!text.includes(secret.slice(4, 16)), `${where} holds a piece of ${secret.slice(0, 6)}…`);
      }
    }
    // What was named is still recorded, masked: the outcome says the service flagged something.
    assert.match(stored, /"action":"flag","types":\["unauthorized \*\*\*"\]/);
    assert.match(
      stored,
      /"types":\["\(unnamed\)","\*\*\*"\]/,
      "a category that is no name becomes (unnamed)",
    );
    assert.match(admin, /bad-key \*\*\*/);
    assert.match(stored, /"name":"aws","phase":"input","action":"deny","types":\["\*\*\*"\]/);
  } finally {
    await gw.stop();
    await up.stop();
  }
});

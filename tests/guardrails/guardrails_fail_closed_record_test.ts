/**
 * A `fail_closed` guardrail whose service fails refuses the request with 503 `guardrail_unavailable`, and its
 * usage record names it (`rule: guardrail:<name>`, its `error` outcome listed) in the input phase as in the
 * output phase: the request log's and `?guardrail=` search find the refused request by the guardrail.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { inProcessGateway } from "../helpers/in_process.ts";
import { startScriptedChat } from "../helpers/scripted_chat.ts";

const TOKEN = "gw-guardrails-fail-closed-0123456789";

Deno.test("guardrails fail_closed: a refused request's record names the guardrail, in either phase", async () => {
  const up = startScriptedChat();
  const down = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    () => new Response("down", { status: 500 }),
  );
  const url = `http://127.0.0.1:${down.addr.port}/check`;
  const gw = inProcessGateway(`
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-scripted-0123456789 }
guardrails:
  closed-in: { type: webhook, url: "${url}", timeout: 1s, on_failure: fail_closed, phase: input }
  closed-out: { type: webhook, url: "${url}", timeout: 1s, on_failure: fail_closed, phase: output }
models:
  in: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [closed-in] }
  out: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [closed-out] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
  const ask = async (model: string) => {
    const res = await gw.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "hello" }] }),
    });
    const json = await res.json();
    return { status: res.status, code: json.error?.code, record: gw.records.at(-1)! };
  };
  try {
    const input = await ask("in");
    assert.equal(up.seen.length, 0, "the refused request never reached the upstream");
    const output = await ask("out");
    for (const [name, seen] of [["closed-in", input], ["closed-out", output]] as const) {
      assert.equal(seen.status, 503, name);
      assert.equal(seen.code, "guardrail_unavailable", name);
      assert.equal(seen.record.rule, `guardrail:${name}`, name);
      assert.deepEqual(seen.record.guardrails?.map((g) => [g.name, g.action]), [[name, "error"]]);
    }
    // Neither phase's failure is a denial nor a modification: both keep the admission's outcome.
    assert.equal(input.record.outcome, output.record.outcome);
    assert.equal(input.record.outcome, "allow");
  } finally {
    await up.stop();
    await down.shutdown();
  }
});

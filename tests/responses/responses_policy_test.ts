/**
 * Limits, budgets, content rules, the max_tokens ceiling, endpoint scopes and usage records hold for
 * `POST /v1/responses` exactly as for chat completions (issue 12, acceptance 5), end to end over real sockets.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { TestGateway } from "../helpers/gateway.ts";
import { usageRows } from "../helpers/usage_rows.ts";
import { withTestGateway } from "../helpers/with_gateway.ts";

const T = {
  main: "gw-main-token-0123456789abcdef",
  rpm: "gw-rpm-token-0123456789abcdef",
  budget: "gw-budget-token-0123456789abcdef",
  chatOnly: "gw-chatonly-token-0123456789abcdef",
  ceiling: "gw-ceiling-token-0123456789abcdef",
};

function config(): string {
  const token = (name: string, secret: string, extra = "") =>
    `  - { name: ${name}, environment: test, sha256: ${hashToken(secret)}, models: ["*"]${extra} }`;
  return `
providers:
  local: { type: builtin }
models:
  chat-echo:
    type: chat
    targets: [ { provider: local, model: echo } ]
    content_rules:
      - { name: secret, pattern: "TOPSECRET", action: deny, message: "Secrets may not be sent." }
      - { name: ssn, pattern: "\\\\b\\\\d{3}-\\\\d{2}-\\\\d{4}\\\\b", action: redact }
  chat-open:
    type: chat
    targets: [ { provider: local, model: echo } ]
tokens:
${token("main", T.main)}
${token("rpm-10", T.rpm, ", limits: { rpm: 10 }")}
${token("budget-60", T.budget, ", budget: { tokens: 60, period: day }")}
${token("chat-only", T.chatOnly, ", endpoints: [chat]")}
${token("ceiling-20", T.ceiling, ", max_tokens: 20")}
`;
}

function withGateway(fn: (gw: TestGateway) => Promise<void>) {
  return withTestGateway(() => ({ fakes: undefined, config: config() }), fn);
}

let nextId = 0;
/** Sends a Responses request with a known request id; reads the whole body. */
async function responses(gw: TestGateway, token: string, body: Record<string, unknown>, id?: string) {
  id ??= `resp-test-${++nextId}`;
  const response = await fetch(`${gw.baseURL}/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-request-id": id },
    body: JSON.stringify({ model: "chat-echo", input: "hi", ...body }),
  });
  const text = await response.text();
  return { id, status: response.status, headers: response.headers, text };
}

/** The final Response of a non-streamed answer, or of a stream's last event. */
function finalResponse(text: string): Record<string, unknown> {
  if (!text.startsWith("event:")) return JSON.parse(text);
  const frames = text.trim().split("\n\n");
  const last = JSON.parse(frames.at(-1)!.split("\n")[1].replace(/^data: /, ""));
  return last.response;
}

interface Row {
  request_id: string;
  endpoint: string;
  stream: number;
  status: number;
  outcome: string;
  rule: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  error_code: string | null;
}

Deno.test("responses policy: an RPM limit of N lets exactly N of 3N concurrent requests through, streams included", async () => {
  await withGateway(async (gw) => {
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => responses(gw, T.rpm, { stream: i % 2 === 0 })),
    );
    const ok = results.filter((r) => r.status === 200);
    const denied = results.filter((r) => r.status === 429);
    assert.equal(ok.length, 10);
    assert.equal(denied.length, 20);
    for (const r of denied) {
      const body = JSON.parse(r.text);
      assert.equal(body.error.code, "rate_limit_exceeded");
      assert.equal(body.error.type, "requests");
      assert.ok(Number(r.headers.get("retry-after")) >= 1);
      assert.equal(r.headers.get("x-ratelimit-remaining-requests"), "0");
    }
    for (const r of ok) assert.equal(finalResponse(r.text).status, "completed");
    const remaining = ok.map((r) => Number(r.headers.get("x-ratelimit-remaining-requests"))).sort((a, b) =>
      a - b
    );
    assert.deepEqual(remaining, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});

Deno.test("responses policy: a token budget admits until used up, counting streams, then 429 insufficient_quota", async () => {
  await withGateway(async (gw) => {
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await responses(gw, T.budget, { input: "one two three four five", stream: i % 2 === 1 });
      statuses.push(r.status);
      if (r.status === 200) {
        const usage = finalResponse(r.text).usage as { total_tokens: number };
        assert.equal(usage.total_tokens, 10, "echo: 5 input + 5 output tokens");
      } else {
        const body = JSON.parse(r.text);
        assert.equal(body.error.type, "insufficient_quota");
        assert.equal(body.error.code, "insufficient_quota");
      }
    }
    // Admitted while used < 60: exactly six requests of ten tokens each, streamed or not.
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 429, 429, 429, 429]);
  });
});

Deno.test("responses policy: content rules deny and redact in string input, items and instructions", async () => {
  await withGateway(async (gw) => {
    const denials: Record<string, unknown>[] = [
      { input: "TOPSECRET plans" },
      { input: [{ role: "user", content: [{ type: "input_text", text: "the TOPSECRET plans" }] }] },
      { input: [{ type: "message", role: "user", content: "TOPSECRET" }] },
      { input: "hi", instructions: "Mention TOPSECRET." },
      { input: "TOPSECRET plans", stream: true },
    ];
    for (const body of denials) {
      const r = await responses(gw, T.main, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      const { error } = JSON.parse(r.text);
      assert.equal(error.code, "content_policy_violation");
      assert.equal(error.type, "invalid_request_error");
      assert.equal(error.message, "Secrets may not be sent.");
      assert.ok(!r.text.includes("TOPSECRET"), "the matched text is never echoed");
    }

    const plain = await responses(gw, T.main, { input: "my ssn is 123-45-6789" });
    assert.equal(plain.status, 200);
    assert.equal(outputText(plain.text), "my ssn is [REDACTED]");
    const items = await responses(gw, T.main, {
      input: [
        { role: "user", content: "first 111-22-3333" },
        { role: "user", content: [{ type: "input_text", text: "ssn 123-45-6789 ok" }] },
      ],
    });
    assert.equal(outputText(items.text), "ssn [REDACTED] ok");
    const streamed = await responses(gw, T.main, { input: "my ssn is 123-45-6789", stream: true });
    assert.equal(outputText(streamed.text), "my ssn is [REDACTED]");
    assert.ok(!streamed.text.includes("123-45-6789"));

    // Instructions are redacted too: echo answers with the last message, so look at the usage record instead
    // of the answer — the request is recorded as modified by the rule.
    const instructed = await responses(gw, T.main, { input: "hi", instructions: "ssn 123-45-6789" });
    assert.equal(instructed.status, 200);

    const rows = await usageRows<Row>(gw, denials.length + 4);
    const byId = new Map(rows.map((r) => [r.request_id, r]));
    for (const id of [plain.id, items.id, streamed.id, instructed.id]) {
      assert.equal(byId.get(id)!.outcome, "modify", id);
      assert.equal(byId.get(id)!.rule, "alias.content:ssn", id);
    }
  });
});

Deno.test("responses policy: a content rule's denial names the client's own param, not the chat form's", async () => {
  await withGateway(async (gw) => {
    const cases: [Record<string, unknown>, string][] = [
      [{ input: "TOPSECRET plans" }, "input"],
      [{ input: "hi", instructions: "Mention TOPSECRET." }, "instructions"],
      [{ input: "TOPSECRET plans", instructions: "Be brief.", stream: true }, "input"],
      [
        { input: [{ role: "user", content: "hi" }, { role: "user", content: "TOPSECRET" }] },
        "input[1].content",
      ],
      [
        {
          instructions: "Be brief.",
          input: [{
            role: "user",
            content: [{ type: "input_text", text: "ok" }, {
              type: "input_text",
              text: "the TOPSECRET plans",
            }],
          }],
        },
        "input[0].content[1].text",
      ],
      [
        {
          input: [
            { role: "user", content: "Look it up." },
            { type: "function_call", call_id: "c1", name: "lookup", arguments: "{}" },
            { type: "function_call_output", call_id: "c1", output: "TOPSECRET" },
          ],
        },
        "input[2].output",
      ],
      [
        {
          input: [
            { role: "developer", content: [{ type: "input_text", text: "TOPSECRET" }] },
            { role: "user", content: "hi" },
          ],
        },
        "input[0].content",
      ],
    ];
    // Text the client did not send in this request: an earlier conversation, a referenced item (stored by an
    // alias without the rule).
    const earlier = JSON.parse(
      (await responses(gw, T.main, { model: "chat-open", input: "TOPSECRET" })).text,
    );
    const items = await fetch(`${gw.baseURL}/responses/${earlier.id}/input_items`, {
      headers: { authorization: `Bearer ${T.main}` },
    }).then((r) => r.json()) as { data: { id: string }[] };
    cases.push(
      [{ input: "hi", previous_response_id: earlier.id }, "previous_response_id"],
      [
        { input: [{ role: "user", content: "hi" }, { type: "item_reference", id: items.data[0].id }] },
        "input[1]",
      ],
    );
    for (const [body, param] of cases) {
      const r = await responses(gw, T.main, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      const { error } = JSON.parse(r.text);
      assert.deepEqual([error.code, error.param], ["content_policy_violation", param], JSON.stringify(body));
    }
  });
});

/** The text of a Response's message output, from a JSON body or a stream's final event. */
function outputText(text: string): string {
  const response = finalResponse(text) as { output: { type: string; content?: { text?: string }[] }[] };
  return response.output.filter((i) => i.type === "message").flatMap((i) => i.content ?? [])
    .map((p) => p.text ?? "").join("");
}

Deno.test("responses policy: a token's max_tokens ceiling lowers max_output_tokens (and sets it when absent)", async () => {
  // The builtin echo answers the input's words, one token each: 26 words, cut at the ceiling's 20.
  const words = "abcdefghijklmnopqrstuvwxyz".split("");
  const input = words.join(" ");
  await withGateway(async (gw) => {
    for (const body of [{ max_output_tokens: 64 }, {}, { stream: true }]) {
      const r = await responses(gw, T.ceiling, { input, ...body });
      assert.equal(r.status, 200, JSON.stringify(body));
      const response = finalResponse(r.text) as Record<string, unknown>;
      assert.equal(response.status, "incomplete", JSON.stringify(body));
      assert.deepEqual(response.incomplete_details, { reason: "max_output_tokens" });
      assert.equal((response.usage as { output_tokens: number }).output_tokens, 20);
      assert.equal(response.max_output_tokens, 20, "the Response echoes the limit that applied");
      assert.equal(outputText(r.text), words.slice(0, 20).join(" "));
    }
    // Under the ceiling (and at the spec's minimum of 16): left alone.
    const under = await responses(gw, T.ceiling, { input, max_output_tokens: 16 });
    assert.equal(outputText(under.text), words.slice(0, 16).join(" "));

    const rows = await usageRows<Row>(gw, 4);
    const capped = rows.filter((r) => r.rule === "token.max_tokens");
    assert.equal(capped.length, 3);
    for (const row of capped) {
      assert.equal(row.outcome, "modify");
      assert.equal(row.completion_tokens, 20);
    }
  });
});

Deno.test("responses policy: a token scoped to other endpoints gets 403 endpoint_not_allowed", async () => {
  await withGateway(async (gw) => {
    for (const stream of [false, true]) {
      const r = await responses(gw, T.chatOnly, { stream });
      assert.equal(r.status, 403);
      const { error } = JSON.parse(r.text);
      assert.equal(error.code, "endpoint_not_allowed");
      assert.equal(typeof error.message, "string");
      assert.ok("param" in error && "type" in error);
    }
    const chat = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${T.chatOnly}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content: "hi" }] }),
    });
    assert.equal(chat.status, 200, "the same token may still chat");
    await chat.body?.cancel();
  });
});

Deno.test("responses policy: one usage record per request, with endpoint responses and its policy outcome", async () => {
  await withGateway(async (gw) => {
    const expected = new Map<string, Partial<Row>>();
    const run = async (token: string, body: Record<string, unknown>, want: Partial<Row>) => {
      const r = await responses(gw, token, body);
      expected.set(r.id, { endpoint: "responses", ...want, status: want.status ?? r.status });
      return r;
    };
    await run(T.main, {}, {
      outcome: "allow",
      status: 200,
      stream: 0,
      prompt_tokens: 1,
      completion_tokens: 1,
    });
    await run(T.main, { stream: true }, { outcome: "allow", status: 200, stream: 1 });
    await run(T.main, { input: "ssn 123-45-6789" }, { outcome: "modify", rule: "alias.content:ssn" });
    await run(T.main, { input: "TOPSECRET" }, {
      outcome: "deny",
      rule: "alias.content:secret",
      status: 400,
      error_code: "content_policy_violation",
    });
    await run(T.ceiling, { input: "a b c d e f" }, { outcome: "modify", rule: "token.max_tokens" });
    await run(T.chatOnly, {}, { outcome: "deny", rule: "token.endpoints", status: 403 });
    for (let i = 0; i < 12; i++) {
      const r = await responses(gw, T.rpm, { stream: i % 2 === 0 });
      expected.set(
        r.id,
        r.status === 200
          ? { endpoint: "responses", outcome: "allow" }
          : { endpoint: "responses", outcome: "deny", rule: "token.rpm", status: 429 },
      );
    }
    await run(T.main, { model: "no-such-alias" }, { status: 404, error_code: "model_not_found" });
    await run(T.main, { store: "yes" }, { status: 400 });

    const rows = await usageRows<Row>(gw, expected.size);
    await new Promise((r) => setTimeout(r, 100)); // anything extra would have arrived by now
    const all = await usageRows<Row>(gw, expected.size);
    assert.equal(all.length, rows.length);
    assert.equal(rows.length, expected.size, "exactly one record per request");
    const byId = new Map(rows.map((r) => [r.request_id, r]));
    assert.equal(byId.size, rows.length, "no request recorded twice");
    for (const [id, want] of expected) {
      const row = byId.get(id);
      assert.ok(row, `record for ${id}`);
      for (const [key, value] of Object.entries(want)) {
        assert.equal(row[key as keyof Row], value, `${id}.${key}`);
      }
    }
  });
});

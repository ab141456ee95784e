/**
 * The texts a native target reads in its API's own tool items and blocks, which the chat form has no place for:
 * a Responses request's built-in tools' items (a local shell call's output, a shell call's stdout and stderr, an
 * apply_patch call's output, an MCP call's output and error, an MCP tool list's error, an MCP approval's reason)
 * and a Messages request's search results (their title and text, in a turn or in a tool result), a document's
 * title and context, an MCP connector's tool result. Each is judged where a chat text is: an alias's deny rule
 * refuses the request naming the text's param, an input guardrail that denies refuses it, and one that rewrites
 * the text has the native target sent it rewritten (passed through); the upstream never gets the word. A fake
 * webhook guardrail denies `DENYMARK` and replaces `MASKMARK`; a content rule denies `RULEMARK`.
 */
import assert from "node:assert/strict";
import {
  DENY_MARK as DENY,
  type FakeWebhook,
  markerVerdict,
  MASK_MARK as MASK,
  MASKED_MARK as MASKED,
  startFakeWebhook,
} from "../helpers/fake_guardrails.ts";
import {
  type FakeNativeUpstream,
  NATIVE_KEY,
  startFakeNativeResponses,
} from "../helpers/fake_openai_responses.ts";
import { FAKE_ANTHROPIC_KEY, type FakeAnthropic, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { startFakes } from "../helpers/fakes.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import type { InProcessGateway } from "../helpers/in_process.ts";
import { withInProcessGateway } from "../helpers/with_gateway.ts";
import { decodeUtf8Base64 } from "../../lib/encoding/utf8_base64.ts";

const RULE = "RULEMARK";

interface Fakes {
  hook: FakeWebhook;
  responses: FakeNativeUpstream;
  claude: FakeAnthropic;
}

/** An alias under the webhook guardrail and one under a deny rule, on each native target. */
function setup() {
  const fakes = startFakes({
    hook: startFakeWebhook,
    responses: startFakeNativeResponses,
    claude: startFakeAnthropic,
  });
  fakes.hook.answer = markerVerdict;
  return {
    fakes,
    config: `
providers:
  native: { type: openai, base_url: "${fakes.responses.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
  claude: { type: anthropic, base_url: "${fakes.claude.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
guardrails:
  hook: { type: webhook, url: "${fakes.hook.url}/check" }
models:
  chat-guarded-resp: { type: chat, targets: [{ provider: native, model: resp-ok }], guardrails: [hook] }
  chat-guarded-claude: { type: chat, targets: [{ provider: claude, model: claude-ok }], guardrails: [hook] }
  chat-ruled-resp:
    type: chat
    targets: [{ provider: native, model: resp-ok }]
    content_rules: [{ name: marker, pattern: ${RULE}, action: deny }]
  chat-ruled-claude:
    type: chat
    targets: [{ provider: claude, model: claude-ok }]
    content_rules: [{ name: marker, pattern: ${RULE}, action: deny }]
${TEST_TOKENS_YAML}`,
  };
}

/** One text position: the request's turns holding `word` there, and the param a denial names it by. */
interface Case {
  param: string;
  turns(word: string): unknown[];
}

/** One client API: how it posts turns to an alias, and what its upstream was sent (plain-text data decoded). */
interface Api {
  name: string;
  guarded: string;
  ruled: string;
  post(gw: InProcessGateway, model: string, turns: unknown[]): Promise<Response>;
  sent(fakes: Fakes): { path: string; body: string }[];
  cases: Record<string, Case>;
}

function decoded(body: unknown): string {
  return JSON.stringify(
    body,
    (key, value) => typeof value === "string" && key === "data" ? decodeUtf8Base64(value) ?? value : value,
  );
}

const mcpCall = (fields: Record<string, unknown>) => ({
  type: "mcp_call",
  id: "mcp_1",
  server_label: "kb",
  name: "lookup",
  arguments: "{}",
  ...fields,
});

const RESPONSES: Api = {
  name: "responses",
  guarded: "chat-guarded-resp",
  ruled: "chat-ruled-resp",
  post: (gw, model, input) =>
    gw.fetch("/v1/responses", {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model, input }),
    }),
  sent: (fakes) => fakes.responses.requests.map((r) => ({ path: r.path, body: decoded(r.body) })),
  cases: {
    local_shell_output: {
      param: "input[1].output",
      turns: (word) => [
        {
          type: "local_shell_call",
          id: "lsh_1",
          call_id: "c1",
          action: { type: "exec", command: ["ls"], env: {} },
        },
        { type: "local_shell_call_output", id: "c1", output: `{"output":"${word}"}` },
      ],
    },
    shell_stdout: {
      param: "input[0].output[0].stdout",
      turns: (word) => [{
        type: "shell_call_output",
        call_id: "c1",
        output: [{ stdout: `out ${word}`, stderr: "", outcome: { type: "exit", exit_code: 0 } }],
      }],
    },
    shell_stderr: {
      param: "input[0].output[1].stderr",
      turns: (word) => [{
        type: "shell_call_output",
        call_id: "c1",
        output: [
          { stdout: "one", stderr: "", outcome: { type: "exit", exit_code: 0 } },
          { stdout: "", stderr: `err ${word}`, outcome: { type: "exit", exit_code: 1 } },
        ],
      }],
    },
    apply_patch_output: {
      param: "input[0].output",
      turns: (
        word,
      ) => [{ type: "apply_patch_call_output", call_id: "c1", status: "failed", output: `log ${word}` }],
    },
    mcp_output: { param: "input[0].output", turns: (word) => [mcpCall({ output: `result ${word}` })] },
    mcp_error_text: { param: "input[0].error", turns: (word) => [mcpCall({ error: `failed ${word}` })] },
    mcp_error_object: {
      param: "input[0].error.message",
      turns: (word) => [mcpCall({ error: { type: "http_error", code: 502, message: `failed ${word}` } })],
    },
    mcp_list_tools_error: {
      param: "input[0].error",
      turns: (
        word,
      ) => [{ type: "mcp_list_tools", id: "mcpl_1", server_label: "kb", tools: [], error: `no ${word}` }],
    },
    mcp_approval_reason: {
      param: "input[0].reason",
      turns: (word) => [{
        type: "mcp_approval_response",
        approval_request_id: "mcpr_1",
        approve: false,
        reason: `because ${word}`,
      }],
    },
  },
};

const searchResult = (title: string, text: string) => ({
  type: "search_result",
  source: "https://kb.example/1",
  title,
  content: [{ type: "text", text }],
});
const LOOKUP = { name: "lookup", input_schema: { type: "object", properties: {} } };
const toolTurns = (result: unknown[]) => [
  { role: "user", content: "look it up" },
  { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "lookup", input: {} }] },
  { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: result }] },
];

const MESSAGES: Api = {
  name: "messages",
  guarded: "chat-guarded-claude",
  ruled: "chat-ruled-claude",
  post: (gw, model, messages) =>
    gw.fetch("/v1/messages", {
      method: "POST",
      headers: {
        "x-api-key": TEST_TOKEN,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
      },
      body: JSON.stringify({ model, max_tokens: 50, tools: [LOOKUP], messages }),
    }),
  sent: (fakes) => fakes.claude.requests.map((r) => ({ path: r.path, body: decoded(r.body) })),
  cases: {
    search_result_title: {
      param: "messages.0.content.0.title",
      turns: (
        word,
      ) => [{ role: "user", content: [searchResult(`about ${word}`, "fine"), { type: "text", text: "hi" }] }],
    },
    search_result_text: {
      param: "messages.0.content.0.content.0.text",
      turns: (
        word,
      ) => [{ role: "user", content: [searchResult("fine", `says ${word}`), { type: "text", text: "hi" }] }],
    },
    tool_result_search_result: {
      param: "messages.2.content.0.content.0.content.0.text",
      turns: (word) => toolTurns([searchResult("fine", `says ${word}`)]),
    },
    document_title: {
      param: "messages.0.content.0.title",
      turns: (word) => [{
        role: "user",
        content: [
          {
            type: "document",
            source: { type: "text", media_type: "text/plain", data: "fine" },
            title: `of ${word}`,
          },
          { type: "text", text: "hi" },
        ],
      }],
    },
    document_context: {
      param: "messages.0.content.0.context",
      turns: (word) => [{
        role: "user",
        content: [
          {
            type: "document",
            source: { type: "content", content: [{ type: "text", text: "fine" }] },
            title: "fine",
            context: `about ${word}`,
          },
          { type: "text", text: "hi" },
        ],
      }],
    },
    mcp_tool_result: {
      param: "messages.1.content.1.content.0.text",
      turns: (word) => [
        { role: "user", content: "look it up" },
        {
          role: "assistant",
          content: [
            { type: "mcp_tool_use", id: "m1", name: "lookup", server_name: "kb", input: {} },
            {
              type: "mcp_tool_result",
              tool_use_id: "m1",
              is_error: false,
              content: [{ type: "text", text: `${word}` }],
            },
          ],
        },
        { role: "user", content: "go on" },
      ],
    },
  },
};

const APIS = [RESPONSES, MESSAGES];

function withNative(fn: (gw: InProcessGateway, fakes: Fakes) => Promise<void>): Promise<void> {
  return withInProcessGateway(setup, fn);
}

/**
 * What `observe` saw of each case of each API, by `<api> <case>`, beside what it should have seen: one comparison
 * for all, so a failure lists every text position that let the word through.
 */
async function eachCase<T>(
  observe: (api: Api, c: Case) => Promise<T>,
  expect: (api: Api, c: Case) => T,
): Promise<void> {
  const got: Record<string, T> = {};
  const want: Record<string, T> = {};
  for (const api of APIS) {
    for (const [name, c] of Object.entries(api.cases)) {
      got[`${api.name} ${name}`] = await observe(api, c);
      want[`${api.name} ${name}`] = expect(api, c);
    }
  }
  assert.deepEqual(got, want);
}

Deno.test("native tool texts: an alias's deny rule refuses a word in each, naming its param; the upstream is sent nothing", async () => {
  await withNative((gw, fakes) =>
    eachCase(async (api, { turns }) => {
      const before = api.sent(fakes).length;
      const res = await api.post(gw, api.ruled, turns(RULE));
      const { error } = await res.json();
      const record = gw.records.at(-1)!;
      return {
        status: res.status,
        // OpenAI's error shape names the text's param; Anthropic's has no field for it.
        param: error?.param,
        message: /rejected by the content policy \(rule marker\)/.test(error?.message ?? ""),
        sent: api.sent(fakes).length - before,
        record: [record.outcome, record.rule],
      };
    }, (api, { param }) => ({
      status: 400,
      param: api.name === "responses" ? param : undefined,
      message: true,
      sent: 0,
      record: ["deny", "alias.content:marker"],
    }))
  );
});

Deno.test("native tool texts: an input guardrail's denial of a word in each refuses the request before any upstream call", async () => {
  await withNative((gw, fakes) =>
    eachCase(async (api, { turns }) => {
      const before = api.sent(fakes).length;
      const res = await api.post(gw, api.guarded, turns(DENY));
      const text = await res.text();
      const record = gw.records.at(-1)!;
      return {
        status: res.status,
        message: /rejected by guardrail hook/.test(text),
        sent: api.sent(fakes).length - before,
        record: [record.outcome, record.rule],
      };
    }, () => ({ status: 400, message: true, sent: 0, record: ["deny", "guardrail:hook"] }))
  );
});

Deno.test("native tool texts: a word a guardrail rewrites in each reaches the native target rewritten, passed through", async () => {
  await withNative((gw, fakes) =>
    eachCase(async (api, { turns }) => {
      const before = api.sent(fakes).length;
      const res = await api.post(gw, api.guarded, turns(MASK));
      await res.body?.cancel();
      const sent = api.sent(fakes).slice(before);
      const record = gw.records.at(-1)!;
      return {
        status: res.status,
        sent: sent.length,
        word: sent.some((s) => s.body.includes(MASK)),
        rewritten: sent.some((s) => s.body.includes(MASKED)),
        // Passed through: a native target served over the chat form would be told what that form lost.
        dropped: res.headers.get("x-gateway-dropped"),
        record: [record.outcome, record.rule],
      };
    }, () => ({
      status: 200,
      sent: 1,
      word: false,
      rewritten: true,
      dropped: null,
      record: ["modify", "guardrail:hook"],
    }))
  );
});

Deno.test("native tool texts: a document's context the chat form joins into a text, rewritten there, goes over the chat form", async () => {
  await withNative(async (gw, fakes) => {
    const before = fakes.claude.requests.length;
    const res = await MESSAGES.post(gw, MESSAGES.guarded, [{
      role: "user",
      content: [
        {
          type: "document",
          source: { type: "text", media_type: "text/plain", data: "fine" },
          title: "t.txt",
          context: `about ${MASK}`,
        },
        { type: "text", text: "hi" },
      ],
    }]);
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    const sent = MESSAGES.sent(fakes).slice(before);
    assert.equal(sent.length, 1);
    assert.ok(!sent[0].body.includes(MASK), sent[0].body);
    // The chat form's text for the context ("Context of the document that follows (t.txt): about …") cannot be
    // placed back into the document's `context`: the request is served over the chat form, which holds it masked.
    assert.match(sent[0].body, /Context of the document that follows \(t\.txt\): about \[GONE\]/);
    assert.equal(gw.records.at(-1)!.outcome, "modify");
  });
});

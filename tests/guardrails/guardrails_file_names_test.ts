/**
 * A file's name is a text the model reads (OpenAI passes a file's `filename` to it, Anthropic shows a document's
 * `title`), so the deny rules and input guardrails read it as they read any other: a chat completions `file`
 * part's `file.filename`, a Responses `input_file`'s `filename`, a Messages `document`'s `title`, whether the
 * request is passed through to a native target or served over the chat form (where the title is the chat file's
 * `filename`). A deny rule refuses the request naming the name's param (in OpenAI's shape; Anthropic's has no
 * field for it) and no upstream is sent anything; a redact rule and a PII mask guardrail change the name in what
 * the upstream is sent. A name the gateway itself writes where the client sent none (a Messages document without
 * a title is a chat file named `document`, a Gemini file one named `file`) is no text of the client's, and no
 * rule matching it refuses the request.
 */
import assert from "node:assert/strict";
import {
  type FakeNativeUpstream,
  NATIVE_KEY,
  startFakeNativeResponses,
} from "../helpers/fake_openai_responses.ts";
import { FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { FAKE_ANTHROPIC_KEY, type FakeAnthropic, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { startFakes } from "../helpers/fakes.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import type { InProcessGateway } from "../helpers/in_process.ts";
import { withInProcessGateway } from "../helpers/with_gateway.ts";

const RULE = "RULEMARK";
const SCRUB = "SCRUBMARK";
const EMAIL = "john.smith@example.com";
/** A PDF's first bytes, base64: a file no rule reads the content of, so only its name can match. */
const PDF = "JVBERi0xLjQK";

interface Fakes {
  chat: FakeUpstream;
  responses: FakeNativeUpstream;
  claude: FakeAnthropic;
}

/**
 * Per target: an alias under a deny rule, a redact rule and the PII masker of e-mail addresses (`<target>`), and
 * one under a deny rule matching the names the gateway invents (`<target>-names`).
 */
function setup() {
  const fakes = startFakes({
    chat: startFakeOpenAI,
    responses: startFakeNativeResponses,
    claude: startFakeAnthropic,
  });
  const rules = `[{ name: marker, pattern: ${RULE}, action: deny }, ` +
    `{ name: scrub, pattern: ${SCRUB}, action: redact, replacement: "[X]" }]`;
  const names = `[{ name: invented, pattern: "document|file", action: deny }]`;
  const alias = (name: string, provider: string, model: string) => `
  ${name}: { type: chat, targets: [{ provider: ${provider}, model: ${model} }], content_rules: ${rules}, guardrails: [contacts] }
  ${name}-names: { type: chat, targets: [{ provider: ${provider}, model: ${model} }], content_rules: ${names} }`;
  return {
    fakes,
    config: `
providers:
  oa: { type: openai, base_url: "${fakes.chat.baseURL}", api_key: "${FAKE_KEY}" }
  native: { type: openai, base_url: "${fakes.responses.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
  claude: { type: anthropic, base_url: "${fakes.claude.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
guardrails:
  contacts: { type: pii, entities: [EMAIL], action: mask }
models:${alias("chat-files-oa", "oa", "gpt-ok")}${alias("chat-files-resp", "native", "resp-ok")}${
      alias("chat-files-claude", "claude", "claude-ok")
    }
${TEST_TOKENS_YAML}`,
  };
}

/** One client API on one target: how it posts a file named `name` (none when undefined), and what was sent. */
interface Path {
  name: string;
  alias: string;
  /** The param a denial names (OpenAI's error shape); undefined where the API's shape has no field for it. */
  param?: string;
  post(gw: InProcessGateway, alias: string, name?: string): Promise<Response>;
  sent(fakes: Fakes): unknown[];
}

const json = (gw: InProcessGateway, path: string, headers: Record<string, string>, body: unknown) =>
  gw.fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

const named = (key: string, name?: string) => name === undefined ? {} : { [key]: name };

function chatCompletions(alias: string, sent: (fakes: Fakes) => unknown[]): Omit<Path, "name"> {
  return {
    alias,
    param: "messages[0].content[1].file.filename",
    post: (gw, model, name) =>
      json(gw, "/v1/chat/completions", { authorization: `Bearer ${TEST_TOKEN}` }, {
        model,
        messages: [{
          role: "user",
          content: [
            { type: "text", text: "read it" },
            {
              type: "file",
              file: { ...named("filename", name), file_data: `data:application/pdf;base64,${PDF}` },
            },
          ],
        }],
      }),
    sent,
  };
}

function messages(alias: string, sent: (fakes: Fakes) => unknown[]): Omit<Path, "name"> {
  return {
    alias,
    post: (gw, model, name) =>
      json(gw, "/v1/messages", { "x-api-key": TEST_TOKEN, "anthropic-version": "2023-06-01" }, {
        model,
        max_tokens: 50,
        messages: [{
          role: "user",
          content: [
            {
              type: "document",
              source: { type: "base64", media_type: "application/pdf", data: PDF },
              ...named("title", name),
            },
            { type: "text", text: "read it" },
          ],
        }],
      }),
    sent,
  };
}

const toChat = (fakes: Fakes) => fakes.chat.requests.map((r) => r.body);
const toClaude = (fakes: Fakes) => fakes.claude.requests.map((r) => r.body);

/** The paths a client can name a file on. */
const NAMED: Path[] = [
  { name: "chat completions → OpenAI", ...chatCompletions("chat-files-oa", toChat) },
  {
    name: "chat completions → Claude (translated: the title)",
    ...chatCompletions("chat-files-claude", toClaude),
  },
  {
    name: "responses → native",
    alias: "chat-files-resp",
    param: "input[0].content[1].filename",
    post: (gw, model, name) =>
      json(gw, "/v1/responses", { authorization: `Bearer ${TEST_TOKEN}` }, {
        model,
        input: [{
          role: "user",
          content: [
            { type: "input_text", text: "read it" },
            {
              type: "input_file",
              ...named("filename", name),
              file_data: `data:application/pdf;base64,${PDF}`,
            },
          ],
        }],
      }),
    sent: (fakes) => fakes.responses.requests.map((r) => r.body),
  },
  { name: "messages → Claude (native)", ...messages("chat-files-claude", toClaude) },
  { name: "messages → OpenAI (translated: the filename)", ...messages("chat-files-oa", toChat) },
];

/** The paths where the gateway names a file the client did not: Messages' untitled document, Gemini's file. */
const UNNAMED: Path[] = [
  ...NAMED.filter((p) => p.name.startsWith("messages")),
  {
    name: "gemini → OpenAI (translated)",
    alias: "chat-files-oa",
    post: (gw, model) =>
      json(gw, `/v1beta/models/${model}:generateContent`, { "x-goog-api-key": TEST_TOKEN }, {
        contents: [{
          role: "user",
          parts: [{ text: "read it" }, { inlineData: { mimeType: "application/pdf", data: PDF } }],
        }],
      }),
    sent: toChat,
  },
];

function withFiles(fn: (gw: InProcessGateway, fakes: Fakes) => Promise<void>): Promise<void> {
  return withInProcessGateway(setup, fn);
}

/** What `observe` saw on each path beside what it should have: one comparison, so a failure lists every path. */
async function eachPath<T>(
  paths: readonly Path[],
  observe: (path: Path) => Promise<T>,
  expect: (path: Path) => T,
): Promise<void> {
  const got: Record<string, T> = {};
  const want: Record<string, T> = {};
  for (const path of paths) {
    got[path.name] = await observe(path);
    want[path.name] = expect(path);
  }
  assert.deepEqual(got, want);
}

Deno.test("file names: a deny rule matching a file's name refuses the request, naming it; no upstream is sent anything", async () => {
  await withFiles((gw, fakes) =>
    eachPath(NAMED, async (path) => {
      const before = path.sent(fakes).length;
      const res = await path.post(gw, path.alias, `${RULE} plans.pdf`);
      const { error } = await res.json();
      const record = gw.records.at(-1)!;
      return {
        status: res.status,
        param: error?.param,
        message: /rejected by the content policy \(rule marker\)/.test(error?.message ?? ""),
        sent: path.sent(fakes).length - before,
        record: [record.outcome, record.rule],
      };
    }, (path) => ({
      status: 400,
      param: path.param,
      message: true,
      sent: 0,
      record: ["deny", "alias.content:marker"],
    }))
  );
});

Deno.test("file names: a redact rule and a PII mask change a file's name in what the upstream is sent", async () => {
  await withFiles((gw, fakes) =>
    eachPath<unknown>(NAMED, async (path) => {
      const before = path.sent(fakes).length;
      const res = await path.post(gw, path.alias, `${SCRUB} ${EMAIL} salary.pdf`);
      const answer = await res.text();
      const sent = path.sent(fakes).slice(before).map((body) => JSON.stringify(body));
      const record = gw.records.at(-1)!;
      return {
        status: res.status === 200 ? 200 : `${res.status} ${answer}`,
        sent: sent.length,
        clientWords: sent.some((body) => body.includes(EMAIL) || body.includes(SCRUB)),
        masked: sent.some((body) => body.includes("[X] <EMAIL_1> salary.pdf")),
        // A native target is passed the client's body through, the name changed in place: nothing is dropped.
        dropped: res.headers.get("x-gateway-dropped"),
        outcome: record.outcome,
      };
    }, () => ({ status: 200, sent: 1, clientWords: false, masked: true, dropped: null, outcome: "modify" }))
  );
});

Deno.test("file names: a file the client did not name is not refused by a rule matching the name the gateway gives it", async () => {
  await withFiles((gw, fakes) =>
    eachPath<unknown>(UNNAMED, async (path) => {
      const before = path.sent(fakes).length;
      const res = await path.post(gw, `${path.alias}-names`);
      const answer = await res.text();
      return {
        status: res.status === 200 ? 200 : `${res.status} ${answer}`,
        sent: path.sent(fakes).length - before,
        outcome: gw.records.at(-1)!.outcome,
      };
    }, () => ({ status: 200, sent: 1, outcome: "allow" }))
  );
});

Deno.test("file names: a masked title of a document with a context goes over the chat form to Claude, masked in both", async () => {
  await withFiles(async (gw, fakes) => {
    const before = fakes.claude.requests.length;
    const res = await json(
      gw,
      "/v1/messages",
      { "x-api-key": TEST_TOKEN, "anthropic-version": "2023-06-01" },
      {
        model: "chat-files-claude",
        max_tokens: 50,
        messages: [{
          role: "user",
          content: [
            {
              type: "document",
              source: { type: "base64", media_type: "application/pdf", data: PDF },
              title: `${EMAIL} salary.pdf`,
              context: "the payroll",
            },
            { type: "text", text: "read it" },
          ],
        }],
      },
    );
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    const sent = fakes.claude.requests.slice(before).map((r) => JSON.stringify(r.body));
    assert.equal(sent.length, 1);
    // The chat form's text of the context names the title too, so the change is not placed in the client's body:
    // the chat form goes, its file (the document's title) masked as its context text is.
    assert.ok(!sent[0].includes(EMAIL), sent[0]);
    assert.match(sent[0], /"title":"<EMAIL_1> salary\.pdf"/);
    assert.match(sent[0], /Context of the document that follows \(<EMAIL_1> salary\.pdf\): the payroll/);
  });
});

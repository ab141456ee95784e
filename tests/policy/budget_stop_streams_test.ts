/**
 * `budget.stop_streams: true` (issue 14): a streamed answer that would take its token past the budget is
 * ended mid-stream with the API's own error event, and the upstream call is aborted at once; the usage
 * record keeps the tokens so far and says why the stream ended. Without the option (today's behaviour) the
 * same stream runs to its end. End to end over real sockets with the official SDKs: `openai` (chat
 * completions and the Responses stream) and `@anthropic-ai/sdk` (Messages, translated from a chat upstream
 * and passed through to an Anthropic one), against a fake upstream that streams a long answer slowly and
 * notes every stream its client (the gateway) abandoned.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import http from "node:http";
import type { AddressInfo } from "node:net";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

/** The fake's answer: WORDS deltas of " word" (one token, 5 characters each), one every DELAY_MS. */
const WORDS = 300;
const DELAY_MS = 3;
const WORD = " word";
/** A budget well below the whole answer (~375 estimated tokens) and above a prompt with a small reservation. */
const BUDGET = 120;

interface FakeStreams {
  baseURL: string;
  /** Per path: how many streams were abandoned by the gateway, and how many deltas each had written then. */
  aborted: { path: string; written: number }[];
  completed: string[];
  stop(): Promise<void>;
}

function sse(res: http.ServerResponse, event: string | null, data: unknown) {
  res.write(`${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
}

function chatChunk(delta: Record<string, unknown>, finish: string | null) {
  return {
    id: "chatcmpl-long",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "long",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  };
}

/** An OpenAI chat upstream (`/v1/chat/completions`) and an Anthropic one (`/v1/messages`) that stream slowly. */
async function startFakeStreams(): Promise<FakeStreams> {
  const fake: FakeStreams = { baseURL: "", aborted: [], completed: [], stop: () => Promise.resolve() };
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", async () => {
      const path = req.url ?? "";
      const body = JSON.parse(Buffer.concat(parts).toString() || "{}");
      let written = 0;
      let gone = false;
      res.on("close", () => {
        if (!res.writableFinished) {
          gone = true;
          fake.aborted.push({ path, written });
        }
      });
      res.writeHead(200, { "content-type": "text/event-stream" });
      const anthropic = path === "/v1/messages";
      const native = path === "/v1/responses";
      let seq = 0;
      const respond = (type: string, fields: Record<string, unknown>) =>
        sse(res, type, { type, sequence_number: seq++, ...fields });
      const response = (status: string, output: unknown[]) => ({
        id: "resp_long",
        object: "response",
        created_at: 1_700_000_000,
        status,
        model: body.model,
        output,
        error: null,
        incomplete_details: null,
        ...(status === "completed"
          ? { usage: { input_tokens: 12, output_tokens: WORDS, total_tokens: 12 + WORDS } }
          : {}),
      });
      const at = { item_id: "msg_long", output_index: 0, content_index: 0 };
      if (native) {
        respond("response.created", { response: response("in_progress", []) });
        respond("response.output_item.added", {
          output_index: 0,
          item: { id: "msg_long", type: "message", status: "in_progress", role: "assistant", content: [] },
        });
        respond("response.content_part.added", {
          ...at,
          part: { type: "output_text", text: "", annotations: [] },
        });
      } else if (anthropic) {
        sse(res, "message_start", {
          type: "message_start",
          message: {
            id: "msg_long",
            type: "message",
            role: "assistant",
            model: body.model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 12, output_tokens: 1 },
          },
        });
        sse(res, "content_block_start", {
          type: "content_block_start",
          index: 0,
          content_block: { type: "text", text: "" },
        });
      } else {
        sse(res, null, chatChunk({ role: "assistant", content: "" }, null));
      }
      for (let i = 0; i < WORDS; i++) {
        await new Promise((r) => setTimeout(r, DELAY_MS));
        if (gone) return;
        if (native) {
          respond("response.output_text.delta", { ...at, delta: WORD, logprobs: [] });
        } else if (anthropic) {
          sse(res, "content_block_delta", {
            type: "content_block_delta",
            index: 0,
            delta: { type: "text_delta", text: WORD },
          });
        } else {
          sse(res, null, chatChunk({ content: WORD }, null));
        }
        written++;
      }
      if (native) {
        const part = { type: "output_text", text: WORD.repeat(WORDS), annotations: [] };
        const item = {
          id: "msg_long",
          type: "message",
          status: "completed",
          role: "assistant",
          content: [part],
        };
        respond("response.output_text.done", { ...at, text: part.text, logprobs: [] });
        respond("response.content_part.done", { ...at, part });
        respond("response.output_item.done", { output_index: 0, item });
        respond("response.completed", { response: response("completed", [item]) });
      } else if (anthropic) {
        sse(res, "content_block_stop", { type: "content_block_stop", index: 0 });
        sse(res, "message_delta", {
          type: "message_delta",
          delta: { stop_reason: "end_turn", stop_sequence: null },
          usage: { output_tokens: WORDS },
        });
        sse(res, "message_stop", { type: "message_stop" });
      } else {
        sse(res, null, chatChunk({}, "stop"));
        if (body.stream_options?.include_usage) {
          sse(res, null, {
            ...chatChunk({}, null),
            choices: [],
            usage: { prompt_tokens: 12, completion_tokens: WORDS, total_tokens: 12 + WORDS },
          });
        }
        res.write("data: [DONE]\n\n");
      }
      fake.completed.push(path);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return fake;
}

/** One token per case, so that one case's spending never decides another's. */
const CASES = ["chat", "responses", "responses-native", "messages", "messages-native"] as const;
/** Tokens for reading the raw wire of a stopped stream. */
const WIRE = ["wire-chat", "wire-responses", "wire-responses-native"] as const;
type Case = typeof CASES[number] | typeof WIRE[number];
const secret = (c: Case, stop: boolean) => `gw-${c}-${stop ? "stop" : "run"}-token-0123456789abcdef`;

function config(fake: FakeStreams): string {
  const tokens = [...CASES, ...WIRE].flatMap((c) =>
    [true, false].map((stop) =>
      `  - { name: ${c}-${stop ? "stop" : "run"}, environment: test, sha256: ${
        hashToken(secret(c, stop))
      }, ` +
      `models: ["*"], budget: { tokens: ${BUDGET}, period: day${stop ? ", stop_streams: true" : ""} } }`
    )
  );
  return `
providers:
  upstream: { type: openai, base_url: "${fake.baseURL}/v1", api_key: "sk-fake-0123456789" }
  native: { type: openai, base_url: "${fake.baseURL}/v1", api_key: "sk-fake-0123456789", native_responses: true }
  claude: { type: anthropic, base_url: "${fake.baseURL}", api_key: "sk-ant-fake-0123456789" }
models:
  long: { type: chat, targets: [ { provider: upstream, model: long } ] }
  native-long: { type: chat, targets: [ { provider: native, model: long } ] }
  claude-long: { type: chat, targets: [ { provider: claude, model: claude-long } ] }
tokens:
${tokens.join("\n")}
`;
}

interface Row {
  request_id: string;
  stream: number;
  status: number;
  outcome: string;
  prompt_tokens: number;
  completion_tokens: number;
  error_code: string | null;
}

/** The usage record of `requestId`, once it is in the store. */
async function usageRow(gw: TestGateway, requestId: string): Promise<Row> {
  const rows = await pollUsageRows<Row>(gw, (r) => r.length >= 1, {
    sql: "SELECT * FROM usage WHERE request_id = ?",
    params: [requestId],
    tries: 250,
  });
  if (rows.length > 1) throw new Error(`${rows.length} records for ${requestId}`);
  if (rows.length === 1) return rows[0];
  throw new Error(`no usage record for ${requestId}`);
}

/** Waits until the fake has seen the stream of `path` end: abandoned (true) or completed (false). */
async function upstreamEnd(fake: FakeStreams, path: string, before: number): Promise<boolean> {
  for (let i = 0; i < 250; i++) {
    if (
      fake.aborted.filter((a) => a.path === path).length + fake.completed.filter((p) => p === path).length >
        before
    ) {
      return fake.aborted.some((a) => a.path === path) &&
        fake.aborted.filter((a) => a.path === path).length > 0;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`the upstream stream of ${path} never ended`);
}

let nextId = 0;
const rid = (c: Case) => `stop-streams-${c}-${++nextId}`;

/** What one case's client saw: the text it received, and the error its SDK raised (if any). */
interface Seen {
  text: string;
  error?: unknown;
  /** Events of the Responses stream, in order. */
  events?: string[];
}

async function chatCase(gw: TestGateway, token: string, id: string): Promise<Seen> {
  const client = new OpenAI({ apiKey: token, baseURL: gw.baseURL, maxRetries: 0 });
  let text = "";
  try {
    const stream = await client.chat.completions.create(
      { model: "long", messages: [{ role: "user", content: "Tell me a long story." }], stream: true },
      { headers: { "x-request-id": id } },
    );
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
    return { text };
  } catch (error) {
    return { text, error };
  }
}

async function responsesCase(gw: TestGateway, token: string, id: string, model = "long"): Promise<Seen> {
  const client = new OpenAI({ apiKey: token, baseURL: gw.baseURL, maxRetries: 0 });
  const events: string[] = [];
  let text = "";
  const runner = client.responses.stream(
    { model, input: "Tell me a long story." },
    { headers: { "x-request-id": id } },
  );
  runner.on("event", (e) => {
    events.push(e.type);
    if (e.type === "response.output_text.delta") text += e.delta;
  });
  try {
    await runner.finalResponse();
    return { text, events };
  } catch (error) {
    return { text, error, events };
  }
}

async function messagesCase(gw: TestGateway, token: string, id: string, model: string): Promise<Seen> {
  const client = new Anthropic({ apiKey: token, baseURL: gw.url, maxRetries: 0 });
  let text = "";
  try {
    const stream = client.messages.stream(
      { model, max_tokens: 20, messages: [{ role: "user", content: "Tell me a long story." }] },
      { headers: { "x-request-id": id } },
    );
    for await (const event of stream) {
      if (event.type === "content_block_delta" && event.delta.type === "text_delta") text += event.delta.text;
    }
    return { text };
  } catch (error) {
    return { text, error };
  }
}

const RUN: Record<
  typeof CASES[number],
  { path: string; run: (gw: TestGateway, token: string, id: string) => Promise<Seen> }
> = {
  chat: { path: "/v1/chat/completions", run: chatCase },
  responses: { path: "/v1/chat/completions", run: responsesCase },
  "responses-native": { path: "/v1/responses", run: (gw, t, id) => responsesCase(gw, t, id, "native-long") },
  messages: { path: "/v1/chat/completions", run: (gw, t, id) => messagesCase(gw, t, id, "long") },
  "messages-native": { path: "/v1/messages", run: (gw, t, id) => messagesCase(gw, t, id, "claude-long") },
};

const FULL = WORD.repeat(WORDS);

Deno.test("budget.stop_streams: the stream ends with the API's error event before the answer is complete, the upstream is aborted, the record keeps the tokens so far", async (t) => {
  const fake = await startFakeStreams();
  const gw = await startGateway(config(fake));
  try {
    for (const c of CASES) {
      await t.step(c, async () => {
        const { path, run } = RUN[c];
        const before = fake.aborted.filter((a) => a.path === path).length +
          fake.completed.filter((p) => p === path).length;
        const abortedBefore = fake.aborted.length;
        const id = rid(c);
        const seen = await run(gw, secret(c, true), id);
        // The client: an error from its SDK, after part of the answer.
        assert.ok(seen.error, `the ${c} stream raised`);
        assert.ok(seen.text.length > 0, "what came before the stop was forwarded");
        assert.ok(
          seen.text.length < FULL.length,
          `stopped before the end (${seen.text.length} of ${FULL.length})`,
        );
        assert.ok(FULL.startsWith(seen.text));
        if (c === "chat") {
          assert.ok(seen.error instanceof OpenAI.APIError);
          assert.equal(seen.error.code, "insufficient_quota");
        } else if (c === "responses" || c === "responses-native") {
          assert.ok(seen.error instanceof OpenAI.APIError);
          assert.equal(seen.error.code, "insufficient_quota");
          assert.ok(!seen.events!.includes("response.completed"));
        } else {
          assert.ok(seen.error instanceof Anthropic.APIError, String(seen.error));
          const body = seen.error.error as { type?: string; error?: { type?: string; message?: string } };
          assert.equal(body.type, "error");
          assert.equal(body.error?.type, "rate_limit_error");
          assert.match(body.error?.message ?? "", /quota|budget/);
        }
        // The upstream: abandoned at once, long before its last delta.
        await upstreamEnd(fake, path, before);
        assert.equal(fake.aborted.length, abortedBefore + 1, "the upstream call was aborted");
        const abort = fake.aborted.at(-1)!;
        assert.ok(abort.written < WORDS / 2, `aborted after ${abort.written} of ${WORDS} deltas`);
        // The record: one, with the tokens so far (about the budget, never the whole answer) and why it ended.
        const row = await usageRow(gw, id);
        assert.equal(row.stream, 1);
        assert.equal(row.status, 200);
        assert.equal(row.error_code, "budget_exceeded_mid_stream");
        assert.ok(row.completion_tokens > 0, `completion tokens ${row.completion_tokens}`);
        assert.ok(
          row.completion_tokens < WORDS,
          `completion tokens ${row.completion_tokens} < the whole answer`,
        );
        assert.ok(
          row.prompt_tokens + row.completion_tokens <= BUDGET + 8,
          `tokens so far ${row.prompt_tokens} + ${row.completion_tokens} stay about the budget of ${BUDGET}`,
        );
        // What is left is too little for a whole answer: the next request is refused at admission, or
        // stopped as well, and the two together stay about the budget.
        const nextId = rid(c);
        const next = await run(gw, secret(c, true), nextId);
        assert.ok(next.error, "the next request does not get a whole answer either");
        assert.ok(next.text.length < FULL.length);
        if (next.text !== "") {
          const second = await usageRow(gw, nextId);
          assert.equal(second.error_code, "budget_exceeded_mid_stream");
          const total = row.prompt_tokens + row.completion_tokens + second.prompt_tokens +
            second.completion_tokens;
          assert.ok(total <= BUDGET + 8, `both together: ${total} tokens of a budget of ${BUDGET}`);
        }
      });
    }
  } finally {
    await gw.stop();
    await fake.stop();
  }
});

/** A raw streamed request; the body's text once it ended. */
async function rawStream(
  gw: TestGateway,
  c: Case,
  path: string,
  body: Record<string, unknown>,
): Promise<string> {
  const response = await fetch(`${gw.baseURL}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret(c, true)}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "long", stream: true, ...body }),
  });
  assert.equal(response.status, 200);
  return await response.text();
}

Deno.test("budget.stop_streams: on the wire, chat ends with an insufficient_quota error event and no [DONE]; Responses with error + response.failed", async () => {
  const fake = await startFakeStreams();
  const gw = await startGateway(config(fake));
  try {
    const chat = await rawStream(gw, "wire-chat", "/chat/completions", {
      messages: [{ role: "user", content: "Tell me a long story." }],
    });
    const data = chat.trim().split("\n\n").map((frame) => frame.replace(/^data: /, ""));
    assert.ok(!data.includes("[DONE]"));
    const last = JSON.parse(data.at(-1)!);
    assert.equal(last.error.code, "insufficient_quota");
    assert.equal(last.error.type, "insufficient_quota");
    assert.ok(data.length > 2, "chunks came before the error");

    for (
      const [c, model] of [["wire-responses", "long"], ["wire-responses-native", "native-long"]] as const
    ) {
      const responses = await rawStream(gw, c, "/responses", { model, input: "Tell me a long story." });
      const events = responses.trim().split("\n\n").map((frame) => JSON.parse(frame.split("\n")[1].slice(6)));
      assert.deepEqual(events.slice(-2).map((e) => e.type), ["error", "response.failed"], model);
      assert.equal(events.at(-2).code, "insufficient_quota");
      assert.equal(events.at(-1).response.status, "failed");
      // response.failed carries a ResponseErrorCode of the spec, which has no quota code.
      assert.equal(typeof events.at(-1).response.error.code, "string");
      assert.match(events.at(-1).response.error.message, /quota/);
      assert.ok(events.some((e) => e.type === "response.output_text.delta"));
      // The events the stop withheld leave no gap: the numbers the client reads rise by one.
      assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i), model);
    }
  } finally {
    await gw.stop();
    await fake.stop();
  }
});

Deno.test("budget.stop_streams off (the default): the same stream runs to its end and is charged then", async (t) => {
  const fake = await startFakeStreams();
  const gw = await startGateway(config(fake));
  try {
    for (const c of CASES) {
      await t.step(c, async () => {
        const abortedBefore = fake.aborted.length;
        const id = rid(c);
        const seen = await RUN[c].run(gw, secret(c, false), id);
        assert.equal(seen.error, undefined, `the ${c} stream completed: ${seen.error}`);
        assert.equal(seen.text, FULL);
        const row = await usageRow(gw, id);
        assert.equal(row.error_code, null);
        assert.ok(row.completion_tokens >= WORDS, `the whole answer is charged (${row.completion_tokens})`);
        assert.equal(fake.aborted.length, abortedBefore, "no upstream call was aborted");
      });
    }
  } finally {
    await gw.stop();
    await fake.stop();
  }
});

Deno.test("budget.stop_streams: a stream the budget stopped is not its target's failure; other tokens keep the target", async () => {
  const fake = await startFakeStreams();
  // One failure ejects a target here: a stop counted as one would take the target from every token.
  const gw = await startGateway(`${config(fake)}\nrouting: { eject_after: 1 }\n`);
  try {
    const stopped = await rawStream(gw, "wire-chat", "/chat/completions", {
      messages: [{ role: "user", content: "Tell me a long story." }],
    });
    assert.match(stopped, /insufficient_quota/);
    const other = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret("chat", false)}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "long", stream: true, messages: [{ role: "user", content: "Hi" }] }),
    });
    const text = await other.text();
    assert.equal(other.status, 200, `another token is served: ${text.slice(0, 300)}`);
    assert.match(text, /\[DONE\]/);
  } finally {
    await gw.stop();
    await fake.stop();
  }
});

Deno.test("budget.stop_streams: a stop whose message the scrubber masked is still recorded as budget_exceeded_mid_stream", async () => {
  const fake = await startFakeStreams();
  // The stop's message names the token, and this name holds eight characters of the upstream key: the message
  // the client gets is masked, and the masked copy of the error must still be the budget's stop.
  const name = "stop-0123456789";
  const token = "gw-masked-name-stop-token-0123456789abcdef";
  const gw = await startGateway(
    `${config(fake)}  - { name: ${name}, environment: test, sha256: ${hashToken(token)}, models: ["*"], ` +
      `budget: { tokens: ${BUDGET}, period: day, stop_streams: true } }\n`,
  );
  try {
    const chatId = `stop-streams-masked-chat-${++nextId}`;
    const seen = await chatCase(gw, token, chatId);
    assert.ok(seen.error instanceof OpenAI.APIError, String(seen.error));
    assert.equal(seen.error.code, "insufficient_quota");
    assert.match(seen.error.message, /\*\*\*/, "the message the client got was masked");
    assert.doesNotMatch(seen.error.message, /0123456789/);
    assert.equal((await usageRow(gw, chatId)).error_code, "budget_exceeded_mid_stream");
  } finally {
    await gw.stop();
    await fake.stop();
  }
});

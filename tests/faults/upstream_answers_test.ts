/**
 * An OpenAI-compatible upstream's 200 is untrusted like its errors: a completion whose `choices` are not
 * objects with a `message` (or whose message or chunk delta holds `tool_calls` that are not objects) is the
 * upstream's fault (a 502 within the attempt, so the next target serves it; after a stream started, the client
 * API's error event says so), never the gateway's 500; usage whose counts are not counts (a string, a negative number) is not recorded or
 * priced as sent: the gateway counts the tokens itself, as when an upstream reports none.
 */
import assert from "node:assert/strict";
import { FAKE_ANSWER, FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";

interface UsageLine {
  request_id: string;
  status: number;
  provider: string | null;
  prompt_tokens: unknown;
  completion_tokens: unknown;
  tokens_estimated: boolean;
}

const completion = (extra: Record<string, unknown>) =>
  JSON.stringify({ id: "chatcmpl-x", object: "chat.completion", created: 1, model: "m", ...extra });
const message = { role: "assistant", content: "Hello there, from the raw upstream." };

Deno.test("upstream answers: malformed choices fall over to the next target; usage that is not counts is counted by the gateway", async () => {
  const raw = startRawUpstream();
  const good = startFakeOpenAI();
  const dir = await Deno.makeTempDir();
  const gw = await startGateway(`
usage: { sqlite: none, jsonl: "${dir}/usage.jsonl", spill: "${dir}/spill.jsonl", flush_interval: 20ms }
providers:
  raw: { type: openai, base_url: "${raw.url}/v1", api_key: "sk-raw" }
  good: { type: openai, base_url: "${good.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-two: { type: chat, targets: [ { provider: raw, model: m, retries: 0 }, { provider: good, model: gpt-ok } ] }
  chat-raw: { type: chat, targets: [ { provider: raw, model: m, retries: 0 } ] }
${TEST_TOKENS_YAML}`);
  const ask = async (id: string, model: string) => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TEST_TOKEN}`,
        "content-type": "application/json",
        "x-request-id": id,
      },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "Hi" }] }),
    });
    return { status: res.status, body: await res.json(), provider: res.headers.get("x-gateway-provider") };
  };
  let stopped = false;
  try {
    for (const choices of [[null], ["oops"], [{ index: 0, message: "str", finish_reason: "stop" }]]) {
      raw.next = {
        status: 200,
        headers: { "content-type": "application/json" },
        chunks: [completion({ choices })],
      };
      const answer = await ask(`choices-${JSON.stringify(choices)}`, "chat-two");
      assert.equal(answer.status, 200, `${JSON.stringify(choices)}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.choices[0].message.content, FAKE_ANSWER, "the next target served it");
    }
    raw.next = {
      status: 200,
      headers: { "content-type": "application/json" },
      chunks: [completion({ choices: [null] })],
    };
    const alone = await ask("choices-alone", "chat-raw");
    assert.equal(alone.status, 502, JSON.stringify(alone.body));
    assert.equal(alone.body.error.code, "upstream_invalid_response");

    const usages = {
      strings: { prompt_tokens: "30", completion_tokens: "30", total_tokens: "60" },
      negative: { prompt_tokens: 50, completion_tokens: -1000, total_tokens: -950 },
    };
    for (const [name, usage] of Object.entries(usages)) {
      raw.next = {
        status: 200,
        headers: { "content-type": "application/json" },
        chunks: [completion({ choices: [{ index: 0, message, finish_reason: "stop" }], usage })],
      };
      const answer = await ask(`usage-${name}`, "chat-raw");
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      // As from an upstream that reported none: no usage shown rather than counts the gateway cannot vouch for.
      assert.equal(answer.body.usage, undefined, `${name}: ${JSON.stringify(answer.body.usage)}`);
    }
    // The same in a stream: a usage chunk with counts that are not counts.
    const chunk = (extra: Record<string, unknown>) =>
      `data: ${
        JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", ...extra })
      }\n\n`;
    raw.next = {
      status: 200,
      headers: { "content-type": "text/event-stream" },
      chunks: [
        chunk({
          choices: [{
            index: 0,
            delta: { role: "assistant", content: message.content },
            finish_reason: null,
          }],
        }),
        chunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }),
        chunk({ choices: [], usage: usages.strings }),
        "data: [DONE]\n\n",
      ],
    };
    const streamed = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TEST_TOKEN}`,
        "content-type": "application/json",
        "x-request-id": "usage-stream",
      },
      body: JSON.stringify({ model: "chat-raw", stream: true, messages: [{ role: "user", content: "Hi" }] }),
    });
    assert.equal(streamed.status, 200);
    assert.match(await streamed.text(), /\[DONE\]/);
    await gw.stop();
    stopped = true;
    const records: UsageLine[] = (await Deno.readTextFile(`${dir}/usage.jsonl`)).trim().split("\n")
      .map((l) => JSON.parse(l));
    for (const name of [...Object.keys(usages), "stream"]) {
      const [record] = records.filter((r) => r.request_id === `usage-${name}`);
      assert.equal(record.tokens_estimated, true, `${name}: counted by the gateway`);
      for (const count of [record.prompt_tokens, record.completion_tokens]) {
        assert.ok(Number.isSafeInteger(count) && (count as number) > 0, `${name}: ${JSON.stringify(record)}`);
      }
    }
    assert.equal(records.filter((r) => r.request_id === "choices-alone")[0].status, 502);
  } finally {
    if (!stopped) await gw.stop();
    await raw.stop();
    await good.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

/** The four client APIs, asked for `model` with one user message. */
const APIS = {
  chat: (model: string, stream: boolean) => ({
    path: "/v1/chat/completions",
    body: { model, stream, messages: [{ role: "user", content: "Hi" }] },
  }),
  responses: (model: string, stream: boolean) => ({
    path: "/v1/responses",
    body: { model, stream, input: "Hi" },
  }),
  messages: (model: string, stream: boolean) => ({
    path: "/v1/messages",
    body: { model, stream, max_tokens: 50, messages: [{ role: "user", content: "Hi" }] },
  }),
  gemini: (model: string, stream: boolean) => ({
    path: `/v1beta/models/${model}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`,
    body: { contents: [{ role: "user", parts: [{ text: "Hi" }] }] },
  }),
};

Deno.test("upstream answers: tool_calls that are not objects are the upstream's 502 in every client API, and fall over before the answer starts", async () => {
  const raw = startRawUpstream();
  const good = startFakeOpenAI();
  // Many failures in a row: the raw target must not be ejected, so that each request reaches it.
  const gw = await startGateway(`
routing: { backoff_base: 5ms, backoff_max: 10ms, eject_after: 1000 }
providers:
  raw: { type: openai, base_url: "${raw.url}/v1", api_key: "sk-raw" }
  good: { type: openai, base_url: "${good.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-two: { type: chat, targets: [ { provider: raw, model: m, retries: 0 }, { provider: good, model: gpt-ok } ] }
  chat-raw: { type: chat, targets: [ { provider: raw, model: m, retries: 0 } ] }
${TEST_TOKENS_YAML}`);
  const ask = async (api: keyof typeof APIS, model: string, stream: boolean) => {
    const { path, body } = APIS[api](model, stream);
    const res = await fetch(`${gw.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    // The Gemini API cuts the connection after its error event (see `cutAfterFail`): what arrived is the answer.
    let text = "";
    const decoder = new TextDecoder();
    try {
      for await (const bytes of res.body!) text += decoder.decode(bytes, { stream: true });
    } catch { /* cut */ }
    return { status: res.status, text };
  };
  const chunk = (delta: unknown) =>
    `data: ${
      JSON.stringify({
        id: "c",
        object: "chat.completion.chunk",
        created: 1,
        model: "m",
        choices: [{ index: 0, delta, finish_reason: null }],
      })
    }\n\n`;
  const sse = { "content-type": "text/event-stream" };
  const toolAnswer = (calls: unknown) => ({
    status: 200,
    headers: { "content-type": "application/json" },
    chunks: [completion({
      choices: [{ index: 0, message: { role: "assistant", tool_calls: calls }, finish_reason: "tool_calls" }],
    })],
  });
  try {
    for (const calls of [[null], [1], {}]) {
      const label = JSON.stringify(calls);
      for (const api of Object.keys(APIS) as (keyof typeof APIS)[]) {
        raw.next = toolAnswer(calls);
        const whole = await ask(api, "chat-raw", false);
        assert.equal(whole.status, 502, `${api} ${label}: ${whole.text}`);
        assert.doesNotMatch(whole.text, /internal error/, `${api} ${label}`);

        // In a stream, after the answer started: the API's error event says the upstream's fault.
        raw.next = {
          status: 200,
          headers: sse,
          chunks: [chunk({ role: "assistant", content: "Hi" }), chunk({ tool_calls: calls })],
        };
        const cut = await ask(api, "chat-raw", true);
        assert.equal(cut.status, 200, `${api} ${label}: ${cut.text}`);
        assert.match(cut.text, /without valid choices/, `${api} ${label}: ${cut.text.slice(-300)}`);
        assert.doesNotMatch(cut.text, /internal error/, `${api} ${label}`);
      }
      // Before anything reached the client: the next target answers.
      raw.next = toolAnswer(calls);
      const fellOver = await ask("chat", "chat-two", false);
      assert.equal(fellOver.status, 200, fellOver.text);
      assert.equal(JSON.parse(fellOver.text).choices[0].message.content, FAKE_ANSWER);
      raw.next = { status: 200, headers: sse, chunks: [chunk({ role: "assistant", tool_calls: calls })] };
      const over = await ask("chat", "chat-two", true);
      assert.equal(over.status, 200, over.text);
      assert.match(over.text, /\[DONE\]/);
      assert.doesNotMatch(over.text, /error/, over.text.slice(-300));
    }
    // A delta that is not an object is malformed too; a choice without one (Azure's filter annotations) is not.
    raw.next = { status: 200, headers: sse, chunks: [chunk("Hi")] };
    assert.equal((await ask("chat", "chat-raw", true)).status, 502);
    const noDelta = `data: ${
      JSON.stringify({
        id: "c",
        object: "chat.completion.chunk",
        created: 1,
        model: "m",
        choices: [{ index: 0 }],
      })
    }\n\n`;
    const finish = `data: ${
      JSON.stringify({
        id: "c",
        object: "chat.completion.chunk",
        created: 1,
        model: "m",
        choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
      })
    }\n\n`;
    raw.next = {
      status: 200,
      headers: sse,
      chunks: [noDelta, chunk({ content: "Hi" }), finish, "data: [DONE]\n\n"],
    };
    const filtered = await ask("chat", "chat-raw", true);
    assert.equal(filtered.status, 200, filtered.text);
    assert.match(filtered.text, /\[DONE\]/);
    assert.ok(!gw.logs.some((l) => l.msg === "unhandled_error"), "no failure of the gateway's own");
  } finally {
    await gw.stop();
    await raw.stop();
    await good.stop();
  }
});

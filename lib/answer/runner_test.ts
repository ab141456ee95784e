import assert from "node:assert/strict";
import { StreamTexts } from "../usage/stream_texts.ts";
import { GatewayError } from "../errors.ts";
import { serverShuttingDown } from "../http/in_flight.ts";
import type { ChatRequest } from "../openai/types.ts";
import { countTokens, estimateInputTokens } from "../usage/estimate.ts";
import { answerJson, streamEnding, usageOf } from "./runner.ts";

const chat: ChatRequest = { model: "m", messages: [{ role: "user", content: "How many tokens is this?" }] };

Deno.test("runner: the upstream's usage is taken as it is, not estimated", async () => {
  assert.deepEqual(await usageOf({ prompt: 7, completion: 3 }, { chat }, ["ignored"]), {
    prompt: 7,
    completion: 3,
    estimated: false,
  });
});

Deno.test("runner: without usage, what was sent and received is counted and marked estimated", async () => {
  assert.deepEqual(await usageOf(undefined, { chat }, ["Four", " tokens."]), {
    // The gateway's own count of the request, as every client API's: its texts and the chat format's framing.
    prompt: await estimateInputTokens(chat),
    completion: await countTokens(["Four", " tokens."]),
    estimated: true,
  });
});

Deno.test("runner: a client API's own prompt count, or a prompt the upstream reported, is used for the prompt", async () => {
  const own = await usageOf(undefined, { chat, countPrompt: () => Promise.resolve(41) }, ["Four"]);
  assert.deepEqual(own, { prompt: 41, completion: await countTokens(["Four"]), estimated: true });
  const known = await usageOf(undefined, { chat, countPrompt: () => Promise.resolve(41) }, ["Four"], {
    prompt: 90,
    cachedRead: 80,
    cacheWrite5m: 5,
  });
  // The reported prompt keeps its cache reads and writes, which are priced apart from its uncached input.
  assert.deepEqual(known, {
    prompt: 90,
    cachedRead: 80,
    cacheWrite5m: 5,
    completion: await countTokens(["Four"]),
    estimated: true,
  });
});

Deno.test("runner: a failing prompt count falls back to the rough estimate, the output is still counted", async () => {
  const usage = await usageOf(undefined, { chat, countPrompt: () => Promise.reject(new Error("no")) }, [
    "Four",
  ]);
  assert.ok(usage.prompt > 0);
  assert.equal(usage.completion, await countTokens(["Four"]));
  assert.equal(usage.estimated, true);
});

Deno.test("runner: why a stream ended badly is its error code, with the time to first chunk", () => {
  const failed = new GatewayError(502, "cut", { type: "server_error", code: "upstream_error" });
  assert.deepEqual(streamEnding({ end: "ok", firstChunkAt: 12.5, endedAt: 40, texts: new StreamTexts() }), {
    ttftMs: 12.5,
    errorCode: undefined,
    endedAt: 40,
  });
  assert.deepEqual(
    [
      streamEnding({ end: "error", error: failed, texts: new StreamTexts() }),
      streamEnding({ end: "error", texts: new StreamTexts() }),
      streamEnding({ end: "cancelled", texts: new StreamTexts() }),
      streamEnding({ end: "cancelled", error: serverShuttingDown(), texts: new StreamTexts() }),
    ].map((e) => e.errorCode),
    ["upstream_error", "stream_error", "client_closed_request", "server_shutdown"],
  );
});

Deno.test("runner: a JSON answer is rendered with the usage found, stored before it is sent", async () => {
  const steps: string[] = [];
  const headers = new Headers({ "x-gateway-provider": "p" });
  const answer = await answerJson(headers, { chat, signal: new AbortController().signal }, {
    reported: undefined,
    texts: () => ["Four tokens."],
    render: (usage) => {
      steps.push("render");
      return { text: "Four tokens.", tokens: usage.completion };
    },
    beforeSend: (body) => {
      steps.push(`store ${JSON.stringify(body)}`);
      return Promise.resolve();
    },
  });
  const completion = await countTokens(["Four tokens."]);
  assert.deepEqual(steps, ["render", `store {"text":"Four tokens.","tokens":${completion}}`]);
  assert.equal(answer.response.headers.get("content-type"), "application/json");
  assert.equal(answer.response.headers.get("x-gateway-provider"), "p");
  assert.deepEqual(await answer.response.json(), { text: "Four tokens.", tokens: completion });
  assert.deepEqual(answer.outcome, {
    usage: { prompt: await estimateInputTokens(chat), completion, estimated: true },
  });
});

import assert from "node:assert/strict";
import { GatewayError } from "../errors.ts";
import type { ChatRequest } from "../openai/types.ts";
import { countTokens } from "../usage/estimate.ts";
import type { Outcome } from "./accounting.ts";
import { settleStream } from "./stream_outcome.ts";

const chat: ChatRequest = { model: "m", messages: [{ role: "user", content: "How many tokens is this?" }] };

Deno.test("stream outcome: the handler's usage settles at once, with the time to first chunk", () => {
  const settled: Outcome[] = [];
  const usage = { prompt: 7, completion: 3, estimated: false };
  settleStream({ end: "ok", firstChunkAt: 12.5, texts: ["ignored"] }, usage, chat, (o) => settled.push(o));
  assert.equal(settled.length, 1, "no counting to wait for");
  assert.deepEqual(settled[0], { ttftMs: 12.5, errorCode: undefined, usage });
});

Deno.test("stream outcome: without usage, what was sent and received is counted and marked estimated", async () => {
  const outcome = await new Promise<Outcome>((resolve) =>
    settleStream({ end: "ok", texts: ["Four", " tokens."] }, undefined, chat, resolve)
  );
  assert.deepEqual(outcome.usage, {
    prompt: await countTokens(["How many tokens is this?"]),
    completion: await countTokens(["Four", " tokens."]),
    estimated: true,
  });
  assert.equal(outcome.errorCode, undefined);
});

Deno.test("stream outcome: why a stream ended badly is its error code", () => {
  const codes: (string | undefined)[] = [];
  const usage = { prompt: 1, completion: 1, estimated: false };
  const failed = new GatewayError(502, "cut", { type: "server_error", code: "upstream_error" });
  settleStream({ end: "error", error: failed, texts: [] }, usage, chat, (o) => codes.push(o.errorCode));
  settleStream({ end: "error", texts: [] }, usage, chat, (o) => codes.push(o.errorCode));
  settleStream({ end: "cancelled", texts: [] }, usage, chat, (o) => codes.push(o.errorCode));
  assert.deepEqual(codes, ["upstream_error", "stream_error", "client_closed_request"]);
});

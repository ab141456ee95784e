/**
 * The parts of a chat completion that say the model's words where no output check reads them, over real sockets:
 * token log probabilities (each token's text and bytes) and spoken audio (the sound and its transcript). Under an
 * output guardrail the first is not asked of the upstream (named in `x-gateway-dropped` and the record's
 * `dropped`), so a masked or withheld value never comes back spelled out token by token; the second is refused
 * before any upstream is called, since no check hears speech. An alias without output checks serves both.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { JsonObject } from "../../lib/openai/types.ts";
import { nthLog, startGateway, type TestGateway } from "../helpers/gateway.ts";

const TOKEN = "gw-guardrails-unread-output-0123456789";
/** What the model says, in the pieces (tokens) the upstream streams it in. */
const PIECES = ["Your ", "card ", "is ", "4111 ", "1111 ", "1111 ", "1111", "."];

/** A token's log probability as OpenAI gives it: its text, its UTF-8 bytes, and its alternatives. */
const logprob = (token: string) => ({
  token,
  logprob: -0.1,
  bytes: [...new TextEncoder().encode(token)],
  top_logprobs: [{ token, logprob: -0.1, bytes: [...new TextEncoder().encode(token)] }],
});

/**
 * An OpenAI-compatible upstream that, as OpenAI does, gives log probabilities only when asked (`logprobs: true`)
 * and speaks (`message.audio`, `delta.audio`) only when `modalities` asks for audio; or, `unasked`, one that
 * sends both with its text whatever it was asked, and its words again in a vendor field (OpenRouter's
 * `reasoning_details`). Keeps every body it got.
 */
function startUpstream(unasked = false) {
  const seen: JsonObject[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const body = await request.json() as JsonObject;
    seen.push(body);
    const asked = unasked || body.logprobs === true;
    const audio = Array.isArray(body.modalities) && body.modalities.includes("audio");
    const text = !audio || unasked;
    const base = { id: "chatcmpl-unread", created: 1, model: "m" };
    if (body.stream !== true) {
      const speech = { id: "audio_1", expires_at: 2e9, data: "UklGRg==", transcript: PIECES.join("") };
      const message = {
        role: "assistant",
        content: text ? PIECES.join("") : null,
        ...(audio || unasked ? { audio: speech } : {}),
        ...(unasked ? { reasoning_details: [{ type: "reasoning.text", text: PIECES.join("") }] } : {}),
      };
      return Response.json({
        ...base,
        object: "chat.completion",
        choices: [{
          index: 0,
          message,
          logprobs: asked ? { content: PIECES.map(logprob), refusal: null } : null,
          finish_reason: "stop",
        }],
        usage: { prompt_tokens: 5, completion_tokens: 8, total_tokens: 13 },
      });
    }
    const chunk = (delta: JsonObject, lp: unknown = null, finish: string | null = null) =>
      `data: ${
        JSON.stringify({
          ...base,
          object: "chat.completion.chunk",
          choices: [{ index: 0, delta, logprobs: lp, finish_reason: finish }],
        })
      }\n\n`;
    const said = PIECES.map((piece) =>
      chunk(
        {
          ...(text ? { content: piece } : {}),
          ...(audio || unasked ? { audio: { id: "audio_1", transcript: piece } } : {}),
          ...(unasked ? { reasoning_details: [{ type: "reasoning.text", text: piece }] } : {}),
        },
        asked ? { content: [logprob(piece)], refusal: null } : null,
      )
    );
    const sse = [chunk({ role: "assistant", content: text ? "" : null }), ...said, chunk({}, null, "stop")];
    return new Response(`${sse.join("")}data: [DONE]\n\n`, {
      headers: { "content-type": "text/event-stream" },
    });
  });
  return { baseURL: `http://127.0.0.1:${server.addr.port}/v1`, seen, stop: () => server.shutdown() };
}

function config(baseURL: string): string {
  return `
providers:
  up: { type: openai, base_url: "${baseURL}", api_key: sk-scripted-0123456789 }
guardrails:
  deny-cards: { type: pii, entities: [CREDIT_CARD], phase: output, action: deny }
  mask-cards: { type: pii, entities: [CREDIT_CARD], phase: output, action: mask }
  flag-cards: { type: pii, entities: [CREDIT_CARD], phase: output, action: flag }
  cards-in: { type: pii, entities: [CREDIT_CARD], phase: input, action: deny }
models:
  denied: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ], guardrails: [deny-cards] }
  masked: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ], guardrails: [mask-cards] }
  flagged: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ], guardrails: [flag-cards] }
  input-only: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ], guardrails: [cards-in] }
  plain: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`;
}

async function post(gw: TestGateway, body: JsonObject) {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: "my card?" }], ...body }),
  });
  return { status: res.status, dropped: res.headers.get("x-gateway-dropped"), text: await res.text() };
}

/** A stream's events: its chunks' joined content, whether it had an error event, and whether it ended with [DONE]. */
function streamed(sse: string): { content: string; error: JsonObject | null; done: boolean } {
  let content = "";
  let error: JsonObject | null = null;
  for (const line of sse.split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const event = JSON.parse(line.slice(6));
    if (event.error) error = event.error;
    for (const choice of event.choices ?? []) content += choice.delta?.content ?? "";
  }
  return { content, error, done: sse.includes("data: [DONE]") };
}

/** Whether `text` spells the card, whole or as the bytes of its digits' tokens. */
function spellsCard(text: string): boolean {
  const bytes = JSON.stringify([...new TextEncoder().encode("4111 ")]).slice(1, -1);
  return text.includes("4111") || text.includes(bytes);
}

/** Requests for spoken output, each with the param the refusal names. */
const AUDIO_ASKS: [JsonObject, string][] = [
  [{ modalities: ["text", "audio"], audio: { voice: "alloy", format: "pcm16" } }, "modalities"],
  [{ audio: { voice: "alloy", format: "pcm16" } }, "audio"],
];

/** The usage record of the `n`th request (1-based), as its access-log line. */
const record = (gw: TestGateway, n: number) => nthLog(gw, (l) => l.msg === "request", n);

for (const stream of [false, true]) {
  const form = stream ? "streamed" : "JSON";
  Deno.test(`guardrails unread output (${form}): logprobs are not asked of the upstream under an output mask or deny, and are named dropped`, async () => {
    const up = startUpstream();
    const gw = await startGateway(config(up.baseURL));
    try {
      const masked = await post(gw, { model: "masked", stream, logprobs: true, top_logprobs: 2 });
      assert.equal(masked.status, 200, masked.text);
      assert.ok(!spellsCard(masked.text), `the masked card comes back in the answer: ${masked.text}`);
      const content = stream
        ? streamed(masked.text).content
        : JSON.parse(masked.text).choices[0].message.content;
      assert.equal(content, "Your card is <CREDIT_CARD_1>.");
      assert.equal(masked.dropped, "logprobs,top_logprobs");
      assert.equal((await record(gw, 1)).dropped, "logprobs,top_logprobs");

      const denied = await post(gw, { model: "denied", stream, logprobs: true });
      assert.ok(!spellsCard(denied.text), `the withheld card comes back in the answer: ${denied.text}`);
      if (stream) {
        const { error, done } = streamed(denied.text);
        assert.equal(denied.status, 200);
        assert.equal(error?.code, "content_policy_violation");
        assert.ok(!done, denied.text);
      } else {
        assert.equal(denied.status, 400, denied.text);
        assert.equal(JSON.parse(denied.text).error.code, "content_policy_violation");
      }
      assert.equal((await record(gw, 2)).outcome, "deny");

      assert.equal(up.seen.length, 2);
      for (const body of up.seen) {
        assert.equal(body.logprobs, undefined, JSON.stringify(body));
        assert.equal(body.top_logprobs, undefined, JSON.stringify(body));
      }
    } finally {
      await gw.stop();
      await up.stop();
    }
  });

  Deno.test(`guardrails unread output (${form}): a request for audio under an output check is refused before any upstream is called`, async () => {
    const up = startUpstream();
    const gw = await startGateway(config(up.baseURL));
    let n = 0;
    try {
      for (const model of ["denied", "masked", "flagged"]) {
        for (const [ask, param] of AUDIO_ASKS) {
          const res = await post(gw, { model, stream, ...ask });
          assert.equal(res.status, 400, `${model}: ${res.text}`);
          assert.ok(!spellsCard(res.text), res.text);
          const error = JSON.parse(res.text).error;
          assert.equal(error.type, "invalid_request_error");
          assert.equal(error.code, "audio_output_not_checkable");
          assert.equal(error.param, param);
          assert.match(error.message, /guardrail \S+-cards/);
          const r = await record(gw, ++n);
          assert.equal(r.status, 400);
          assert.equal(r.outcome, "deny");
          assert.match(String(r.rule), /guardrail:\S+-cards/);
        }
      }
      assert.equal(up.seen.length, 0, "no upstream was asked for speech no check could hear");

      // Text only (`modalities: ["text"]`) is served; an alias without output checks serves audio.
      const text = await post(gw, { model: "masked", stream, modalities: ["text"] });
      assert.equal(text.status, 200, text.text);
      const spoken = await post(gw, { model: "plain", stream, ...AUDIO_ASKS[0][0] });
      assert.equal(spoken.status, 200, spoken.text);
      assert.match(spoken.text, /"transcript":"Your /);
    } finally {
      await gw.stop();
      await up.stop();
    }
  });

  Deno.test(`guardrails unread output (${form}): a checked answer carries no logprobs nor audio its upstream sent unasked`, async () => {
    const up = startUpstream(true);
    const gw = await startGateway(config(up.baseURL));
    try {
      const masked = await post(gw, { model: "masked", stream });
      assert.equal(masked.status, 200, masked.text);
      assert.ok(!spellsCard(masked.text), `the masked card comes back in the answer: ${masked.text}`);
      assert.ok(!masked.text.includes("transcript"), masked.text);
      assert.ok(!masked.text.includes("reasoning_details"), masked.text);
      const content = stream
        ? streamed(masked.text).content
        : JSON.parse(masked.text).choices[0].message.content;
      assert.equal(content, "Your card is <CREDIT_CARD_1>.");
      assert.equal(masked.dropped, null, "the request asked for nothing it went without");

      const denied = await post(gw, { model: "denied", stream });
      assert.ok(!spellsCard(denied.text), `the withheld card comes back in the answer: ${denied.text}`);
      assert.ok(!denied.text.includes("transcript"), denied.text);
      assert.equal(
        stream ? streamed(denied.text).error?.code : JSON.parse(denied.text).error.code,
        "content_policy_violation",
      );

      // Unchecked, the alias passes on what its upstream sent.
      const plain = await post(gw, { model: "plain", stream });
      assert.ok(plain.text.includes(`"token":"4111 "`) && plain.text.includes("transcript"), plain.text);
      assert.ok(plain.text.includes("reasoning_details"), plain.text);
    } finally {
      await gw.stop();
      await up.stop();
    }
  });
}

Deno.test("guardrails unread output: an alias without output checks still serves logprobs, and nothing is named dropped", async () => {
  const up = startUpstream();
  const gw = await startGateway(config(up.baseURL));
  try {
    for (const model of ["plain", "input-only"]) {
      for (const stream of [false, true]) {
        const res = await post(gw, { model, stream, logprobs: true, top_logprobs: 2 });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.dropped, null, `${model}: ${res.dropped}`);
        assert.ok(res.text.includes(`"token":"4111 "`), `${model}: the upstream's logprobs are passed on`);
        assert.equal(up.seen.at(-1)!.logprobs, true);
        assert.equal(up.seen.at(-1)!.top_logprobs, 2);
      }
    }
  } finally {
    await gw.stop();
    await up.stop();
  }
});

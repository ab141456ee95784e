import assert from "node:assert/strict";
import { handleResponses } from "./create.ts";
import { handleResponsesPrewarm } from "./prewarm.ts";
import { durationLimitEvent, errorEvent, parseMessage, withStreamId } from "./websocket.ts";

Deno.test("parseMessage: a response.create becomes a streamed body; generate: false is a prewarm", () => {
  const create = parseMessage(
    JSON.stringify({ type: "response.create", model: "m", input: "hi", stream: false }),
  );
  assert.ok("body" in create);
  assert.deepEqual(create.body, { model: "m", input: "hi", stream: true });
  assert.equal(create.handler, handleResponses);
  const prewarm = parseMessage(JSON.stringify({ type: "response.create", model: "m", generate: false }));
  assert.ok("body" in prewarm);
  assert.deepEqual(prewarm.body, { model: "m", stream: true });
  assert.equal(prewarm.handler, handleResponsesPrewarm);
  const generate = parseMessage(JSON.stringify({ type: "response.create", model: "m", generate: true }));
  assert.ok("body" in generate && generate.handler === handleResponses);
});

Deno.test("parseMessage: anything else is a 400 naming what is wrong", () => {
  const cases: [string | Uint8Array, string, string | null][] = [
    ["{", "invalid_json", null],
    ["[1]", "invalid_message", null],
    ["null", "invalid_message", null],
    ['{"type":"session.update"}', "invalid_value", "type"],
    ['{"model":"m"}', "invalid_value", "type"],
    ['{"type":"response.create","generate":"no"}', "invalid_type", "generate"],
    ['{"type":"response.create","stream_id":7}', "invalid_type", "stream_id"],
    ['{"type":"response.create","stream_id":null}', "invalid_type", "stream_id"],
    ['{"type":"response.create","stream_id":""}', "invalid_value", "stream_id"],
    ['{"type":"response.create","stream_id":"bad lane!"}', "invalid_value", "stream_id"],
    [`{"type":"response.create","stream_id":"${"x".repeat(257)}"}`, "invalid_value", "stream_id"],
    [new Uint8Array([123, 125]), "invalid_message", null],
  ];
  for (const [message, code, param] of cases) {
    const parsed = parseMessage(message);
    assert.ok("error" in parsed, String(message));
    assert.equal(parsed.error.status, 400);
    assert.equal(parsed.error.type, "invalid_request_error");
    assert.equal(parsed.error.code, code, String(message));
    assert.equal(parsed.error.param, param, String(message));
  }
});

Deno.test("errorEvent: the HTTP status and OpenAI's error fields, with nulls for what is missing", () => {
  assert.deepEqual(JSON.parse(errorEvent(429, { type: "requests", message: "slow down" })), {
    type: "error",
    status: 429,
    error: { type: "requests", code: null, message: "slow down", param: null },
  });
});

Deno.test("parseMessage: stream_id is taken off the body and kept to echo, even on the message's refusal", () => {
  const longest = "a".repeat(256);
  for (const id of ["agent_1", "A.b-c_9", longest]) {
    const parsed = parseMessage(JSON.stringify({ type: "response.create", stream_id: id, model: "m" }));
    assert.ok("body" in parsed);
    assert.deepEqual(parsed.body, { model: "m", stream: true });
    assert.equal(parsed.streamId, id);
  }
  const refused = parseMessage(JSON.stringify({ type: "response.create", stream_id: "lane", generate: 1 }));
  assert.ok("error" in refused);
  assert.equal(refused.streamId, "lane");
  // An invalid one is not echoed.
  assert.equal(parseMessage('{"type":"response.create","stream_id":"a b"}').streamId, undefined);
});

Deno.test("withStreamId: added to the event's object, whatever its shape", () => {
  for (const event of ['{"type":"x","n":{"a":[1,"}"]}}', '{"type":"x"}\n', "{}", '{ "type": "x" } ']) {
    assert.deepEqual(JSON.parse(withStreamId(event, "lane")), { ...JSON.parse(event), stream_id: "lane" });
  }
});

Deno.test("durationLimitEvent: OpenAI's error event for a connection that lasted its time, worded with the limit", () => {
  const message = (ms: number) => JSON.parse(durationLimitEvent(ms)).error.message;
  assert.deepEqual(JSON.parse(durationLimitEvent(3_600_000)), {
    type: "error",
    status: 400,
    error: {
      type: "invalid_request_error",
      code: "websocket_connection_limit_reached",
      message:
        "Responses websocket connection limit reached (60 minutes). Create a new websocket connection to continue.",
      param: null,
    },
  });
  assert.match(message(60_000), /\(1 minute\)/);
  assert.match(message(90_000), /\(90 seconds\)/);
  assert.match(message(1_000), /\(1 second\)/);
  assert.match(message(1_500), /\(1500 milliseconds\)/);
});

import assert from "node:assert/strict";
import { cpuTimed } from "../../../tests/helpers/cpu_time.ts";
import { handleResponses } from "./create.ts";
import { handleResponsesPrewarm } from "./prewarm.ts";
import { asWebSocketEvent, durationLimitEvent, errorEvent, parseMessage, withStreamId } from "./websocket.ts";

/** `server.max_json_depth`'s default. */
const DEPTH = 64;

Deno.test("parseMessage: a response.create becomes a streamed body; generate: false is a prewarm", () => {
  const create = parseMessage(
    JSON.stringify({ type: "response.create", model: "m", input: "hi", stream: false }),
    DEPTH,
  );
  assert.ok("body" in create);
  assert.deepEqual(create.body, { model: "m", input: "hi", stream: true });
  assert.equal(create.handler, handleResponses);
  const prewarm = parseMessage(
    JSON.stringify({ type: "response.create", model: "m", generate: false }),
    DEPTH,
  );
  assert.ok("body" in prewarm);
  assert.deepEqual(prewarm.body, { model: "m", stream: true });
  assert.equal(prewarm.handler, handleResponsesPrewarm);
  const generate = parseMessage(
    JSON.stringify({ type: "response.create", model: "m", generate: true }),
    DEPTH,
  );
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
    const parsed = parseMessage(message, DEPTH);
    assert.ok("error" in parsed, String(message));
    assert.equal(parsed.error.status, 400);
    assert.equal(parsed.error.type, "invalid_request_error");
    assert.equal(parsed.error.code, code, String(message));
    assert.equal(parsed.error.param, param, String(message));
  }
});

Deno.test("parseMessage: a message nested deeper than max_json_depth is refused before it is parsed, as a POST body is", () => {
  // 4 MB nested 2,000,000 levels deep (under the default 4 MiB max_body_size): parsed and written again, it held
  // the event loop for seconds on Deno and overflowed the stack on Bun.
  const levels = 2_000_000;
  const deep = '{"type":"response.create","model":"m","input":"hi","metadata":{"x":' +
    "[".repeat(levels) + "]".repeat(levels) + "}}";
  const [parsed, ms] = cpuTimed(() => parseMessage(deep, DEPTH));
  assert.ok("error" in parsed, "refused");
  assert.equal(parsed.error.status, 400);
  assert.equal(parsed.error.type, "invalid_request_error");
  assert.equal(parsed.error.code, "json_too_deep");
  assert.match(parsed.error.message, /at most 64 levels/);
  assert.ok(ms < 200, `took ${ms} ms`);
  // As deep as allowed (the event, `metadata`, 62 arrays), it is read.
  const nested = (n: number) => "[".repeat(n) + "]".repeat(n);
  const atLimit = parseMessage(
    `{"type":"response.create","model":"m","metadata":{"x":${nested(62)}}}`,
    DEPTH,
  );
  assert.ok("body" in atLimit);
  const over = parseMessage(`{"type":"response.create","model":"m","metadata":{"x":${nested(63)}}}`, DEPTH);
  assert.ok("error" in over && over.error.code === "json_too_deep");
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
    const parsed = parseMessage(
      JSON.stringify({ type: "response.create", stream_id: id, model: "m" }),
      DEPTH,
    );
    assert.ok("body" in parsed);
    assert.deepEqual(parsed.body, { model: "m", stream: true });
    assert.equal(parsed.streamId, id);
  }
  const refused = parseMessage(
    JSON.stringify({ type: "response.create", stream_id: "lane", generate: 1 }),
    DEPTH,
  );
  assert.ok("error" in refused);
  assert.equal(refused.streamId, "lane");
  // An invalid one is not echoed.
  assert.equal(parseMessage('{"type":"response.create","stream_id":"a b"}', DEPTH).streamId, undefined);
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

Deno.test("asWebSocketEvent: a stream's error event gets its error object, as the WebSocket mode's; other events pass as they are", () => {
  const flat = '{"type":"error","code":"upstream_error","message":"gone","param":null,"sequence_number":5}';
  assert.deepEqual(JSON.parse(asWebSocketEvent(flat)), {
    type: "error",
    sequence_number: 5,
    error: { type: "server_error", code: "upstream_error", message: "gone", param: null },
    code: "upstream_error",
    message: "gone",
    param: null,
  });
  const limited =
    '{"type":"error","code":"rate_limit_exceeded","message":"slow","param":null,"sequence_number":2}';
  assert.equal(JSON.parse(asWebSocketEvent(limited)).error.type, "rate_limit_exceeded");
  for (
    const event of [
      '{"type":"response.output_text.delta","delta":"{\\"type\\":\\"error\\"","sequence_number":3}',
      '{"type":"response.failed","response":{"status":"failed"},"sequence_number":6}',
      errorEvent(429, { type: "requests", message: "slow down" }),
    ]
  ) {
    assert.equal(asWebSocketEvent(event), event);
  }
});

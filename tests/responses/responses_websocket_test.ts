/**
 * The Responses API over a WebSocket (`/v1/responses`, OpenAI's WebSocket mode), end to end with the
 * web-standard `WebSocket` client against a gateway on a real socket (in process, or the binary with
 * GATEWAY_BIN) and the fake upstreams: the events of a `response.create` message are those of the same body
 * over SSE, messages are answered in turn and chain with `previous_response_id`, a prewarm calls no upstream,
 * every message is a request of its own (usage record, rate limit), a bad token cannot open the socket,
 * closing it aborts the upstream call, a message that is not a `response.create` is answered with a 400
 * error event (one nested deeper than `max_json_depth` with `json_too_deep`, as over HTTP), and a message's
 * `stream_id` is echoed on its events.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { FAKE_ANSWER, FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import {
  type FakeNativeUpstream,
  NATIVE_ENCRYPTED,
  NATIVE_KEY,
  startFakeNativeResponses,
} from "../helpers/fake_openai_responses.ts";
import { startGateway, type TestGateway, waitForLogCount } from "../helpers/gateway.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";
import { backstop } from "../helpers/backstop.ts";

const TOKEN = "gw-ws-token-0123456789abcdef";
const LIMITED = "gw-ws-rpm-token-0123456789abcdef";

type Json = Record<string, unknown>;

interface Setup {
  gw: TestGateway;
  chat: FakeUpstream;
  native: FakeNativeUpstream;
}

/** Runs `fn` against a gateway and its fakes; `server` adds to the config's `server:` section. */
async function withSetup(fn: (s: Setup) => Promise<void>, server = "") {
  const chat = startFakeOpenAI();
  const native = startFakeNativeResponses();
  const gw = await startGateway(`
server: { host: 127.0.0.1, port: 0${server} }
providers:
  chat: { type: openai, base_url: "${chat.baseURL}", api_key: "${FAKE_KEY}" }
  native: { type: openai, base_url: "${native.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
  native-b: { type: openai, base_url: "${native.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
models:
  chat-ok: { type: chat, targets: [ { provider: chat, model: gpt-ok } ] }
  chat-hang: { type: chat, targets: [ { provider: chat, model: gpt-hang } ] }
  native-ok: { type: chat, targets: [ { provider: native, model: resp-ok } ] }
  native-b-ok: { type: chat, targets: [ { provider: native-b, model: resp-ok } ] }
tokens:
  - { name: ws, environment: test, sha256: ${hashToken(TOKEN)}, models: ["*"] }
  - { name: ws-rpm, environment: test, sha256: ${hashToken(LIMITED)}, models: ["*"], limits: { rpm: 2 } }
`);
  try {
    await fn({ gw, chat, native });
  } finally {
    await gw.stop();
    await chat.stop();
    await native.stop();
  }
}

/** A WebSocket client that queues what it receives. */
class Client {
  readonly received: Json[] = [];
  #waiting: (() => void) | null = null;
  closed: Promise<CloseEvent>;

  private constructor(readonly ws: WebSocket) {
    ws.onmessage = (e) => {
      this.received.push(JSON.parse(String(e.data)));
      this.#waiting?.();
    };
    this.closed = new Promise((r) => ws.addEventListener("close", (e) => r(e), { once: true }));
  }

  /** Opens a socket on the gateway's `/v1/responses`; rejects when the handshake fails. */
  static open(gw: TestGateway, token: string, requestId?: string): Promise<Client> {
    const url = gw.url.replace(/^http/, "ws") + "/v1/responses";
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (requestId !== undefined) headers["x-request-id"] = requestId;
    // Deno's WebSocket takes handshake headers as an extension of the standard constructor.
    const ws = new WebSocket(url, { headers } as unknown as string[]);
    return new Promise((resolve, reject) => {
      ws.onopen = () => resolve(new Client(ws));
      ws.onerror = () => reject(new Error("handshake failed"));
    });
  }

  send(event: Json | string) {
    this.ws.send(typeof event === "string" ? event : JSON.stringify(event));
  }

  /** The next message. */
  async next(timeoutMs = 10_000): Promise<Json> {
    const deadline = Date.now() + timeoutMs;
    while (this.received.length === 0) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error("no message in time");
      await new Promise<void>((r) => {
        const timer = setTimeout(r, left);
        this.#waiting = () => {
          clearTimeout(timer);
          r();
        };
      });
      this.#waiting = null;
    }
    return this.received.shift()!;
  }

  /** The events of one answer: up to its `response.completed`/`failed`/`incomplete`, or one `error` event. */
  async answer(): Promise<Json[]> {
    const events: Json[] = [];
    while (true) {
      const event = await this.next();
      events.push(event);
      const type = String(event.type);
      if (type === "error" && events.length === 1) return events;
      if (["response.completed", "response.failed", "response.incomplete"].includes(type)) return events;
    }
  }

  close() {
    this.ws.close();
  }
}

/** The events the same body gets over SSE. */
async function overSse(gw: TestGateway, body: Json): Promise<Json[]> {
  const response = await fetch(`${gw.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: true }),
  });
  assert.equal(response.status, 200);
  const text = await response.text();
  return text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
}

const types = (events: Json[]) => events.map((e) => e.type);
const responseOf = (events: Json[]) => events.at(-1)!.response as Json;

Deno.test("websocket: the events equal those over SSE, on a translated and a native alias", async () => {
  await withSetup(async ({ gw }) => {
    const client = await Client.open(gw, TOKEN);
    try {
      for (const model of ["chat-ok", "native-ok"]) {
        const body = { model, input: "Say hello." };
        client.send({ type: "response.create", ...body });
        const events = await client.answer();
        assert.deepEqual(types(events), types(await overSse(gw, body)), model);
        assert.equal(events.at(-1)!.type, "response.completed", model);
        assert.equal(responseOf(events).model, model);
        assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i), model);
      }
    } finally {
      client.close();
    }
  });
});

Deno.test("websocket: stream_id is echoed on every event of its answer and its error event, never sent upstream", async () => {
  await withSetup(async ({ gw, chat, native }) => {
    const client = await Client.open(gw, TOKEN);
    try {
      for (const model of ["chat-ok", "native-ok"]) {
        client.send({ type: "response.create", stream_id: `lane.${model}`, model, input: "Say hello." });
        const events = await client.answer();
        assert.equal(events.at(-1)!.type, "response.completed", model);
        assert.deepEqual(events.filter((e) => e.stream_id !== `lane.${model}`), [], model);
      }
      assert.equal(native.requests.length, 1);
      assert.equal(native.requests[0].body.stream_id, undefined);
      assert.ok(!JSON.stringify(chat.requests[0].body).includes("stream_id"));
      // A message without one gets events without one.
      client.send({ type: "response.create", model: "chat-ok", input: "Say hello." });
      assert.ok((await client.answer()).every((e) => !("stream_id" in e)));
      // A refused message's error event carries it too.
      client.send({ type: "response.create", stream_id: "agent_1", model: "no-such-alias", input: "hi" });
      const [refused] = await client.answer();
      assert.deepEqual([refused.type, refused.stream_id], ["error", "agent_1"]);
      // An invalid one is the client's mistake, named.
      for (const streamId of ["bad lane!", "x".repeat(257), 7]) {
        client.send({ type: "response.create", stream_id: streamId, model: "chat-ok", input: "hi" });
        const [invalid] = await client.answer();
        assert.deepEqual([invalid.type, invalid.status, (invalid.error as Json).param], [
          "error",
          400,
          "stream_id",
        ]);
      }
      assert.equal(chat.requests.length, 2);
    } finally {
      client.close();
    }
  });
});

Deno.test("websocket: two messages on one connection, the second chained from the first; one without input refused", async () => {
  await withSetup(async ({ gw, chat }) => {
    const client = await Client.open(gw, TOKEN);
    try {
      client.send({ type: "response.create", model: "chat-ok", input: "My name is Ada." });
      const first = responseOf(await client.answer());
      client.send({
        type: "response.create",
        model: "chat-ok",
        input: "What is my name?",
        previous_response_id: first.id,
      });
      const second = await client.answer();
      assert.equal(second.at(-1)!.type, "response.completed");
      assert.equal(responseOf(second).previous_response_id, first.id);
      const messages = JSON.stringify(chat.requests.at(-1)!.body.messages);
      assert.ok(messages.includes("My name is Ada.") && messages.includes(FAKE_ANSWER), messages);
      // A message with no input is refused before any upstream call, chained or not: the conversation alone
      // ends with the model's answer (a prefill to an Anthropic target).
      const calls = chat.requests.length;
      client.send({ type: "response.create", model: "chat-ok", previous_response_id: first.id });
      const [refused] = await client.answer();
      assert.deepEqual([refused.type, refused.status, refused.error], ["error", 400, {
        message: "Missing required parameter: 'input'.",
        type: "invalid_request_error",
        param: "input",
        code: "missing_required_parameter",
      }]);
      assert.equal(chat.requests.length, calls);
    } finally {
      client.close();
    }
  });
});

Deno.test("websocket: store:false responses chain within their connection only (Codex's turns), on both alias kinds", async () => {
  await withSetup(async ({ gw, chat, native }) => {
    for (const model of ["chat-ok", "native-ok"]) {
      const client = await Client.open(gw, TOKEN);
      try {
        // Codex's session: a prewarm, then turns each chained to the one before, none of them stored.
        client.send({
          type: "response.create",
          model,
          store: false,
          generate: false,
          input: "The code is 42.",
        });
        const prewarm = responseOf(await client.answer());
        client.send({
          type: "response.create",
          model,
          store: false,
          input: "My name is Ada.",
          previous_response_id: prewarm.id,
        });
        const first = await client.answer();
        assert.equal(first.at(-1)!.type, "response.completed", JSON.stringify(first.at(-1)));
        client.send({
          type: "response.create",
          model,
          store: false,
          input: "What is the code, and my name?",
          previous_response_id: responseOf(first).id,
        });
        const second = await client.answer();
        assert.equal(second.at(-1)!.type, "response.completed", JSON.stringify(second.at(-1)));
        // The upstream got the whole conversation: the prewarm's input, the first turn and its answer.
        const sent = JSON.stringify(
          model === "chat-ok" ? chat.requests.at(-1)!.body.messages : native.requests.at(-1)!.body.input,
        );
        assert.ok(sent.includes("The code is 42.") && sent.includes("My name is Ada."), sent);
        // Nothing was stored: over HTTP, or from another connection, the id is not found.
        const res = await fetch(`${gw.baseURL}/responses/${responseOf(first).id}`, {
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        assert.equal(res.status, 404);
        await res.body?.cancel();
        const other = await Client.open(gw, TOKEN);
        try {
          other.send({
            type: "response.create",
            model,
            input: "Go on.",
            previous_response_id: responseOf(first).id,
          });
          const refused = await other.answer();
          assert.deepEqual([refused[0].type, refused[0].status], ["error", 404]);
        } finally {
          other.close();
        }
      } finally {
        client.close();
      }
    }
  });
});

// Was BUG: the next turn was resent without the reasoning the same provider's model had produced, though it was
// asked for with include (Codex's turns, `store: false`): the model lost its own chain of thought every turn.
Deno.test("websocket: store:false turns on a native target get their own reasoning back, another provider none", async () => {
  await withSetup(async ({ gw, native }) => {
    const client = await Client.open(gw, TOKEN);
    try {
      const turn = async (model: string, input: string, previous?: string) => {
        client.send({
          type: "response.create",
          model,
          store: false,
          include: ["reasoning.encrypted_content"],
          input,
          ...(previous === undefined ? {} : { previous_response_id: previous }),
        });
        const events = await client.answer();
        assert.equal(events.at(-1)!.type, "response.completed", JSON.stringify(events.at(-1)));
        return { response: responseOf(events), sent: native.requests.at(-1)!.body };
      };
      const first = await turn("native-ok", "Plan the refactor.");
      const output = first.response.output as Json[];
      const reasoning = output.find((item) => item.type === "reasoning")!;
      assert.ok(String(reasoning.encrypted_content).startsWith(NATIVE_ENCRYPTED));
      const second = await turn("native-ok", "Go on.", String(first.response.id));
      const resent = second.sent.input as Json[];
      assert.equal(second.sent.previous_response_id, undefined, "nothing upstream holds a store:false turn");
      assert.deepEqual(
        resent.filter((item) => item.type === "reasoning"),
        [{ type: "reasoning", summary: reasoning.summary, encrypted_content: reasoning.encrypted_content }],
        "the model's own reasoning comes back with its encrypted content",
      );
      // The same conversation on another provider: its reasoning is another model's state, left out.
      const third = await turn("native-b-ok", "And then?", String(second.response.id));
      const items = third.sent.input as Json[];
      assert.ok(items.some((item) => item.content === "Go on."), JSON.stringify(items));
      assert.deepEqual(items.filter((item) => item.type === "reasoning"), []);
    } finally {
      client.close();
    }
  });
});

// Was BUG: a stored response chained from a store:false one could be got but not chained from (its earlier
// link was only ever on the connection: previous_response_not_found), on this connection or any other.
Deno.test("websocket: a stored response chained from a store:false one stays chainable, here and over HTTP", async () => {
  await withSetup(async ({ gw, chat }) => {
    const client = await Client.open(gw, TOKEN);
    let second: Json;
    try {
      client.send({ type: "response.create", model: "chat-ok", store: false, input: "My name is Ada." });
      const first = responseOf(await client.answer());
      client.send({
        type: "response.create",
        model: "chat-ok",
        input: "I live in Paris.",
        previous_response_id: first.id,
      });
      second = responseOf(await client.answer());
      assert.equal(second.status, "completed", JSON.stringify(second));
      client.send({
        type: "response.create",
        model: "chat-ok",
        store: false,
        input: "What is my name?",
        previous_response_id: second.id,
      });
      const third = await client.answer();
      assert.equal(third.at(-1)!.type, "response.completed", JSON.stringify(third.at(-1)));
      const onSocket = JSON.stringify(chat.requests.at(-1)!.body.messages);
      assert.ok(onSocket.includes("My name is Ada.") && onSocket.includes("I live in Paris."), onSocket);
    } finally {
      client.close();
    }
    const overHttp = await fetch(`${gw.baseURL}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-ok", input: "Where do I live?", previous_response_id: second.id }),
    });
    assert.equal(overHttp.status, 200, await overHttp.clone().text());
    await overHttp.body?.cancel();
    const sent = JSON.stringify(chat.requests.at(-1)!.body.messages);
    assert.ok(sent.includes("My name is Ada.") && sent.includes("I live in Paris."), sent);
  });
});

Deno.test("websocket: messages sent together are answered in turn", async () => {
  await withSetup(async ({ gw }) => {
    const client = await Client.open(gw, TOKEN);
    try {
      client.send({ type: "response.create", model: "chat-ok", input: "one" });
      client.send({ type: "response.create", model: "native-ok", input: "two" });
      assert.equal(responseOf(await client.answer()).model, "chat-ok");
      assert.equal(responseOf(await client.answer()).model, "native-ok");
    } finally {
      client.close();
    }
  });
});

Deno.test("websocket: a prewarm calls no upstream and can be chained from", async () => {
  await withSetup(async ({ gw, chat }) => {
    const client = await Client.open(gw, TOKEN);
    try {
      client.send({
        type: "response.create",
        model: "chat-ok",
        input: "Remember: the code is 42.",
        generate: false,
      });
      const prewarm = await client.answer();
      assert.deepEqual(types(prewarm), ["response.created", "response.completed"]);
      const empty = responseOf(prewarm);
      assert.deepEqual(empty.output, []);
      assert.equal(empty.status, "completed");
      assert.equal(chat.requests.length, 0);
      client.send({
        type: "response.create",
        model: "chat-ok",
        input: "What is the code?",
        previous_response_id: empty.id,
      });
      const answer = await client.answer();
      assert.equal(answer.at(-1)!.type, "response.completed");
      assert.equal(chat.requests.length, 1);
      assert.ok(JSON.stringify(chat.requests[0].body.messages).includes("the code is 42"));
    } finally {
      client.close();
    }
  });
});

Deno.test("websocket: one usage record per message, endpoint responses, streamed", async () => {
  await withSetup(async ({ gw }) => {
    const client = await Client.open(gw, TOKEN, "ws-usage-test");
    try {
      client.send({ type: "response.create", model: "chat-ok", input: "one" });
      await client.answer();
      client.send({ type: "response.create", model: "native-ok", input: "two" });
      await client.answer();
      client.send({ type: "response.create", model: "chat-ok", input: "three", generate: false });
      await client.answer();
    } finally {
      client.close();
    }
    type Row = {
      request_id: string;
      endpoint: string;
      stream: number;
      status: number;
      prompt_tokens: number;
    };
    const rows = await pollUsageRows<Row>(gw, (r) => r.length >= 3, {
      sql: "SELECT * FROM usage WHERE request_id LIKE 'ws-usage-test%' ORDER BY request_id",
      settleMs: 200,
    });
    assert.deepEqual(rows.map((r) => r.request_id), [
      "ws-usage-test.1",
      "ws-usage-test.2",
      "ws-usage-test.3",
    ]);
    for (const row of rows) {
      assert.equal(row.endpoint, "responses");
      assert.equal(row.stream, 1);
      assert.equal(row.status, 200);
    }
    assert.ok(rows[0].prompt_tokens > 0 && rows[1].prompt_tokens > 0);
    assert.equal(rows[2].prompt_tokens, 0);
  });
});

Deno.test("websocket: a message over the token's rate limit gets a 429 error event; the socket stays open", async () => {
  await withSetup(async ({ gw }) => {
    const client = await Client.open(gw, LIMITED);
    try {
      for (let i = 0; i < 2; i++) {
        client.send({ type: "response.create", model: "chat-ok", input: "hi" });
        assert.equal((await client.answer()).at(-1)!.type, "response.completed");
      }
      client.send({ type: "response.create", model: "chat-ok", input: "hi" });
      const [denied] = await client.answer();
      assert.equal(denied.type, "error");
      assert.equal(denied.status, 429);
      assert.equal((denied.error as Json).type, "requests");
      client.send("not json");
      assert.equal((await client.next()).status, 400);
      assert.equal(client.ws.readyState, WebSocket.OPEN);
    } finally {
      client.close();
    }
  });
});

Deno.test("websocket: a bad token fails the handshake", async () => {
  await withSetup(async ({ gw }) => {
    await assert.rejects(Client.open(gw, "gw-not-a-token-0123456789abcdef"), /handshake failed/);
    // The refusal is the gateway's usual 401 JSON.
    const refused = await fetch(`${gw.url}/v1/responses`, {
      headers: {
        authorization: "Bearer gw-not-a-token-0123456789abcdef",
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
      },
    });
    assert.equal(refused.status, 401);
    assert.equal(((await refused.json()).error as Json).code, "invalid_api_key");
  });
});

Deno.test("websocket: closing the socket mid-stream aborts the upstream request", async () => {
  await withSetup(async ({ gw, chat }) => {
    const client = await Client.open(gw, TOKEN);
    client.send({ type: "response.create", model: "chat-hang", input: "hi" });
    while (!String((await client.next()).type).endsWith(".delta"));
    client.close();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise((_, reject) =>
      timer = setTimeout(() => reject(new Error("not aborted")), 5_000)
    );
    await Promise.race([chat.aborted.promise, timeout]).finally(() => clearTimeout(timer));
  });
});

Deno.test("websocket: a message that is not JSON, or not a response.create, gets a 400 error event", async () => {
  await withSetup(async ({ gw }) => {
    const client = await Client.open(gw, TOKEN, "ws-bad-test");
    try {
      const cases: [string, string | null][] = [
        ["{not json", null],
        [JSON.stringify({ type: "response.cancel" }), "type"],
        [JSON.stringify({ model: "chat-ok", input: "no type" }), "type"],
        [JSON.stringify([1, 2]), null],
        [
          JSON.stringify({ type: "response.create", model: "chat-ok", input: "x", generate: "no" }),
          "generate",
        ],
        [JSON.stringify({ type: "response.create", input: "no model" }), "model"],
      ];
      for (const [message, param] of cases) {
        client.send(message);
        const event = await client.next();
        assert.equal(event.type, "error", message);
        assert.equal(event.status, 400, message);
        const error = event.error as Json;
        assert.equal(error.type, "invalid_request_error", message);
        assert.equal(error.param, param, message);
      }
      // Still usable.
      client.send({ type: "response.create", model: "chat-ok", input: "hi" });
      assert.equal((await client.answer()).at(-1)!.type, "response.completed");
    } finally {
      client.close();
    }
    // Each message is one request, refused ones too: one record each, numbered as sent.
    type Row = { request_id: string; endpoint: string; status: number; error_code: string | null };
    const rows = await pollUsageRows<Row>(gw, (r) => r.length >= 7, {
      sql: "SELECT * FROM usage WHERE request_id LIKE 'ws-bad-test.%' ORDER BY request_id",
      settleMs: 200,
    });
    assert.deepEqual(rows.map((r) => r.request_id), [1, 2, 3, 4, 5, 6, 7].map((n) => `ws-bad-test.${n}`));
    assert.deepEqual(rows.map((r) => r.status), [400, 400, 400, 400, 400, 400, 200]);
    assert.ok(rows.every((r) => r.endpoint === "responses"));
    assert.equal(rows[0].error_code, "invalid_json");
    const wsLine = (l: Record<string, unknown>) =>
      l.msg === "request" && String(l.request_id).startsWith("ws-bad-test.");
    assert.equal((await waitForLogCount(gw, wsLine, 7)).length, 7, "one access-log line each");
  });
});

Deno.test("websocket: a message nested deeper than max_json_depth gets the 400 json_too_deep error event, as over HTTP; recorded, and the socket stays open", async () => {
  await withSetup(async ({ gw }) => {
    const levels = 100_000;
    // 200 KB, well under max_body_size: Bun's JSON.stringify overflowed its stack on it, and the gateway closed
    // the connection with 1011, leaving the message no record and no log line.
    const deep = '{"type":"response.create","model":"chat-ok","input":"hi","metadata":{"x":' +
      "[".repeat(levels) + "]".repeat(levels) + "}}";
    const client = await Client.open(gw, TOKEN, "ws-deep-test");
    try {
      client.send(deep);
      const refused = await client.next();
      assert.equal(refused.type, "error");
      assert.equal(refused.status, 400);
      const error = refused.error as Json;
      assert.equal(error.type, "invalid_request_error");
      assert.equal(error.code, "json_too_deep");
      // The same body over HTTP gets the same error.
      const http = await fetch(`${gw.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: deep.replace('"type":"response.create",', ""),
      });
      assert.equal(http.status, 400);
      assert.deepEqual((await http.json()).error, error);
      // Still usable.
      client.send({ type: "response.create", model: "chat-ok", input: "hi" });
      assert.equal((await client.answer()).at(-1)!.type, "response.completed");
      assert.equal(client.ws.readyState, WebSocket.OPEN);
    } finally {
      client.close();
    }
    type Row = { request_id: string; status: number; error_code: string | null };
    const rows = await pollUsageRows<Row>(gw, (r) => r.length >= 2, {
      sql:
        "SELECT request_id, status, error_code FROM usage WHERE request_id LIKE 'ws-deep-test.%' ORDER BY request_id",
      settleMs: 200,
    });
    assert.deepEqual(rows.map((r) => [r.request_id, r.status, r.error_code]), [
      ["ws-deep-test.1", 400, "json_too_deep"],
      ["ws-deep-test.2", 200, null],
    ]);
    const line = (l: Record<string, unknown>) => l.msg === "request" && l.request_id === "ws-deep-test.1";
    assert.equal((await waitForLogCount(gw, line, 1)).length, 1, "its access-log line");
  });
});

Deno.test("websocket: shutdown closes an idle socket with 1001 and does not wait for it", async () => {
  await withSetup(async ({ gw }) => {
    const client = await Client.open(gw, TOKEN);
    client.send({ type: "response.create", model: "chat-ok", input: "hi" });
    await client.answer();
    // Ten minutes of grace (the binary's shutdown_timeout, and the stop's here): a stop that waited for the idle
    // socket would be held that long, past the backstop.
    await backstop(gw.stop(600_000), "the stop with an idle socket open");
    assert.equal((await client.closed).code, 1001);
    // withSetup stops it again: a second stop must be harmless.
    gw.stop = () => Promise.resolve();
  }, ", shutdown_timeout: 10m");
});

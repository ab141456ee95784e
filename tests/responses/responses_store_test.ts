/**
 * Stored responses end to end, with the official `openai` SDK against a gateway on a real socket (its usage
 * database is SQLite, so they are stored there) and a fake OpenAI-compatible chat upstream that records what
 * it receives: `previous_response_id` chains, `GET` / `DELETE /v1/responses/{id}`,
 * `GET /v1/responses/{id}/input_items`, `store: false`, and that one token cannot see another's responses.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { FAKE_ANSWER, FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { NARROW_TOKEN, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import { pollUsageRows, usageDbPath } from "../helpers/usage_rows.ts";
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import { MAX_CHAIN } from "../../lib/usage/responses_store.ts";

function configFor(fake: FakeUpstream): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  fake: { type: openai, base_url: "${fake.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-fake: { type: chat, targets: [ { provider: fake, model: gpt-ok } ] }
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: TestGateway, fake: FakeUpstream, client: OpenAI) => Promise<void>) {
  return withFakeGateway(startFakeOpenAI, configFor, fn);
}

/** A raw call with `token`, answered as status and JSON body. */
async function call(
  gw: TestGateway,
  method: string,
  path: string,
  token = TEST_TOKEN,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${gw.baseURL}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** The chat messages the fake upstream received last, as role and text. */
function lastMessages(fake: FakeUpstream): { role: string; content: unknown }[] {
  const messages = fake.requests.at(-1)!.body.messages as { role: string; content: unknown }[];
  return messages.map(({ role, content }) => ({ role, content }));
}

function assertNotFound(answer: { status: number; body: Record<string, unknown> }, id: string, what: string) {
  assert.equal(answer.status, 404, what);
  assert.deepEqual(answer.body, {
    error: {
      message: `Response with id '${id}' not found.`,
      type: "invalid_request_error",
      param: null,
      code: null,
    },
  }, what);
}

Deno.test("stored responses: a three-turn previous_response_id chain reaches the upstream whole", async () => {
  await withGateway(async (_gw, fake, client) => {
    const first = await client.responses.create({
      model: "chat-fake",
      instructions: "Answer briefly.",
      input: "My name is Ada.",
    });
    assert.equal((first as unknown as { store: boolean }).store, true);
    const second = await client.responses.create({
      model: "chat-fake",
      input: "What is my name?",
      previous_response_id: first.id,
    });
    assert.equal(second.previous_response_id, first.id);
    assert.deepEqual(lastMessages(fake), [
      { role: "user", content: "My name is Ada." },
      { role: "assistant", content: FAKE_ANSWER },
      { role: "user", content: "What is my name?" },
    ]);
    // The third turn streams, with its own instructions (earlier ones are not carried over, as in OpenAI's API).
    const third = await client.responses.stream({
      model: "chat-fake",
      instructions: "Be kind.",
      input: [{ role: "user", content: [{ type: "input_text", text: "Thanks!" }] }],
      previous_response_id: second.id,
    }).finalResponse();
    assert.deepEqual(lastMessages(fake), [
      { role: "system", content: "Be kind." },
      { role: "user", content: "My name is Ada." },
      { role: "assistant", content: FAKE_ANSWER },
      { role: "user", content: "What is my name?" },
      { role: "assistant", content: FAKE_ANSWER },
      { role: "user", content: [{ type: "text", text: "Thanks!" }] },
    ]);
    // The streamed response was stored as it was answered, and chains on.
    const stored = await client.responses.retrieve(third.id);
    assert.equal(stored.status, "completed");
    assert.equal(stored.output_text, FAKE_ANSWER);
    assert.deepEqual(stored.output.map((item) => item.id), third.output.map((item) => item.id));
    assert.deepEqual(stored.usage, third.usage);
    assert.equal(stored.previous_response_id, second.id);
    await client.responses.create({ model: "chat-fake", input: "Bye.", previous_response_id: third.id });
    // Six earlier turns (the streamed answer's text among them), no instructions, then the new input.
    assert.deepEqual(lastMessages(fake).map((m) => m.role), [
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
    ]);
    assert.deepEqual(lastMessages(fake).slice(-2), [
      { role: "assistant", content: FAKE_ANSWER },
      { role: "user", content: "Bye." },
    ]);
  });
});

// Was BUG: deleting (or retention pruning) an earlier response made every later one unchainable (a 404 naming
// the response that still existed); OpenAI continues from the responses that remain.
Deno.test("stored responses: after an earlier response is deleted, a later one chains from what remains", async () => {
  await withGateway(async (gw, fake, client) => {
    const first = await client.responses.create({ model: "chat-fake", input: "My name is Ada." });
    const second = await client.responses.create({
      model: "chat-fake",
      input: "I live in Paris.",
      previous_response_id: first.id,
    });
    assert.equal((await call(gw, "DELETE", `/responses/${first.id}`)).status, 200);
    const third = await call(gw, "POST", "/responses", TEST_TOKEN, {
      model: "chat-fake",
      input: "Where do I live?",
      previous_response_id: second.id,
    });
    assert.equal(third.status, 200, JSON.stringify(third.body));
    assert.deepEqual(lastMessages(fake), [
      { role: "user", content: "I live in Paris." },
      { role: "assistant", content: FAKE_ANSWER },
      { role: "user", content: "Where do I live?" },
    ]);
  });
});

Deno.test("stored responses: GET answers the Response object; DELETE removes it", async () => {
  await withGateway(async (gw, _fake, client) => {
    const created = await client.responses.create({ model: "chat-fake", input: "Hi", metadata: { k: "v" } });
    const got = await client.responses.retrieve(created.id);
    assert.deepEqual(got, created);
    assert.equal(got.output_text, FAKE_ANSWER);

    const deleted = await call(gw, "DELETE", `/responses/${created.id}`);
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, { id: created.id, object: "response", deleted: true });
    assertNotFound(await call(gw, "GET", `/responses/${created.id}`), created.id, "GET after DELETE");
    assertNotFound(await call(gw, "DELETE", `/responses/${created.id}`), created.id, "DELETE twice");
    assertNotFound(
      await call(gw, "GET", `/responses/${created.id}/input_items`),
      created.id,
      "input_items after DELETE",
    );
    await assert.rejects(client.responses.retrieve("resp_never"), (err: unknown) => {
      assert.ok(err instanceof OpenAI.NotFoundError);
      return true;
    });
  });
});

Deno.test("stored responses: cancel is OpenAI's 400 for the caller's own response, the 404 for any other; one record each", async () => {
  await withGateway(async (gw, fake, client) => {
    const mine = await client.responses.create({ model: "chat-fake", input: "Hi" });
    await assert.rejects(client.responses.cancel(mine.id), (err: unknown) => {
      assert.ok(err instanceof OpenAI.BadRequestError, String(err));
      assert.deepEqual(err.error, {
        message: "Cannot cancel a synchronous response.",
        type: "invalid_request_error",
        param: null,
        code: null,
      });
      return true;
    });
    const send = async (method: string, path: string, token: string, requestId: string) => {
      const res = await fetch(`${gw.baseURL}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "x-request-id": requestId },
      });
      return { status: res.status, body: await res.json() };
    };
    const cancel = (id: string, token: string, requestId: string) =>
      send("POST", `/responses/${id}/cancel`, token, requestId);
    assertNotFound(await cancel("resp_never", TEST_TOKEN, "cancel-unknown"), "resp_never", "unknown id");
    assertNotFound(await cancel(mine.id, NARROW_TOKEN, "cancel-other"), mine.id, "another token's");
    const own = await cancel(mine.id, TEST_TOKEN, "cancel-own");
    assert.equal(own.status, 400);
    assert.deepEqual(await client.responses.retrieve(mine.id), mine, "the response is as it was");
    assert.equal(fake.requests.length, 1, "no upstream call");

    // Records are written in order: once the last request's is there, every earlier one's is too.
    assert.equal((await send("GET", `/responses/${mine.id}`, TEST_TOKEN, "last")).status, 200);
    type Row = { request_id: string; endpoint: string; status: number };
    const rows = await pollUsageRows<Row>(gw, (r) => r.some((row) => row.request_id === "last"));
    assert.equal(rows.length, 7, "create, four cancels and two GETs: one record each");
    const byId = new Map(rows.map((row) => [row.request_id, row]));
    for (
      const [id, status] of [["cancel-unknown", 404], ["cancel-other", 404], ["cancel-own", 400]] as const
    ) {
      assert.equal(byId.get(id)?.status, status, id);
      assert.equal(byId.get(id)?.endpoint, "responses", id);
    }
  });
});

Deno.test("stored responses: another token gets the same 404 as for an unknown id, everywhere", async () => {
  await withGateway(async (gw, fake, client) => {
    const mine = await client.responses.create({ model: "chat-fake", input: "secret" });
    const id = mine.id;
    assertNotFound(await call(gw, "GET", `/responses/${id}`, NARROW_TOKEN), id, "GET");
    assertNotFound(await call(gw, "GET", `/responses/${id}/input_items`, NARROW_TOKEN), id, "input_items");
    assertNotFound(await call(gw, "DELETE", `/responses/${id}`, NARROW_TOKEN), id, "DELETE");
    const before = fake.requests.length;
    const chained = await call(gw, "POST", "/responses", NARROW_TOKEN, {
      model: "chat-fake",
      input: "what did they say?",
      previous_response_id: id,
    });
    assert.equal(chained.status, 404);
    assert.deepEqual(chained.body, {
      error: {
        message: `Previous response with id '${id}' not found.`,
        type: "invalid_request_error",
        param: "previous_response_id",
        code: "previous_response_not_found",
      },
    });
    const unknown = await call(gw, "POST", "/responses", NARROW_TOKEN, {
      model: "chat-fake",
      input: "x",
      previous_response_id: "resp_unknown",
    });
    assert.deepEqual(unknown.body, {
      error: {
        ...(chained.body.error as object),
        message: "Previous response with id 'resp_unknown' not found.",
      },
    });
    assert.equal(fake.requests.length, before, "a refused chain never reaches the upstream");
    // The other token's DELETE deleted nothing.
    assert.deepEqual(await client.responses.retrieve(id), mine);
  });
});

Deno.test("stored responses: store: false keeps nothing, and cannot be chained from", async () => {
  await withGateway(async (gw, _fake, client) => {
    const plain = await client.responses.create({ model: "chat-fake", input: "Hi", store: false });
    assert.equal((plain as unknown as { store: boolean }).store, false);
    assertNotFound(await call(gw, "GET", `/responses/${plain.id}`), plain.id, "GET");
    assertNotFound(await call(gw, "GET", `/responses/${plain.id}/input_items`), plain.id, "input_items");
    const streamed = await client.responses.stream({ model: "chat-fake", input: "Hi", store: false })
      .finalResponse();
    assertNotFound(await call(gw, "GET", `/responses/${streamed.id}`), streamed.id, "GET streamed");
    const chained = await call(gw, "POST", "/responses", TEST_TOKEN, {
      model: "chat-fake",
      input: "again",
      previous_response_id: plain.id,
    });
    assert.equal(chained.status, 404);
    assert.equal((chained.body.error as Record<string, unknown>).param, "previous_response_id");
  });
});

Deno.test("stored responses: input_items pages the request's own items, as OpenAI's list object", async () => {
  await withGateway(async (gw, _fake, client) => {
    const input = ["one", "two", "three"].map((text) => ({ role: "user" as const, content: text }));
    const created = await client.responses.create({ model: "chat-fake", input });
    const base = `/responses/${created.id}/input_items`;

    // Newest first by default; every item has an id.
    const all = await call(gw, "GET", base);
    assert.equal(all.status, 200);
    assert.equal(all.body.object, "list");
    const data = all.body.data as { id: string; type: string; role: string; content: unknown }[];
    // Listed as OpenAI lists them: a string content is one input_text part.
    assert.deepEqual(
      data.map((item) => item.content),
      ["three", "two", "one"].map((text) => [{ type: "input_text", text }]),
    );
    for (const item of data) {
      assert.equal(item.type, "message");
      assert.match(item.id, /^msg_[0-9a-f]{48}$/);
    }
    assert.equal(all.body.first_id, data[0].id);
    assert.equal(all.body.last_id, data[2].id);
    assert.equal(all.body.has_more, false);

    const page1 = await call(gw, "GET", `${base}?order=asc&limit=2`);
    assert.deepEqual((page1.body.data as { content: { text: string }[] }[]).map((i) => i.content[0].text), [
      "one",
      "two",
    ]);
    assert.equal(page1.body.has_more, true);
    const page2 = await call(gw, "GET", `${base}?order=asc&limit=2&after=${page1.body.last_id}`);
    assert.deepEqual((page2.body.data as { content: { text: string }[] }[]).map((i) => i.content[0].text), [
      "three",
    ]);
    assert.equal(page2.body.has_more, false);

    // The SDK's paging walks the same list.
    const seen: unknown[] = [];
    for await (const item of client.responses.inputItems.list(created.id, { limit: 1, order: "asc" })) {
      seen.push((item as { content: { text: string }[] }).content[0].text);
    }
    assert.deepEqual(seen, ["one", "two", "three"]);

    for (const [query, param] of [["limit=0", "limit"], ["limit=x", "limit"], ["order=up", "order"]]) {
      const bad = await call(gw, "GET", `${base}?${query}`);
      assert.equal(bad.status, 400, query);
      const error = bad.body.error as Record<string, unknown>;
      assert.equal(error.type, "invalid_request_error");
      assert.equal(error.param, param);
    }
    const badCursor = await call(gw, "GET", `${base}?after=msg_nope`);
    assert.equal(badCursor.status, 400);
    assert.equal((badCursor.body.error as Record<string, unknown>).param, "after");
  });
});

Deno.test("stored responses: item references resolve from the token's own responses; others get one 404", async () => {
  await withGateway(async (gw, fake, client) => {
    const first = await client.responses.create({ model: "chat-fake", input: "My name is Ada." });
    const answerId = first.output[0].id!;
    const firstItems = (await call(gw, "GET", `/responses/${first.id}/input_items`)).body.data as {
      id: string;
    }[];
    const inputId = firstItems[0].id;
    const second = await client.responses.create({
      model: "chat-fake",
      input: [
        { type: "item_reference", id: inputId },
        { type: "item_reference", id: answerId },
        { role: "user", content: "What is my name?" },
      ],
    });
    assert.equal(second.status, "completed");
    assert.deepEqual(lastMessages(fake), [
      { role: "user", content: "My name is Ada." },
      { role: "assistant", content: FAKE_ANSWER },
      { role: "user", content: "What is my name?" },
    ]);
    // The new response's input holds the items themselves, so it can be listed, chained and referenced again.
    const listed = (await call(gw, "GET", `/responses/${second.id}/input_items?order=asc`)).body.data as {
      id: string;
      type: string;
    }[];
    assert.deepEqual(listed.slice(0, 2).map((item) => [item.id, item.type]), [
      [inputId, "message"],
      [answerId, "message"],
    ]);

    // Another token's item and an item that never existed get the same 404, before any upstream call.
    const upstreamCalls = fake.requests.length;
    const refer = (token: string, id: string, extra: Record<string, unknown> = {}) =>
      call(gw, "POST", "/responses", token, {
        model: "chat-fake",
        input: [{ type: "item_reference", id }, { role: "user", content: "Go on." }],
        ...extra,
      });
    const notFound = (id: string, suffix = "") => ({
      error: {
        message: `Item with id '${id}' not found.${suffix}`,
        type: "invalid_request_error",
        param: "input",
        code: null,
      },
    });
    for (
      const [answer, id] of [
        [await refer(NARROW_TOKEN, answerId), answerId],
        [await refer(NARROW_TOKEN, "msg_never_existed"), "msg_never_existed"],
        [await refer(TEST_TOKEN, "msg_never_existed"), "msg_never_existed"],
      ] as const
    ) {
      assert.equal(answer.status, 404);
      assert.deepEqual(answer.body, notFound(id));
    }
    const unstored = await refer(TEST_TOKEN, "msg_gone", { store: false });
    assert.equal(unstored.status, 404);
    assert.match(String((unstored.body.error as Record<string, unknown>).message), /`store` is set to false/);
    assert.equal(fake.requests.length, upstreamCalls, "no 404 reached the upstream");

    // A deleted response's items are gone with it.
    assert.equal((await call(gw, "DELETE", `/responses/${first.id}`)).status, 200);
    const held = await refer(TEST_TOKEN, inputId, { store: false });
    assert.equal(held.status, 200, "still held by the second response");
    await call(gw, "DELETE", `/responses/${second.id}`);
    const gone = await refer(TEST_TOKEN, inputId);
    assert.deepEqual([gone.status, gone.body], [404, notFound(inputId)]);
  });
});

/** Input of every item kind a client sends, in the shapes the SDK's types allow. */
const EVERY_KIND: OpenAI.Responses.ResponseInput = [
  { role: "developer", content: "Be brief." },
  { role: "user", content: "What time is it?" },
  {
    type: "function_call",
    id: "fc_earlier",
    call_id: "call_1",
    name: "get_time",
    arguments: "{}",
    status: "completed",
  },
  { type: "function_call_output", call_id: "call_1", output: "12:00" },
  {
    type: "message",
    role: "assistant",
    id: "msg_earlier",
    status: "completed",
    content: [{ type: "output_text", text: "Noon.", annotations: [] }],
  },
  { role: "user", content: [{ type: "input_text", text: "Thanks." }] },
];
const TIME_TOOL = {
  type: "function" as const,
  name: "get_time",
  parameters: { type: "object" },
  strict: false,
};

Deno.test("stored responses: input_items lists every item kind in order; DELETE answers OpenAI's deletion object", async () => {
  await withGateway(async (gw, _fake, client) => {
    const created = await client.responses.create({
      model: "chat-fake",
      input: EVERY_KIND,
      tools: [TIME_TOOL],
    });
    const list = await call(gw, "GET", `/responses/${created.id}/input_items?order=asc`);
    assert.equal(list.status, 200);
    const data = list.body.data as { type: string; id: string }[];
    assert.deepEqual(data.map((i) => i.type), [
      "message",
      "message",
      "function_call",
      "function_call_output",
      "message",
      "message",
    ]);
    for (const item of data) assert.equal(typeof item.id, "string", "every listed item has an id");
    const deleted = await call(gw, "DELETE", `/responses/${created.id}`);
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, { id: created.id, object: "response", deleted: true });
  });
});

// Was BUG: the conversation behind previous_response_id had no bound: 64 KiB turns rebuilt and sent upstream a
// conversation of any size. Now past 16 MiB (the store's MAX_CHAIN_BYTES) it is OpenAI's too-long 400.
Deno.test("stored responses: a conversation too long to rebuild is a 400 naming previous_response_id, sent nowhere", async () => {
  await withGateway(async (gw, fake) => {
    // Turns of 3.5 MiB under the 4 MiB body limit: four earlier turns fit in 16 MiB, five do not.
    const text = "y".repeat(3.5 * 1024 * 1024);
    let previous: string | undefined;
    for (let n = 1; n <= 5; n++) {
      const turn = await call(gw, "POST", "/responses", TEST_TOKEN, {
        model: "chat-fake",
        input: `${text} ${n}`,
        ...(previous === undefined ? {} : { previous_response_id: previous }),
      });
      assert.equal(turn.status, 200, `turn ${n}: ${JSON.stringify(turn.body).slice(0, 300)}`);
      previous = String(turn.body.id);
    }
    const sent = fake.requests.length;
    const refused = await call(gw, "POST", "/responses", TEST_TOKEN, {
      model: "chat-fake",
      input: "Go on.",
      previous_response_id: previous,
    });
    assert.equal(refused.status, 400);
    const error = refused.body.error as Record<string, unknown>;
    assert.deepEqual([error.type, error.code, error.param], [
      "invalid_request_error",
      "context_length_exceeded",
      "previous_response_id",
    ]);
    assert.match(String(error.message), new RegExp(`'${previous}' is over 16 MiB`));
    assert.equal(fake.requests.length, sent, "nothing went upstream");
    assert.equal(
      (await call(gw, "GET", `/responses/${previous}`)).status,
      200,
      "the response itself is kept",
    );
  });
});

// Was BUG: past MAX_CHAIN responses the store answered "no such response", so a client got 404
// previous_response_not_found for the response it had just been given.
Deno.test("stored responses: a conversation of more than 10,000 responses is the too-long 400, not a 404", async () => {
  await withGateway(async (gw, fake) => {
    const first = await call(gw, "POST", "/responses", TEST_TOKEN, { model: "chat-fake", input: "Hi" });
    assert.equal(first.status, 200);
    // 10,000 more turns, written straight into the gateway's database: 10,000 requests would take minutes.
    const db = new DatabaseSync(usageDbPath(gw));
    try {
      db.exec("PRAGMA busy_timeout = 10000");
      const row = db.prepare("SELECT * FROM responses WHERE id = ?").get(String(first.body.id)) as
        & Record<string, SQLInputValue>
        & { id: string };
      const insert = db.prepare(
        `INSERT INTO responses (id, owner, environment, created_at, alias, provider, native, upstream_id,
           previous_response_id, input_items, response) VALUES (?, ?, ?, ?, ?, ?, 0, NULL, ?, '[]', ?)`,
      );
      db.exec("BEGIN IMMEDIATE");
      for (let n = 1; n <= MAX_CHAIN; n++) {
        const id = `resp_turn_${n}`;
        const response = JSON.stringify({ id, object: "response", output: [] });
        const previous = n === 1 ? row.id : `resp_turn_${n - 1}`;
        insert.run(
          id,
          row.owner,
          row.environment,
          row.created_at,
          row.alias,
          row.provider,
          previous,
          response,
        );
      }
      db.exec("COMMIT");
    } finally {
      db.close();
    }
    const last = `resp_turn_${MAX_CHAIN}`;
    assert.equal((await call(gw, "GET", `/responses/${last}`)).status, 200, "the response exists");
    const sent = fake.requests.length;
    const refused = await call(gw, "POST", "/responses", TEST_TOKEN, {
      model: "chat-fake",
      input: "Go on.",
      previous_response_id: last,
    });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    const error = refused.body.error as Record<string, unknown>;
    assert.deepEqual([error.type, error.code, error.param], [
      "invalid_request_error",
      "context_length_exceeded",
      "previous_response_id",
    ]);
    assert.match(String(error.message), new RegExp(`'${last}' is over ${MAX_CHAIN} responses long`));
    assert.equal(fake.requests.length, sent, "nothing went upstream");
  });
});

// Was BUG: the list showed the items as the client sent them (a string content, no `status`, `output_text`
// parts without `logprobs`); now each is listed as the spec's `ItemResource` (lib/api/responses/
// listed_items.ts), and the list of every item kind validates against `ResponseItemList`.
Deno.test({
  name: "stored responses: the input_items list validates against the spec's ResponseItemList",
  fn: async () => {
    const schemas = await loadOpenApiSchemas();
    await withGateway(async (gw, _fake, client) => {
      const created = await client.responses.create({
        model: "chat-fake",
        input: EVERY_KIND,
        tools: [TIME_TOOL],
      });
      const list = await call(gw, "GET", `/responses/${created.id}/input_items?order=asc`);
      assert.equal(list.status, 200);
      schemas?.assert("ResponseItemList", list.body, "the input_items list");
    });
  },
});

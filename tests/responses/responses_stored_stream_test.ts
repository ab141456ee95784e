/**
 * `GET /v1/responses/{id}?stream=true` through the `openai` SDK (`responses.retrieve(id, {stream: true})`): the
 * stored Response replayed as its events, `starting_after` resuming after a sequence number, every stream
 * checked against OpenAI's published spec; and the query's refusals (`stream`, `starting_after`, `include`)
 * as 400s naming the parameter.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import { ResponsesWire } from "../helpers/responses_conformance.ts";

const schemas = await loadOpenApiSchemas();

const config = (fake: FakeUpstream) => `
server: { host: 127.0.0.1, port: 0 }
providers:
  fake: { type: openai, base_url: "${fake.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-fake: { type: chat, targets: [ { provider: fake, model: gpt-ok } ] }
${TEST_TOKENS_YAML}`;

Deno.test("stored responses: GET with stream=true replays the stored Response as its events", async () => {
  await withFakeGateway(startFakeOpenAI, config, async (gw) => {
    const wire = new ResponsesWire(schemas);
    const client = new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0, fetch: wire.fetch });
    const made = await client.responses.create({ model: "chat-fake", input: "Hi" });

    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of await client.responses.retrieve(made.id, { stream: true })) events.push(event);
    const types = events.map((e) => e.type);
    assert.equal(types[0], "response.created");
    assert.ok(types.includes("response.output_text.delta"));
    const last = events.at(-1)!;
    assert.ok(last.type === "response.completed");
    // The SDK adds `output_text` to a Response it returns, not to one inside an event.
    const { output_text: _, ...stored } = made;
    assert.deepEqual(last.response, stored, "the final event carries the stored Response");

    // Resumed after a sequence number: only the events after it, numbered as before (not a whole stream, so
    // read without the wire's check).
    const plain = new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0 });
    const rest: OpenAI.Responses.ResponseStreamEvent[] = [];
    const resumed = await plain.responses.retrieve(made.id, { stream: true, starting_after: 2 });
    for await (const event of resumed) rest.push(event);
    assert.deepEqual(rest, events.slice(3));

    // stream=false is the Response object, as without it.
    assert.deepEqual(await client.responses.retrieve(made.id, { stream: false }), made);
    assert.deepEqual(await wire.check(), { responses: 2, streams: 1 });
  });
});

Deno.test("stored responses: GET refuses a bad stream, starting_after or include with a 400 naming it", async () => {
  await withFakeGateway(startFakeOpenAI, config, async (gw) => {
    const headers = { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" };
    const made = await (await fetch(`${gw.baseURL}/responses`, {
      method: "POST",
      headers,
      body: JSON.stringify({ model: "chat-fake", input: "Hi" }),
    })).json();
    for (
      const [query, param] of [
        ["stream=1", "stream"],
        ["stream=yes", "stream"],
        ["stream=true&starting_after=x", "starting_after"],
        ["starting_after=2", "starting_after"],
        ["include[]=bogus", "include[0]"],
        ["include=reasoning.encrypted_content&include=nope", "include[1]"],
        ["include_obfuscation=maybe", "include_obfuscation"],
      ]
    ) {
      const res = await fetch(`${gw.baseURL}/responses/${made.id}?${query}`, { headers });
      const body = await res.json();
      assert.equal(res.status, 400, `${query}: ${JSON.stringify(body)}`);
      assert.equal(body.error.param, param, query);
    }
    // A valid include is answered with the Response as stored.
    const ok = await fetch(`${gw.baseURL}/responses/${made.id}?include[]=reasoning.encrypted_content`, {
      headers,
    });
    assert.deepEqual(await ok.json(), made);
  });
});

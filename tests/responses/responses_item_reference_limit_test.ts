/**
 * `item_reference` inputs are held to the bound of a `previous_response_id` conversation (16 MiB), each
 * occurrence counted as it is sent, and counted together with the conversation when both are used: a small body
 * repeating one reference to a large stored item is a 400 naming `input` before anything goes upstream, over a
 * real socket against a gateway whose stored responses are in SQLite.
 */
import assert from "node:assert/strict";
import { FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";

const MiB = 1024 * 1024;

function configFor(fake: FakeUpstream): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  fake: { type: openai, base_url: "${fake.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-fake: { type: chat, targets: [ { provider: fake, model: gpt-ok } ] }
${TEST_TOKENS_YAML}`;
}

async function create(
  gw: TestGateway,
  body: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${gw.baseURL}/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** Stores a response whose input is one user message of `size` bytes; its id and that message's item id. */
async function storeBig(
  gw: TestGateway,
  size: number,
  previous?: string,
): Promise<{ id: string; item: string }> {
  const made = await create(gw, {
    model: "chat-fake",
    input: "z".repeat(size),
    previous_response_id: previous,
  });
  assert.equal(made.status, 200, JSON.stringify(made.body).slice(0, 300));
  const res = await fetch(`${gw.baseURL}/responses/${made.body.id}/input_items`, {
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
  });
  const items = (await res.json()).data as { id: string }[];
  return { id: String(made.body.id), item: items[0].id };
}

const references = (id: string, n: number) => [
  ...Array.from({ length: n }, () => ({ type: "item_reference", id })),
  { role: "user", content: "Go on." },
];

function assertTooLong(answer: { status: number; body: Record<string, unknown> }, message: string) {
  assert.equal(answer.status, 400, JSON.stringify(answer.body).slice(0, 300));
  assert.deepEqual(answer.body, {
    error: { message, type: "invalid_request_error", param: "input", code: "context_length_exceeded" },
  });
}

Deno.test("item references: over 16 MiB once resolved is a 400 naming input, sent nowhere", async () => {
  await withFakeGateway(startFakeOpenAI, configFor, async (gw, fake) => {
    const big = await storeBig(gw, MiB);
    const calls = fake.requests.length;
    // 17 references to a 1 MiB item: a 1 KiB body that would have sent and stored 17 MiB.
    assertTooLong(
      await create(gw, { model: "chat-fake", input: references(big.item, 17) }),
      "The items 'input' references are over 16 MiB, more than the gateway rebuilds for one request. " +
        "Reference fewer items, or compact the conversation (POST /v1/responses/compact).",
    );
    assert.equal(fake.requests.length, calls, "nothing went upstream");
    // Under the bound the same references are answered, each occurrence sent as the item.
    const under = await create(gw, { model: "chat-fake", input: references(big.item, 15) });
    assert.equal(under.status, 200);
    const messages = fake.requests.at(-1)!.body.messages as { content: string }[];
    assert.equal(messages.length, 16);
  });
});

Deno.test("item references: counted together with the previous_response_id conversation", async () => {
  await withFakeGateway(startFakeOpenAI, configFor, async (gw, fake) => {
    // A 9 MiB conversation (under the bound alone) and a 1 MiB item referenced 8 times (under it alone too).
    let previous: string | undefined;
    for (let i = 0; i < 3; i++) previous = (await storeBig(gw, 3 * MiB, previous)).id;
    const item = await storeBig(gw, MiB);
    assert.equal(
      (await create(gw, { model: "chat-fake", input: "Go on.", previous_response_id: previous })).status,
      200,
    );
    assert.equal((await create(gw, { model: "chat-fake", input: references(item.item, 8) })).status, 200);
    const calls = fake.requests.length;
    assertTooLong(
      await create(gw, {
        model: "chat-fake",
        input: references(item.item, 8),
        previous_response_id: previous,
      }),
      "The items 'input' references, with the conversation behind 'previous_response_id', are over 16 MiB, " +
        "more than the gateway rebuilds for one request. Reference fewer items, or compact the conversation " +
        "(POST /v1/responses/compact).",
    );
    assert.equal(fake.requests.length, calls, "nothing went upstream");
  });
});

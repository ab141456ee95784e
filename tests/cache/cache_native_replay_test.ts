/**
 * What a native Responses hit is good for afterwards, over real sockets: a stored hit can be continued from
 * with `previous_response_id` whatever `store` the request that filled the entry had (an upstream keeps no
 * `store: false` response, so the hit must never name one).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { NATIVE_KEY, startFakeNativeResponses } from "../helpers/fake_openai_responses.ts";
import { startGateway, TEST_TOKEN } from "../helpers/gateway.ts";

async function nativeGateway() {
  const upstream = startFakeNativeResponses();
  const gw = await startGateway(`
providers:
  native: { type: openai, base_url: "${upstream.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
models:
  resp: { type: chat, targets: [{ provider: native, model: resp-ok }], cache: {} }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  const post = (body: unknown) =>
    fetch(`${gw.baseURL}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  return {
    upstream,
    post,
    stop: async () => {
      await gw.stop();
      await upstream.stop();
    },
  };
}

Deno.test("cache native Responses: a stored hit is continued from, whatever store filled the entry", async () => {
  const { upstream, post, stop } = await nativeGateway();
  try {
    const unstored = await post({ model: "resp", input: "Hi", store: false });
    assert.equal(unstored.headers.get("x-cache"), "MISS");
    assert.equal((await unstored.json()).store, false);
    // The upstream kept nothing of the first answer: a stored request is not answered with it.
    const stored = await post({ model: "resp", input: "Hi", store: true });
    assert.equal(stored.headers.get("x-cache"), "MISS");
    const first = await stored.json();
    const hit = await post({ model: "resp", input: "Hi" });
    assert.equal(hit.headers.get("x-cache"), "HIT");
    const second = await hit.json();
    assert.notEqual(second.id, first.id);
    assert.equal(upstream.requests.length, 2);
    const next = await post({ model: "resp", input: "And then?", previous_response_id: second.id });
    assert.equal(next.status, 200, await next.clone().text());
    assert.equal(upstream.requests.length, 3);
    // Passed on as the upstream's own id, which the upstream holds.
    assert.ok(upstream.made.has(String(upstream.requests[2].body.previous_response_id)));
    await next.body?.cancel();
    // A store:false request still hits its own entry.
    const again = await post({ model: "resp", input: "Hi", store: false });
    assert.equal(again.headers.get("x-cache"), "HIT");
    await again.body?.cancel();
  } finally {
    await stop();
  }
});

/** The `data:` payloads of an SSE body that are JSON objects. */
function events(text: string): Record<string, unknown>[] {
  return text.split("\n").filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice(6)));
}

Deno.test("cache native Responses: a hit was created now, in its JSON and in every response.* event", async () => {
  const { post, stop } = await nativeGateway();
  try {
    // The fake upstream's answers say they were made at 1_700_000_000 (2023): a hit is made after this.
    const before = Math.floor(Date.now() / 1000);
    for (const stream of [false, true]) {
      const body = { model: "resp", input: `When? ${stream}`, stream };
      const miss = await post(body);
      assert.equal(miss.headers.get("x-cache"), "MISS");
      await miss.text();
      const hit = await post(body);
      assert.equal(hit.headers.get("x-cache"), "HIT");
      const responses = stream
        ? events(await hit.text()).map((event) => event.response).filter((r) => r !== undefined)
        : [await hit.json()];
      assert.ok(responses.length >= (stream ? 2 : 1), `stream ${stream}: Responses shown`);
      for (const response of responses as Record<string, unknown>[]) {
        assert.ok(
          Number(response.created_at) >= before,
          `stream ${stream}: created_at ${response.created_at}`,
        );
        if (response.completed_at !== null && response.completed_at !== undefined) {
          assert.ok(Number(response.completed_at) >= before, `completed_at ${response.completed_at}`);
        }
      }
    }
  } finally {
    await stop();
  }
});

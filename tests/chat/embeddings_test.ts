/**
 * `/v1/embeddings` against an OpenAI-compatible upstream, over a real socket: the input forms OpenAI's spec
 * allows reach the upstream (an array of token arrays, each as long as the model takes); an upstream answer
 * that is not one vector of numbers per input (base64 that is not whole float32s included) is its 502, and one
 * out of order is put in order; the usage the
 * answer shows is what the request is charged.
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";

Deno.test("embeddings: long token arrays pass; malformed vectors (bad base64 too) are a 502; out-of-order ones are sorted; usage shown is usage charged", async () => {
  const raw = startRawUpstream();
  const dir = await Deno.makeTempDir();
  const gw = await startGateway(`
routing: { eject_after: 100 } # a dozen malformed answers in a row, and the one target still asked
usage: { sqlite: none, jsonl: "${dir}/usage.jsonl", spill: "${dir}/spill.jsonl", flush_interval: 20ms }
providers:
  raw: { type: openai, base_url: "${raw.url}/v1", api_key: "sk-raw" }
models:
  emb: { type: embedding, targets: [ { provider: raw, model: m, retries: 0 } ] }
  chat-unused: { type: chat, targets: [ { provider: raw, model: m } ] }
${TEST_TOKENS_YAML}`);
  const answer = (body: unknown) => {
    raw.next = {
      status: 200,
      headers: { "content-type": "application/json" },
      chunks: [JSON.stringify(body)],
    };
  };
  const embed = async (id: string, input: unknown, encoding = "float") => {
    const res = await fetch(`${gw.baseURL}/embeddings`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TEST_TOKEN}`,
        "content-type": "application/json",
        "x-request-id": id,
      },
      body: JSON.stringify({ model: "emb", input, encoding_format: encoding }),
    });
    return { status: res.status, body: await res.json() };
  };
  const vector = (index: number) => ({ object: "embedding", index, embedding: [index + 0.5, 0.25] });
  let stopped = false;
  try {
    // LangChain's chunks: token arrays of up to 8,191 ids each.
    answer({
      object: "list",
      data: [vector(0), vector(1)],
      usage: { prompt_tokens: 6000, total_tokens: 6000 },
    });
    const long = await embed("long", [Array(3000).fill(17), Array(3000).fill(42)]);
    assert.equal(long.status, 200, JSON.stringify(long.body));
    assert.equal(JSON.parse(raw.requests.at(-1)!.body).input[1].length, 3000);

    for (
      const [name, data] of [
        ["fewer vectors than inputs", [vector(0)]],
        ["a vector of non-numbers", [vector(0), { object: "embedding", index: 1, embedding: ["x", null] }]],
        ["one index twice", [vector(0), vector(0)]],
      ] as const
    ) {
      answer({ object: "list", data, usage: { prompt_tokens: 2, total_tokens: 2 } });
      const bad = await embed(`bad-${name}`, ["a", "b"]);
      assert.equal(bad.status, 502, `${name}: ${JSON.stringify(bad.body)}`);
      assert.equal(bad.body.error.code, "upstream_invalid_response");
    }

    // Base64 that is no vector: not base64, empty, bytes short of a whole float. Neither a float client (who
    // would get garbage or []) nor a base64 client (who would get the string unchecked) is answered a 200.
    for (const text of ["not base64!!", "", "AAAAPwA="]) {
      answer({
        object: "list",
        data: [{ object: "embedding", index: 0, embedding: text }],
        usage: { prompt_tokens: 1, total_tokens: 1 },
      });
      for (const encoding of ["float", "base64"]) {
        const bad = await embed(`bad-b64-${encoding}`, "a", encoding);
        assert.equal(bad.status, 502, `${JSON.stringify(text)} to ${encoding}: ${JSON.stringify(bad.body)}`);
        assert.equal(bad.body.error.code, "upstream_invalid_response");
      }
    }
    // Valid base64 is decoded for a float client and passed on to a base64 one.
    answer({
      object: "list",
      data: [{ object: "embedding", index: 0, embedding: "AAAAPwAAgL4=" }],
      usage: { prompt_tokens: 1, total_tokens: 1 },
    });
    assert.deepEqual((await embed("b64-float", "a")).body.data[0].embedding, [0.5, -0.25]);
    assert.equal((await embed("b64-b64", "a", "base64")).body.data[0].embedding, "AAAAPwAAgL4=");

    answer({ object: "list", data: [vector(1), vector(0)], usage: { prompt_tokens: 2, total_tokens: 2 } });
    const sorted = await embed("sorted", ["a", "b"]);
    assert.deepEqual(sorted.body.data.map((d: { index: number }) => d.index), [0, 1]);
    assert.deepEqual(sorted.body.data[1].embedding, [1.5, 0.25]);

    // No usage from the upstream: the answer shows the gateway's count, the one the record charges.
    answer({ object: "list", data: [vector(0)] });
    const counted = await embed("counted", "How many tokens is this sentence?");
    assert.equal(counted.status, 200);
    assert.ok(counted.body.usage.prompt_tokens > 0, JSON.stringify(counted.body.usage));
    await gw.stop();
    stopped = true;
    const records = (await Deno.readTextFile(`${dir}/usage.jsonl`)).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    const record = records.find((r) => r.request_id === "counted");
    assert.equal(record.prompt_tokens, counted.body.usage.prompt_tokens);
    assert.equal(record.tokens_estimated, true);
  } finally {
    if (!stopped) await gw.stop();
    await raw.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

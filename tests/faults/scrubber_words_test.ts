/**
 * Issue 22: a word-like provider key, as people configure for local vLLM, Ollama or llama.cpp upstreams
 * (`fake-upstream-key`, `sk-no-key-required`), is masked whole wherever it appears, but the ordinary words in
 * it (`upstream`, `key`, `required`) are never masked on their own: not in the gateway's own messages, not in
 * an upstream's error passed on, not in a log line.
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, waitForLog } from "../helpers/gateway.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";
import { MASK } from "../../lib/secrets/scrubber.ts";

const KEYS = ["fake-upstream-key", "sk-no-key-required"];

/** A port nothing listens on: a listener is opened and closed again. */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

function configFor(url: string, deadUrl: string): string {
  return `
routing: { backoff_base: 5ms, backoff_max: 10ms, eject_after: 1000 }
providers:
  echo: { type: openai, base_url: "${url}/v1", api_key: "${KEYS[0]}" }
  local: { type: openai, base_url: "${url}/v1", api_key: "${KEYS[1]}" }
  upstream: { type: openai, base_url: "${deadUrl}/v1", api_key: "${KEYS[0]}" }
models:
  chat-echo: { type: chat, targets: [{ provider: echo, model: m }] }
  chat-local: { type: chat, targets: [{ provider: local, model: m }] }
  chat-upstream: { type: chat, targets: [{ provider: upstream, model: m, retries: 0 }] }
${TEST_TOKENS_YAML}
`;
}

async function chat(url: string, model: string): Promise<{ status: number; message: string }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });
  const body = await res.json();
  return { status: res.status, message: String(body.error?.message) };
}

Deno.test("scrubber words: word-like provider keys leave the words of every error and log line alone", async () => {
  const upstream = startRawUpstream();
  const gw = await startGateway(configFor(upstream.url, `http://127.0.0.1:${closedPort()}`));
  try {
    // An upstream's own error, passed on to the client: the provider's scrubber, then the config's.
    const said = "The upstream model is required; an upstream key is not required here.";
    upstream.next = {
      status: 400,
      headers: { "content-type": "application/json" },
      chunks: [JSON.stringify({ error: { message: said, type: "invalid_request_error" } })],
    };
    for (const model of ["chat-echo", "chat-local"]) {
      assert.deepEqual(await chat(gw.url, model), { status: 400, message: said });
    }

    // The gateway's own message, naming a provider called `upstream`: the config's scrubber.
    const gone = await chat(gw.url, "chat-upstream");
    assert.equal(gone.status, 502);
    assert.equal(gone.message, `Provider "upstream" could not be reached.`);

    // The key itself, quoted whole by an upstream, is still masked whole.
    upstream.next = {
      status: 400,
      headers: { "content-type": "application/json" },
      chunks: [
        JSON.stringify({ error: { message: `upstream key fake-upstream-key and sk-no-key-required` } }),
      ],
    };
    assert.equal((await chat(gw.url, "chat-echo")).message, `upstream key ${MASK} and ${MASK}`);

    // Log lines: the words are there, the keys are not.
    await waitForLog(gw, (line) => line.alias === "chat-echo" && line.status === 400 && gw.logs.length >= 5);
    const lines = gw.logs.map((line) => JSON.stringify(line));
    for (const key of KEYS) assert.ok(!lines.some((line) => line.includes(key)), `a log line has ${key}`);
    const unreachable = lines.find((line) => line.includes('"alias":"chat-upstream"')) ?? "";
    assert.ok(unreachable?.includes('"provider":"upstream"'), unreachable);
    assert.ok(unreachable?.includes('"error_code":"upstream_unreachable"'), unreachable);
    assert.ok(!lines.some((line) => line.includes(MASK)), "a log line lost a word");
  } finally {
    await gw.stop();
    await upstream.stop();
  }
});

Deno.test("scrubber words: the shipped config's development token is named in the access log, not masked", async () => {
  // Its name was `local-dev`, two words of its default secret `gw-local-dev-token-change-me`: every access-log
  // line said "token":"***".
  const shipped = await Deno.readTextFile(new URL("../../config/gateway.yaml", import.meta.url));
  const name = /^ {2}- name: (\S+)$/m.exec(shipped)?.[1];
  assert.ok(name !== undefined, "no token in the shipped config");
  const gw = await startGateway(shipped);
  try {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: "Bearer gw-local-dev-token-change-me", "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-default", messages: [{ role: "user", content: "hi" }] }),
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    const line = await waitForLog(gw, (l) => l.msg === "request" && l.alias === "chat-default");
    assert.equal(line.token, name);
    assert.notEqual(line.token, MASK);
  } finally {
    await gw.stop();
  }
});

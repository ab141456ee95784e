/**
 * "Each event is forwarded the moment its upstream chunk arrives" for `POST /v1/responses`, end to end over
 * real sockets: an upstream that holds back the rest of its answer until the test lets it go, on the translated
 * path (a chat upstream sending one chunk per gate) and the native passthrough (a Responses upstream pausing
 * after its first text delta). A gateway that buffered would never show the client the text before the
 * upstream went on, and the test would time out. The whole stream is then checked against the spec.
 */
import assert from "node:assert/strict";
import { armGates, FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { NATIVE_KEY, startFakeNativeResponses } from "../helpers/fake_openai_responses.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import { checkEvents, parseSse, type WireEvent } from "../helpers/responses_conformance.ts";

const schemas = await loadOpenApiSchemas();

/** Reads a Responses SSE body event by event, keeping the raw text for a whole-stream check at the end. */
class EventReader {
  readonly #reader: ReadableStreamDefaultReader<string>;
  #buffer = "";
  text = "";

  constructor(response: Response) {
    this.#reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  }

  /** The next event, failing after `ms` (a buffering gateway would hold it back until the upstream goes on). */
  async next(ms = 3_000): Promise<WireEvent | undefined> {
    const deadline = Date.now() + ms;
    while (!this.#buffer.includes("\n\n")) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<"timeout">((r) =>
        timer = setTimeout(() => r("timeout"), deadline - Date.now())
      );
      const read = await Promise.race([this.#reader.read(), timeout]);
      clearTimeout(timer);
      if (read === "timeout") throw new Error(`no event within ${ms} ms: the gateway holds it back`);
      if (read.done) return undefined;
      this.#buffer += read.value;
      this.text += read.value;
    }
    const end = this.#buffer.indexOf("\n\n");
    const frame = this.#buffer.slice(0, end);
    this.#buffer = this.#buffer.slice(end + 2);
    return parseSse(`${frame}\n\n`)[0];
  }

  /** The next text delta, skipping the structural events before it. */
  async nextDelta(): Promise<string> {
    while (true) {
      const event = await this.next();
      assert.ok(event, "the stream ended before a text delta");
      if (event.type === "response.output_text.delta") return String(event.delta);
    }
  }

  /** Reads to the end and checks the whole stream. */
  async finish(): Promise<Record<string, unknown>> {
    while (await this.next() !== undefined) { /* read on */ }
    return checkEvents(schemas, parseSse(this.text));
  }
}

async function stream(gw: TestGateway, model: string): Promise<EventReader> {
  const res = await fetch(`${gw.baseURL}/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model, input: "Hi", stream: true }),
  });
  assert.equal(res.status, 200);
  return new EventReader(res);
}

Deno.test("responses forwarding: translated, each upstream chunk's delta reaches the client before the next is sent", async () => {
  const fake = startFakeOpenAI();
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${fake.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-gated: { type: chat, targets: [ { provider: up, model: gpt-gated } ] }
${TEST_TOKENS_YAML}`);
  try {
    const n = 4;
    armGates(fake, n);
    const reader = await stream(gw, "chat-gated");
    for (let i = 0; i < n; i++) {
      fake.gates[i].resolve();
      await fake.chunkSent[i].promise;
      assert.equal(await reader.nextDelta(), `c${i} `, `chunk ${i} forwarded before chunk ${i + 1} exists`);
    }
    const final = await reader.finish();
    assert.equal(final.status, "completed");
  } finally {
    await gw.stop();
    await fake.stop();
  }
});

Deno.test("responses forwarding: native, the first text delta reaches the client while the upstream holds the rest", async () => {
  const fake = startFakeNativeResponses();
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${fake.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
models:
  chat-held: { type: chat, targets: [ { provider: up, model: resp-held } ] }
${TEST_TOKENS_YAML}`);
  try {
    fake.release = Promise.withResolvers<void>();
    const reader = await stream(gw, "chat-held");
    const first = await reader.nextDelta();
    assert.ok(first.length > 0, "the first delta arrived while the upstream was still holding the rest");
    fake.release.resolve();
    const final = await reader.finish();
    assert.equal(final.status, "completed");
  } finally {
    fake.release.resolve();
    await gw.stop();
    await fake.stop();
  }
});

/**
 * `output_config.effort` through `POST /v1/messages` to a translated target that has no control for an effort
 * (Bedrock's models other than Claude, over Converse), over real sockets against the fake Bedrock. Claude Code
 * sends `output_config: {effort: "high"}` with adaptive thinking on every request (tests/agents/recorded/): the
 * target gets the request without it, and the answer names `output_config.effort` in `x-gateway-dropped` and
 * the usage record's `dropped`, whatever the provider's `unsupported_params`, streamed, whole and counted. A
 * `strict` alias refuses the drop. Thinking the client asked for (`thinking: {type: "enabled"}`) is still
 * refused there, and the refusal names the client's own field, never the chat form's `reasoning_effort`.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import {
  FAKE_AWS,
  FAKE_BEDROCK_ANSWER,
  FAKE_REGION,
  type FakeBedrock,
  startFakeBedrock,
} from "../helpers/fake_bedrock.ts";
import { TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

/** Claude Code's request as recorded (tests/agents/recorded/claude_code.json): its headers and body. */
const RECORDED: { headers: Record<string, string>; body: Record<string, unknown> } = JSON.parse(
  Deno.readTextFileSync(new URL("../agents/recorded/claude_code.json", import.meta.url)),
);

const NOVA = "us.amazon.nova-pro-v1:0";

function configFor(bedrock: FakeBedrock): string {
  const provider = (extra: string) => `
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${bedrock.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"${extra}`;
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  aws:${provider("")}
  aws-drop:${provider("\n    unsupported_params: drop")}
models:
  nova: { type: chat, targets: [ { provider: aws, model: "${NOVA}" } ] }
  nova-drop: { type: chat, targets: [ { provider: aws-drop, model: "${NOVA}" } ] }
  nova-strict: { type: chat, strict: true, targets: [ { provider: aws, model: "${NOVA}" } ] }
tokens:
  - { name: agent, environment: test, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`;
}

function post(gw: TestGateway, path: string, body: Record<string, unknown>, headers = RECORDED.headers) {
  return fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: { ...headers, authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** The `dropped` of the usage record of `requestId`, once it is stored. */
async function recordDropped(gw: TestGateway, requestId: string | null): Promise<string> {
  const rows = await pollUsageRows<{ dropped: string }>(gw, (r) => r.length > 0, {
    sql: "SELECT dropped FROM usage WHERE request_id = ?",
    params: [requestId],
  });
  assert.equal(rows.length, 1, `the record of ${requestId}`);
  return rows[0].dropped;
}

/** The comma-separated paths of a `dropped` list. */
const paths = (dropped: string | null) => (dropped ?? "").split(",");

/** What the fake Bedrock got last: a Converse request, with no thinking nor effort anywhere. */
function assertNoEffortSent(bedrock: FakeBedrock, label: string): void {
  const sent = bedrock.requests.at(-1)!;
  assert.match(sent.action, /^converse/, label);
  assert.equal(sent.modelId, NOVA, label);
  assert.equal(sent.body.additionalModelRequestFields, undefined, label);
  // The request's own fields only: what Converse reads besides turns, system, limits and tools is not sent.
  const known = ["messages", "system", "inferenceConfig", "toolConfig"];
  assert.deepEqual(Object.keys(sent.body).filter((key) => !known.includes(key)), [], label);
  assert.doesNotMatch(JSON.stringify(sent.body.inferenceConfig), /effort|thinking/i, label);
}

Deno.test("messages effort hint: Claude Code's recorded request is answered through a Bedrock model that is not Claude", async () => {
  await withFakeGateway(startFakeBedrock, configFor, async (gw, bedrock) => {
    const body: Record<string, unknown> = { ...RECORDED.body, model: "nova" };
    const streamed = await post(gw, "/v1/messages", body);
    const events = await streamed.text();
    assert.equal(streamed.status, 200, events);
    assert.match(events, /event: message_stop/);
    assert.doesNotMatch(events, /event: error/);
    assert.ok(events.includes(JSON.stringify(FAKE_BEDROCK_ANSWER.split(" ")[0]).slice(1, -1)));
    assertNoEffortSent(bedrock, "streamed");
    const dropped = streamed.headers.get("x-gateway-dropped");
    assert.ok(paths(dropped).includes("output_config.effort"), String(dropped));
    assert.ok(paths(dropped).includes("thinking.display"), String(dropped));
    assert.doesNotMatch(String(dropped), /reasoning_effort/);
    assert.equal(await recordDropped(gw, streamed.headers.get("request-id")), dropped);

    // Whole, with the effort alone (no thinking at all), and through a provider that drops what it cannot take.
    for (const model of ["nova", "nova-drop"]) {
      const whole = await post(gw, "/v1/messages", {
        model,
        max_tokens: 64,
        output_config: { effort: "high" },
        messages: [{ role: "user", content: "Hello" }],
      }, { "anthropic-version": "2023-06-01" });
      const message = await whole.json();
      assert.equal(whole.status, 200, JSON.stringify(message));
      assert.equal(message.content[0].text, FAKE_BEDROCK_ANSWER);
      assertNoEffortSent(bedrock, model);
      assert.equal(whole.headers.get("x-gateway-dropped"), "output_config.effort", model);
      assert.equal(await recordDropped(gw, whole.headers.get("request-id")), "output_config.effort");
    }

    // Counted: the count names it as the Message does.
    const countable: Record<string, unknown> = { ...body };
    for (const generation of ["stream", "max_tokens", "metadata"]) delete countable[generation];
    const counted = await post(gw, "/v1/messages/count_tokens", countable);
    const count = await counted.json();
    assert.equal(counted.status, 200, JSON.stringify(count));
    assert.ok(paths(counted.headers.get("x-gateway-dropped")).includes("output_config.effort"));
  });
});

Deno.test("messages effort hint: a strict alias refuses the drop; thinking asked for is refused in the client's terms", async () => {
  await withFakeGateway(startFakeBedrock, configFor, async (gw, bedrock) => {
    const before = bedrock.requests.length;
    const refusal = async (body: Record<string, unknown>, field: string) => {
      const answer = await post(gw, "/v1/messages", {
        max_tokens: 4096,
        messages: [{ role: "user", content: "Hello" }],
        ...body,
      }, { "anthropic-version": "2023-06-01" });
      const error = await answer.json();
      assert.equal(answer.status, 400, JSON.stringify(error));
      assert.equal(error.type, "error");
      assert.equal(error.error.type, "invalid_request_error");
      assert.ok(error.error.message.startsWith(`${field}: `), error.error.message);
      // The message names what the client sent, not the chat form's parameter.
      assert.doesNotMatch(error.error.message, /reasoning_effort/);
    };
    await refusal({ model: "nova-strict", output_config: { effort: "high" } }, "output_config.effort");
    await refusal({ model: "nova", thinking: { type: "enabled", budget_tokens: 2048 } }, "thinking");
    await refusal({
      model: "nova",
      thinking: { type: "enabled", budget_tokens: 2048 },
      output_config: { effort: "low" },
    }, "output_config.effort");
    assert.equal(bedrock.requests.length, before, "no upstream is called");
  });
});

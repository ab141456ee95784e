/**
 * A Messages body that carries InvokeModel's own fields, `anthropic_version` and `anthropic_beta`, through
 * `POST /v1/messages` to Claude on Bedrock, over real sockets against the fake Bedrock. The gateway owns the
 * version Bedrock takes (`bedrock-2023-05-31`), so the client's cannot replace it; and the body's betas obey the
 * entry's `anthropic_betas` as the `anthropic-beta` header's do: merged with the header's, only the names on the
 * list reach Bedrock, the others are named in `x-gateway-dropped` and the usage record's `dropped`
 * (`anthropic-beta:<name>`), whole, streamed and counted.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { FAKE_AWS, FAKE_REGION, type FakeBedrock, startFakeBedrock } from "../helpers/fake_bedrock.ts";
import { FAKE_BEDROCK_CLAUDE_ANSWER } from "../helpers/fake_bedrock_claude.ts";
import { TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

const CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

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
  aws-own:${provider(`\n    anthropic_betas: [interleaved-thinking-2025-05-14]`)}
models:
  bedrock-claude: { type: chat, targets: [ { provider: aws, model: "${CLAUDE}" } ] }
  bedrock-own: { type: chat, targets: [ { provider: aws-own, model: "${CLAUDE}" } ] }
tokens:
  - { name: agent, environment: test, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`;
}

function withGateway(fn: (gw: TestGateway, bedrock: FakeBedrock) => Promise<void>) {
  return withFakeGateway(startFakeBedrock, configFor, fn);
}

function post(gw: TestGateway, path: string, betas: string | null, body: Record<string, unknown>) {
  return fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      "anthropic-version": "2023-06-01",
      ...(betas === null ? {} : { "anthropic-beta": betas }),
      "content-type": "application/json",
    },
    body: JSON.stringify({ messages: [{ role: "user", content: "Hello" }], ...body }),
  });
}

/** The `dropped` of the usage record of `requestId`, once it is stored. */
async function recordDropped(gw: TestGateway, requestId: string | null): Promise<unknown> {
  const sql = "SELECT dropped FROM usage WHERE request_id = ?";
  const rows = await pollUsageRows<{ dropped: unknown }>(gw, (r) => r.length > 0, {
    sql,
    params: [requestId],
  });
  assert.equal(rows.length, 1, `the record of ${requestId}`);
  return rows[0].dropped;
}

/** The last InvokeModel body the fake got (a CountTokens request's decoded). */
function lastInvokeBody(bedrock: FakeBedrock): Record<string, unknown> {
  const body = bedrock.requests.at(-1)!.body;
  const input = body.input as { invokeModel?: { body: string } } | undefined;
  return input?.invokeModel === undefined
    ? body
    : JSON.parse(Buffer.from(input.invokeModel.body, "base64").toString("utf8"));
}

Deno.test("messages bedrock body betas: the body cannot replace Bedrock's version nor pass an unlisted beta", async () => {
  await withGateway(async (gw, bedrock) => {
    const body = {
      model: "bedrock-claude",
      max_tokens: 64,
      anthropic_version: "something",
      anthropic_beta: ["not-allowed-beta"],
    };
    const whole = await post(gw, "/v1/messages", null, body);
    const message = await whole.json();
    assert.equal(whole.status, 200, JSON.stringify(message));
    assert.equal(message.content[0].text, FAKE_BEDROCK_CLAUDE_ANSWER);
    const sent = lastInvokeBody(bedrock);
    assert.equal(sent.anthropic_version, "bedrock-2023-05-31");
    assert.equal(sent.anthropic_beta, undefined);
    const dropped = "anthropic-beta:not-allowed-beta,anthropic_version";
    assert.equal(whole.headers.get("x-gateway-dropped"), dropped);
    assert.equal(await recordDropped(gw, whole.headers.get("request-id")), dropped);

    const streamed = await post(gw, "/v1/messages", null, { ...body, stream: true });
    assert.equal(streamed.status, 200);
    const events = await streamed.text();
    assert.match(events, /event: message_stop/);
    assert.doesNotMatch(events, /event: error/);
    assert.equal(bedrock.requests.at(-1)!.action, "invoke-with-response-stream");
    assert.equal(lastInvokeBody(bedrock).anthropic_version, "bedrock-2023-05-31");
    assert.equal(lastInvokeBody(bedrock).anthropic_beta, undefined);
    assert.equal(streamed.headers.get("x-gateway-dropped"), dropped);

    // Counted by Bedrock's CountTokens from the InvokeModel body, which is built alike.
    const { max_tokens: _limit, ...countBody } = body;
    const counted = await post(gw, "/v1/messages/count_tokens", null, countBody);
    const count = await counted.json();
    assert.equal(counted.status, 200, JSON.stringify(count));
    assert.equal(count.estimated, undefined, "Bedrock counted it");
    assert.equal(lastInvokeBody(bedrock).anthropic_version, "bedrock-2023-05-31");
    assert.equal(lastInvokeBody(bedrock).anthropic_beta, undefined);
    assert.equal(counted.headers.get("x-gateway-dropped"), dropped);
  });
});

Deno.test("messages bedrock body betas: header and body betas are merged, held to the entry's anthropic_betas", async () => {
  await withGateway(async (gw, bedrock) => {
    // The entry takes only interleaved thinking: a name Bedrock itself takes (1M context) is the operator's to allow.
    const own = await post(gw, "/v1/messages", "interleaved-thinking-2025-05-14,claude-code-20250219", {
      model: "bedrock-own",
      max_tokens: 64,
      anthropic_version: "bedrock-2023-05-31",
      anthropic_beta: ["context-1m-2025-08-07", "interleaved-thinking-2025-05-14", "not-allowed-beta"],
    });
    const message = await own.json();
    assert.equal(own.status, 200, JSON.stringify(message));
    assert.deepEqual(lastInvokeBody(bedrock).anthropic_beta, ["interleaved-thinking-2025-05-14"]);
    assert.equal(lastInvokeBody(bedrock).anthropic_version, "bedrock-2023-05-31");
    // Bedrock's own version is what the client sent: it went without nothing there.
    const dropped = [
      "anthropic-beta:claude-code-20250219",
      "anthropic-beta:context-1m-2025-08-07",
      "anthropic-beta:not-allowed-beta",
    ].join(",");
    assert.equal(own.headers.get("x-gateway-dropped"), dropped);
    assert.equal(await recordDropped(gw, own.headers.get("request-id")), dropped);

    // Without the header, the body alone does not get a name past the entry's list (one Bedrock takes, at that).
    const bodyOnly = await post(gw, "/v1/messages", null, {
      model: "bedrock-own",
      max_tokens: 64,
      anthropic_beta: ["context-1m-2025-08-07"],
    });
    assert.equal(bodyOnly.status, 200, await bodyOnly.clone().text());
    await bodyOnly.body?.cancel();
    assert.equal(lastInvokeBody(bedrock).anthropic_beta, undefined);
    assert.equal(bodyOnly.headers.get("x-gateway-dropped"), "anthropic-beta:context-1m-2025-08-07");

    // On the built-in list, the body's listed names join the header's, each once, header's first.
    const merged = await post(gw, "/v1/messages", "interleaved-thinking-2025-05-14", {
      model: "bedrock-claude",
      max_tokens: 64,
      stream: true,
      anthropic_beta: ["context-1m-2025-08-07", "interleaved-thinking-2025-05-14"],
    });
    assert.equal(merged.status, 200);
    assert.match(await merged.text(), /event: message_stop/);
    assert.deepEqual(lastInvokeBody(bedrock).anthropic_beta, [
      "interleaved-thinking-2025-05-14",
      "context-1m-2025-08-07",
    ]);
    assert.equal(merged.headers.get("x-gateway-dropped"), null);

    // A body's `anthropic_beta` that is not a list of names gets nothing past the list either.
    const odd = await post(gw, "/v1/messages", null, {
      model: "bedrock-claude",
      max_tokens: 64,
      anthropic_beta: ["context-1m-2025-08-07", 7],
    });
    assert.equal(odd.status, 200, await odd.clone().text());
    await odd.body?.cancel();
    assert.deepEqual(lastInvokeBody(bedrock).anthropic_beta, ["context-1m-2025-08-07"]);
    assert.equal(odd.headers.get("x-gateway-dropped"), "anthropic-beta:7");
  });
});

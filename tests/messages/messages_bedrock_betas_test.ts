/**
 * Claude Code's `anthropic-beta` names through `POST /v1/messages` to Claude on Bedrock (InvokeModel), over real
 * sockets: Bedrock refuses a whole request naming a beta it does not take (`400 invalid beta flag`, as the fake
 * does), so the gateway forwards only the names Bedrock takes (the built-in list, or the entry's
 * `anthropic_betas`), and names the others in `x-gateway-dropped` and the usage record's `dropped`, whole,
 * streamed and counted. The translated (Converse) path sends no beta at all, and names every one.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { FAKE_AWS, FAKE_REGION, type FakeBedrock, startFakeBedrock } from "../helpers/fake_bedrock.ts";
import { FAKE_BEDROCK_CLAUDE_ANSWER } from "../helpers/fake_bedrock_claude.ts";
import { TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

/** The `anthropic-beta` of the Claude Code release the agent tests record (tests/agents/recorded/). */
const RECORDED: string = JSON.parse(
  Deno.readTextFileSync(new URL("../agents/recorded/claude_code.json", import.meta.url)),
).headers["anthropic-beta"];
/** Of those, what Bedrock takes, in the client's order (tool search under Bedrock's name for it). */
const RECORDED_TAKEN = [
  "interleaved-thinking-2025-05-14",
  "context-management-2025-06-27",
  "mid-conversation-tool-changes-2026-07-01",
  "tool-search-tool-2025-10-19",
  "effort-2025-11-24",
];
const RECORDED_DROPPED = [
  "anthropic-beta:claude-code-20250219",
  "anthropic-beta:thinking-token-count-2026-05-13",
].join(",");
/** Other names Claude Code sends, as reported against Bedrock. */
const OTHERS =
  "claude-code-20250219,prompt-caching-scope-2026-01-05,fine-grained-tool-streaming-2025-05-14," +
  "oauth-2025-04-20,extended-cache-ttl-2025-04-11,tool-search-tool-2025-10-19";

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
  bedrock-nova: { type: chat, targets: [ { provider: aws, model: "amazon.nova-pro-v1:0" } ] }
tokens:
  - { name: agent, environment: test, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`;
}

function withGateway(fn: (gw: TestGateway, bedrock: FakeBedrock) => Promise<void>) {
  return withFakeGateway(startFakeBedrock, configFor, fn);
}

function post(gw: TestGateway, path: string, betas: string, body: Record<string, unknown>) {
  return fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      "anthropic-version": "2023-06-01",
      "anthropic-beta": betas,
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

Deno.test("messages bedrock betas: Claude Code's betas reach Bedrock as it takes them; the rest are named dropped", async () => {
  await withGateway(async (gw, bedrock) => {
    const whole = await post(gw, "/v1/messages", RECORDED, { model: "bedrock-claude", max_tokens: 64 });
    const message = await whole.json();
    assert.equal(whole.status, 200, JSON.stringify(message));
    assert.equal(message.content[0].text, FAKE_BEDROCK_CLAUDE_ANSWER);
    assert.equal(bedrock.requests.at(-1)!.action, "invoke");
    assert.deepEqual(bedrock.requests.at(-1)!.body.anthropic_beta, RECORDED_TAKEN);
    assert.equal(whole.headers.get("x-gateway-dropped"), RECORDED_DROPPED);
    assert.equal(await recordDropped(gw, whole.headers.get("request-id")), RECORDED_DROPPED);

    const streamed = await post(gw, "/v1/messages", OTHERS, {
      model: "bedrock-claude",
      max_tokens: 64,
      stream: true,
    });
    assert.equal(streamed.status, 200);
    const events = await streamed.text();
    assert.match(events, /event: message_stop/);
    assert.doesNotMatch(events, /event: error/);
    assert.equal(bedrock.requests.at(-1)!.action, "invoke-with-response-stream");
    assert.deepEqual(bedrock.requests.at(-1)!.body.anthropic_beta, [
      "fine-grained-tool-streaming-2025-05-14",
      "tool-search-tool-2025-10-19",
    ]);
    const othersDropped = [
      "anthropic-beta:claude-code-20250219",
      "anthropic-beta:prompt-caching-scope-2026-01-05",
      "anthropic-beta:oauth-2025-04-20",
      "anthropic-beta:extended-cache-ttl-2025-04-11",
    ].join(",");
    assert.equal(streamed.headers.get("x-gateway-dropped"), othersDropped);
    assert.equal(await recordDropped(gw, streamed.headers.get("request-id")), othersDropped);

    // Counted from the client's body by Bedrock's CountTokens, whose InvokeModel body is checked alike.
    const counted = await post(gw, "/v1/messages/count_tokens", RECORDED, { model: "bedrock-claude" });
    const count = await counted.json();
    assert.equal(counted.status, 200, JSON.stringify(count));
    assert.equal(count.estimated, undefined, "Bedrock counted it");
    const invoke =
      (bedrock.requests.at(-1)!.body.input as { invokeModel: { body: string } }).invokeModel.body;
    assert.deepEqual(
      JSON.parse(Buffer.from(invoke, "base64").toString("utf8")).anthropic_beta,
      RECORDED_TAKEN,
    );
    assert.equal(counted.headers.get("x-gateway-dropped"), RECORDED_DROPPED);

    // Only names Bedrock takes: nothing is dropped, nothing named.
    const clean = await post(gw, "/v1/messages", "interleaved-thinking-2025-05-14", {
      model: "bedrock-claude",
      max_tokens: 64,
    });
    assert.equal(clean.status, 200);
    await clean.body?.cancel();
    assert.deepEqual(bedrock.requests.at(-1)!.body.anthropic_beta, ["interleaved-thinking-2025-05-14"]);
    assert.equal(clean.headers.get("x-gateway-dropped"), null);
  });
});

Deno.test("messages bedrock betas: an entry's anthropic_betas is what it forwards; Converse gets no beta", async () => {
  await withGateway(async (gw, bedrock) => {
    const own = await post(gw, "/v1/messages", RECORDED, { model: "bedrock-own", max_tokens: 64 });
    assert.equal(own.status, 200);
    await own.body?.cancel();
    assert.deepEqual(bedrock.requests.at(-1)!.body.anthropic_beta, ["interleaved-thinking-2025-05-14"]);
    assert.equal(
      own.headers.get("x-gateway-dropped"),
      [
        "anthropic-beta:claude-code-20250219",
        "anthropic-beta:context-management-2025-06-27",
        "anthropic-beta:mid-conversation-tool-changes-2026-07-01",
        "anthropic-beta:thinking-token-count-2026-05-13",
        "anthropic-beta:advanced-tool-use-2025-11-20",
        "anthropic-beta:effort-2025-11-24",
      ].join(","),
    );

    // A model that is not Claude is translated to Converse, which takes no beta: none is sent, every one is named
    // (as the client sent it: Anthropic's name for tool search too).
    const nova = await post(gw, "/v1/messages", RECORDED, { model: "bedrock-nova", max_tokens: 64 });
    assert.equal(nova.status, 200);
    await nova.body?.cancel();
    assert.equal(bedrock.requests.at(-1)!.action, "converse");
    assert.doesNotMatch(JSON.stringify(bedrock.requests.at(-1)!.body), /beta/);
    const all = RECORDED.split(",").map((name) => `anthropic-beta:${name.trim()}`).join(",");
    assert.equal(nova.headers.get("x-gateway-dropped"), all);
    assert.equal(await recordDropped(gw, nova.headers.get("request-id")), all);
  });
});

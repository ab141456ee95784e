/**
 * Codex over the gateway's Responses WebSocket (`GET /v1/responses` upgraded; docs/endpoints.md "WebSocket
 * mode"): with `supports_websockets = true` on its custom provider (nothing else: Codex 0.171.0's
 * `responses_websockets` feature flags are "removed"), Codex opens one WebSocket per session, prewarms it with a
 * `generate: false` message and sends each turn as a `response.create` message chained to the last one with
 * `previous_response_id` and only the new input items, all with `store: false`. Through a native alias and a
 * translated one it must complete the same task as over HTTP (agents_test.ts): `hello.txt` written by its own
 * tool, the final answer printed, exit 0, no error answer.
 *
 * When the WebSocket fails, Codex says "Falling back from WebSockets to HTTPS transport" and goes on with
 * `POST /v1/responses`, which would complete the task too: these tests fail on that. They check, from the
 * recording proxy and from the gateway's own access log and usage records, that every Responses request came
 * as a message on an accepted WebSocket handshake (request id `<handshake id>.<n>`, no plain POST) and that
 * each message left exactly one usage record.
 *
 * @module
 */
import assert from "node:assert/strict";
import { pollUsageRows } from "../helpers/usage_rows.ts";
import {
  assertCompleted,
  describe,
  type RunContext,
  SKIP,
  type UsageRow,
  withAgentRun,
} from "./agent_harness.ts";
import { FILE_NAME } from "./scripted_upstream.ts";

/** What Codex 0.171.0 prints on stderr when it gives up on the WebSocket and carries on over HTTP. */
const FALLBACK = /Falling back from WebSockets/i;

/** An access-log line of the gateway. */
interface AccessLine {
  msg?: string;
  request_id?: string;
  method?: string;
  path?: string;
  status?: number;
  error_code?: string;
}

/** The checks that Codex spoke the Responses API to the gateway over a WebSocket only, each message counted. */
async function assertOverWebSocket(
  { run, gw, proxy }: RunContext,
  alias: string,
): Promise<void> {
  const why = describe(run, proxy);
  // What Codex sent, as the recording proxy saw it.
  const handshakes = proxy.requests.filter((r) => r.method === "GET" && r.path === "/v1/responses");
  const messages = proxy.requests.filter((r) => r.method === "WS");
  const posts = proxy.requests.filter((r) => r.method === "POST" && r.path === "/v1/responses");
  assert.ok(
    handshakes.length >= 1 && handshakes.every((h) => h.status === 101),
    `no accepted WebSocket handshake (statuses ${handshakes.map((h) => h.status)})\n${why}`,
  );
  assert.ok(
    !FALLBACK.test(run.stderr),
    `Codex fell back from the WebSocket to HTTP\n${why}`,
  );
  assert.deepEqual(
    posts.map((p) => p.status),
    [],
    `Codex sent HTTP POSTs to /v1/responses\n${why}`,
  );
  assert.ok(
    messages.length >= 2,
    `${messages.length} WebSocket messages\n${why}`,
  );
  assert.ok(
    messages.every((m) => m.status === 200),
    `unanswered or failed messages\n${why}`,
  );

  // What the gateway saw: the handshakes, and every Responses request numbered under one of them.
  const access = (gw.logs as AccessLine[]).filter((l) => l.msg === "request" && l.path === "/v1/responses");
  const handshakeIds = access.filter((l) => l.method === "GET").map((l) => String(l.request_id));
  assert.equal(
    handshakeIds.length,
    handshakes.length,
    `handshakes in the access log: ${JSON.stringify(access)}`,
  );
  const requests = access.filter((l) => l.method !== "GET");
  const ids = requests.map((l) => String(l.request_id));
  const numbered = (id: string) =>
    handshakeIds.some((h) => id.startsWith(`${h}.`) && /^\d+$/.test(id.slice(h.length + 1)));
  assert.deepEqual(
    ids.filter((id) => !numbered(id)),
    [],
    `Responses requests not sent over a WebSocket: ${JSON.stringify(requests)}`,
  );
  assert.equal(
    ids.length,
    messages.length,
    `the gateway logged ${ids.length} messages: ${JSON.stringify(requests)}`,
  );
  assert.deepEqual(
    requests.filter((l) => l.status !== 200),
    [],
    `messages the gateway refused\n${why}`,
  );

  // One usage record (endpoint `responses`, streamed) per message, under its request id, and none else.
  type Row = UsageRow & { request_id: string; stream: number };
  const rows = await pollUsageRows<Row>(gw, (r) => r.length >= ids.length, { settleMs: 200 });
  assert.deepEqual(
    rows.map((r) => r.request_id).sort(),
    [...ids].sort(),
    `usage records: ${JSON.stringify(rows)}`,
  );
  for (const r of rows) {
    assert.ok(
      r.alias === alias && r.endpoint === "responses" && r.stream === 1 &&
        r.status === 200,
      `usage record: ${JSON.stringify(r)}`,
    );
  }
}

const CASES = [
  { alias: "codex-native", kind: "native (responses passthrough)" },
  { alias: "codex-translated", kind: "translated (responses → chat)" },
];

for (const { alias, kind } of CASES) {
  Deno.test({
    name: `codex writes ${FILE_NAME} over the gateway's Responses WebSocket through ${alias}, ${kind}`,
    ignore: SKIP,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: () =>
      withAgentRun("codex", alias, "normal", false, async (ctx) => {
        // The transport first: a failed WebSocket shows here (with the gateway's error event), not as a
        // completed task over the HTTP fallback.
        await assertOverWebSocket(ctx, alias);
        await assertCompleted(ctx.run, ctx.cwd, ctx.up, ctx.proxy);
      }, { websocket: true }),
  });
}

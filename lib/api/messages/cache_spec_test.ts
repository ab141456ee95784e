/**
 * How a Messages answer passed through to Claude ended, for the cache's one rule of its opt-ins
 * (lib/cache/opt_ins.ts): a client tool's call, a cut, or both (a `max_tokens` stop in the middle of its
 * calls), JSON and streamed.
 */
import assert from "node:assert/strict";
import { messagesCacheSpec } from "./cache_spec.ts";

const spec = messagesCacheSpec({}, { anthropicVersion: "2023-06-01", anthropicBeta: null });
const TEXT = { type: "text", text: "hi" };
const TOOL = { type: "tool_use", id: "toolu_1", name: "f", input: {} };

function message(stopReason: string, content: unknown[]) {
  return { type: "message", id: "msg_1", role: "assistant", content, stop_reason: stopReason };
}

function streamed(stopReason: string, content: { type: string }[], final = true) {
  return [
    { type: "message_start", message: { ...message(stopReason, []), stop_reason: null } },
    ...content.flatMap((block, index) => [
      { type: "content_block_start", index, content_block: block },
      { type: "content_block_stop", index },
    ]),
    { type: "message_delta", delta: { stop_reason: stopReason } },
    ...(final ? [{ type: "message_stop" }] : []),
  ];
}

Deno.test("messages cache spec: whole, a call, a cut, or both, JSON and streamed", () => {
  const cases: [string, unknown[], { calls: boolean; cut: boolean }][] = [
    ["end_turn", [TEXT], { calls: false, cut: false }],
    ["stop_sequence", [TEXT], { calls: false, cut: false }],
    ["tool_use", [TEXT, TOOL], { calls: true, cut: false }],
    ["max_tokens", [TEXT], { calls: false, cut: true }],
    ["refusal", [TEXT], { calls: false, cut: true }],
    ["max_tokens", [TEXT, TOOL], { calls: true, cut: true }],
    ["model_context_window_exceeded", [TEXT], { calls: false, cut: true }],
    // A paused server-tool turn is not finished (sent back, it goes on), nor is a reason unknown today: as the
    // translated path reads them (`length`, lib/providers/finish_reasons.ts).
    ["pause_turn", [TEXT], { calls: false, cut: true }],
    ["something_new", [TEXT], { calls: false, cut: true }],
  ];
  for (const [stop, content, expected] of cases) {
    const name = `${stop} with ${content.length} blocks`;
    assert.deepEqual(spec.ending([message(stop, content)]), [expected], name);
    assert.deepEqual(
      spec.ending(streamed(stop, content as { type: string }[])),
      [expected],
      `${name}, streamed`,
    );
  }
  // A server tool's call ran at Anthropic: not the client's.
  const search = { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} };
  assert.deepEqual(spec.ending([message("end_turn", [search, TEXT])]), [{ calls: false, cut: false }]);
  // A stream without its `message_stop` is not whole.
  assert.equal(spec.ending(streamed("end_turn", [TEXT], false)), undefined);
});

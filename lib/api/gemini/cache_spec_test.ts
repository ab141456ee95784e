import assert from "node:assert/strict";
import { nativeHitValue } from "../../answer/cached_native.ts";
import type { CachedAnswer } from "../../cache/types.ts";
import { geminiCacheSpec } from "./cache_spec.ts";

const OLD = "2024-01-02T03:04:05.678Z";

function entry(stream: boolean): CachedAnswer {
  const chunk = (text: string, done: boolean) => ({
    candidates: [{
      content: { role: "model", parts: [{ text }] },
      ...(done ? { finishReason: "STOP" } : {}),
    }],
    responseId: "resp-upstream-1234",
    createTime: OLD,
  });
  return {
    v: 1,
    native: {
      api: "gemini",
      stream,
      values: stream ? [chunk("Hel", false), chunk("lo", true)] : [chunk("Hi", true)],
    },
    storedAt: 0,
    provider: "gem",
    model: "gem-ok",
  };
}

Deno.test("gemini cache: a hit's createTime (Vertex AI writes one) is the hit's, in every chunk", () => {
  const before = Date.now();
  const json = nativeHitValue(geminiCacheSpec({}), entry(false), false);
  assert.equal(json?.kind, "native");
  const time = json?.kind === "native" ? Date.parse(String(json.body.createTime)) : NaN;
  assert.ok(time >= before, `createTime ${time}`);
  const streamed = nativeHitValue(geminiCacheSpec({}), entry(true), true);
  assert.equal(streamed?.kind, "native_stream");
  if (streamed?.kind !== "native_stream") return;
  assert.ok(Date.parse(String(streamed.stream.first.createTime)) >= before);
  return streamed.stream.rest.read().then(({ value }) => {
    assert.ok(Date.parse(String(value?.createTime)) >= before);
  });
});

Deno.test("gemini cache: a Gemini API answer without createTime gets none on a hit", () => {
  const answer = entry(false);
  delete answer.native!.values[0].createTime;
  const hit = nativeHitValue(geminiCacheSpec({}), answer, false);
  assert.ok(hit?.kind === "native" && !("createTime" in hit.body));
});

// Each candidate's ending, for the cache's one rule of its opt-ins (lib/cache/opt_ins.ts): a function call cut
// off by MAX_TOKENS is both; two candidates are two choices (`cache_n`); a stream is judged by every chunk.
Deno.test("gemini cache spec: how each candidate ended", () => {
  const spec = geminiCacheSpec({});
  const call = { functionCall: { name: "f", args: {} } };
  const body = (...candidates: unknown[]) => ({ candidates });
  const candidate = (parts: unknown[], finishReason?: string, index?: number) => ({
    content: { role: "model", parts },
    ...(finishReason ? { finishReason } : {}),
    ...(index === undefined ? {} : { index }),
  });
  assert.deepEqual(spec.ending([body(candidate([{ text: "hi" }], "STOP"))]), [{ calls: false, cut: false }]);
  assert.deepEqual(spec.ending([body(candidate([call], "STOP"))]), [{ calls: true, cut: false }]);
  assert.deepEqual(spec.ending([body(candidate([{ text: "h" }], "MAX_TOKENS"))]), [{
    calls: false,
    cut: true,
  }]);
  assert.deepEqual(spec.ending([body(candidate([call], "MAX_TOKENS"))]), [{ calls: true, cut: true }]);
  // Every reason but STOP cut the candidate off, as the translated path reads it (lib/providers/finish_reasons.ts).
  for (
    const reason of [
      "OTHER",
      "FINISH_REASON_UNSPECIFIED",
      "SAFETY",
      "MALFORMED_FUNCTION_CALL",
      "SOMETHING_NEW",
    ]
  ) {
    assert.deepEqual(
      spec.ending([body(candidate([{ text: "h" }], reason))]),
      [{ calls: false, cut: true }],
      reason,
    );
  }
  assert.deepEqual(
    spec.ending([body(candidate([{ text: "a" }], "STOP", 0), candidate([call], "SAFETY", 1))]),
    [{ calls: false, cut: false }, { calls: true, cut: true }],
  );
  // Streamed: the call in one chunk, the finish reason in a later one; a candidate not yet ended: not whole.
  const chunks = [body(candidate([call])), body(candidate([{ text: "" }], "STOP"))];
  assert.deepEqual(spec.ending(chunks), [{ calls: true, cut: false }]);
  assert.equal(
    spec.ending([body(candidate([{ text: "a" }], "STOP", 0), candidate([{ text: "b" }], undefined, 1))]),
    undefined,
  );
  assert.equal(spec.ending([chunks[0]]), undefined);
  assert.equal(spec.ending([{ promptFeedback: { blockReason: "SAFETY" } }]), undefined);
});

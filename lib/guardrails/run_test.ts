/**
 * runGuardrails with an external service whose `replace` verdict does not fit the request: the texts cannot be
 * matched to the slots, so nothing was checked, and `on_failure` decides as for a service that failed.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../errors.ts";
import type { TextSlot } from "../policy/text_slots.ts";
import { NO_SECRETS } from "../secrets/scrubber.ts";
import { createMasker } from "./mask.ts";
import type { GuardrailOutcome, ResolvedGuardrail } from "./resolved.ts";
import { type GuardrailRequest, runGuardrails } from "./run.ts";
import type { GuardrailService } from "./types.ts";

/** A service that answers `replace` with no texts at all, whatever it is sent. */
const wrongCount: GuardrailService = {
  check: () => Promise.resolve({ action: "replace", texts: [], categories: ["pii"] }),
};

function guardrail(onFailure: ResolvedGuardrail["onFailure"]): ResolvedGuardrail {
  return {
    name: "rewriter",
    phases: new Set(["input"]),
    action: "deny",
    reverse: false,
    message: null,
    pii: null,
    service: wrongCount,
    timeoutMs: 1_000,
    onFailure,
    scrubber: NO_SECRETS,
  };
}

function slot(text: string) {
  const written: string[] = [];
  const s: TextSlot = { param: "messages[0].content", text, write: (t) => written.push(t) };
  return { s, written };
}

const request = (): GuardrailRequest => ({
  phase: "input",
  alias: "chat-x",
  token: "team-a",
  signal: new AbortController().signal,
  masker: createMasker(),
});

Deno.test("guardrails: a replace verdict with the wrong number of texts refuses the request under fail_closed", async () => {
  const { s, written } = slot("my card is 4111 1111 1111 1111");
  const outcomes: GuardrailOutcome[] = [];
  await assert.rejects(
    runGuardrails([guardrail("fail_closed")], [s], request(), outcomes),
    (err: unknown) => {
      assert.ok(err instanceof GatewayError, String(err));
      assert.equal(err.status, 503);
      assert.equal(err.code, "guardrail_unavailable");
      assert.equal(new Headers(err.headers).get("retry-after"), "1");
      return true;
    },
  );
  assert.deepEqual(outcomes, [{ name: "rewriter", phase: "input", action: "error", error: "unavailable" }]);
  assert.deepEqual(written, [], "the request's text is left as it was");
});

Deno.test("guardrails: the same malformed verdict under fail_open lets the text through, recorded as an error", async () => {
  const { s, written } = slot("my card is 4111 1111 1111 1111");
  const outcomes: GuardrailOutcome[] = [];
  await runGuardrails([guardrail("fail_open")], [s], request(), outcomes);
  assert.deepEqual(outcomes, [{ name: "rewriter", phase: "input", action: "error", error: "unavailable" }]);
  assert.deepEqual(written, []);
  assert.equal(s.text, "my card is 4111 1111 1111 1111");
});

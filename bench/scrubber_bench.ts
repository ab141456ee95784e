/**
 * `deno bench bench/scrubber_bench.ts`: the cost of the scrubber's `test` on the texts it sees most, with
 * the 12 secrets of a typical config (provider keys, gateway tokens, a short password). `test` runs on every log
 * line (lib/log.ts) and on the fields an answer says of itself (providers/shared/answer_fields.ts), and almost
 * always finds nothing there, so that miss is what is measured; a hit and a scrub are measured beside it for scale.
 *
 * Speed is measured here, never in a timed test: a shared machine makes wall-clock bounds flaky.
 *
 * @module
 */
import { createScrubber } from "../lib/secrets/scrubber.ts";

/** Secrets of the shapes a config holds: random keys of several lengths and prefixes, one short, one wordy. */
const SECRETS = [
  "sk-proj-Xq7vB2mNp4Lk9TzR8wYc3FhJ6dGs1AeU",
  "sk-ant-api03-Zq8LmN3vR7tY1wXa9BcDeFgH2jKlMnOp",
  "AIzaSyD4x9Qw7Er2Ty6Ui1Op3As5Df8Gh0Jk",
  "AKIAIOSFODNN7EXAMPLE",
  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  "gsk_Vb3Nm8Qw2Er5Ty7Ui9Op1As4Df6Gh0JkLz",
  "gw-admin-7f3c9a2e1b4d8f6a0c5e9b2d",
  "gw-team-a-4e8b1c7f2a9d3e6b0f5c8a1d",
  "gw-team-b-9a2d5f8c1e4b7a0d3f6c9e2b",
  "xai-Lk4Jh7Gf2Ds9Ap5Oi1Uy8Tr3Ew6Qz0Xc",
  "hunter22x",
  "fake-upstream-key",
];

const scrubber = createScrubber(SECRETS);
if (scrubber.size !== SECRETS.length) {
  throw new Error(`expected ${SECRETS.length} secrets, got ${scrubber.size}`);
}

/** A log line as lib/log.ts serializes one: JSON, a message and a few fields, no secret. */
const LOG_LINE = JSON.stringify({
  ts: "2025-01-14T09:26:53.589Z",
  level: "info",
  msg: "request completed",
  request_id: "req_01JHF3K8Q2W7X9V4N6M5P1R0ST",
  route: "/v1/chat/completions",
  model: "gpt-4o-mini",
  provider: "openai",
  status: 200,
  duration_ms: 412,
  tokens: { prompt: 1234, completion: 256 },
});
/** An answer's identifier, as an upstream sends it. */
const ANSWER_ID = "chatcmpl-AbC123dEf456GhI789jKl012MnO345";
/** The same log line with the first key base64-encoded in it, as a header dump has it: a hit. */
const HIT_LINE = LOG_LINE.replace("request completed", `auth=${btoa(`Bearer ${SECRETS[0]}`)}`);

for (const [text, expected] of [[LOG_LINE, false], [ANSWER_ID, false], [HIT_LINE, true]] as const) {
  if (scrubber.test(text) !== expected) throw new Error(`test(${text}) is not ${expected}`);
}

let sink = 0;
Deno.bench("scrubber.test: log line, no secret", { group: "test", baseline: true }, () => {
  if (scrubber.test(LOG_LINE)) sink++;
});
Deno.bench("scrubber.test: answer id, no secret", { group: "test" }, () => {
  if (scrubber.test(ANSWER_ID)) sink++;
});
Deno.bench("scrubber.test: log line with a base64-encoded key", { group: "test" }, () => {
  if (scrubber.test(HIT_LINE)) sink++;
});
Deno.bench("scrubber.scrub: log line, no secret", { group: "scrub" }, () => {
  sink += scrubber.scrub(LOG_LINE).length;
});
Deno.bench("scrubber.scrub: log line with a base64-encoded key", { group: "scrub" }, () => {
  sink += scrubber.scrub(HIT_LINE).length;
});
globalThis.addEventListener("unload", () => {
  if (sink < 0) console.log(sink);
});

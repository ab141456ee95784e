/**
 * Output guardrails and `reverse` on `POST /v1/responses/compact` (what Codex calls as its context fills), over
 * real sockets. The alias's summary is an answer like any other: an output guardrail reads it (a webhook that
 * denies `DENYMARK` and replaces `MASKMARK`), a denial is the 400 a Responses answer gets, a replacement changes
 * the summary inside the gateway's `compaction` item, and a value an input guardrail masked with `reverse` comes
 * back in it; the user messages the compaction keeps are the client's own text. A native target
 * (`native_responses`) summarises through the chat form too, as a generation under such guardrails is served:
 * its own compaction is encrypted, so nothing of it could be checked or given back. One usage record per
 * request, with the guardrails' outcome.
 */
import assert from "node:assert/strict";
import {
  DENY_MARK,
  type FakeWebhook,
  markerVerdict,
  MASK_MARK,
  MASKED_MARK,
  startFakeWebhook,
} from "../helpers/fake_guardrails.ts";
import {
  type FakeNativeUpstream,
  NATIVE_COMPACTION,
  startFakeNativeResponses,
} from "../helpers/fake_openai_responses.ts";
import { type ScriptedChat, startScriptedChat } from "../helpers/scripted_chat.ts";
import { startFakes } from "../helpers/fakes.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { withTestGateway } from "../helpers/with_gateway.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";
import { gatewaySummary } from "../../lib/api/responses/compaction_item.ts";
import { startOpenAIBoth } from "./masked_native_gateway.ts";

interface Fakes {
  hook: FakeWebhook;
  chat: ScriptedChat;
  native: FakeNativeUpstream;
}

type Json = Record<string, unknown>;

const EMAIL = "ada@example.com";

function setup() {
  const fakes = startFakes({
    hook: startFakeWebhook,
    chat: startScriptedChat,
    native: startFakeNativeResponses,
  });
  fakes.hook.answer = markerVerdict;
  // The native target: its Responses endpoints answered by the native fake, its chat completions by the script.
  const both = startOpenAIBoth(fakes.native, fakes.chat);
  return {
    fakes,
    stop: async () => {
      await both.stop();
      await fakes.stop();
    },
    config: `
server: { host: 127.0.0.1, port: 0 }
providers:
  chat: { type: openai, base_url: "${fakes.chat.baseURL}", api_key: sk-scripted-0123456789 }
  native: { type: openai, base_url: "${both.baseURL}", api_key: any-key-0123456789, native_responses: true }
guardrails:
  marks: { type: webhook, url: "${fakes.hook.url}/check", phase: output }
  contacts: { type: pii, entities: [EMAIL], action: mask }
  contacts-back: { type: pii, entities: [EMAIL], action: mask, reverse: true }
models:
  chat-out: { type: chat, targets: [{ provider: chat, model: scripted }], guardrails: [marks] }
  chat-native-out: { type: chat, targets: [{ provider: native, model: resp-ok }], guardrails: [marks] }
  chat-back: { type: chat, targets: [{ provider: chat, model: scripted }], guardrails: [contacts-back] }
  chat-native-back: { type: chat, targets: [{ provider: native, model: resp-ok }], guardrails: [contacts-back] }
  chat-native-masked: { type: chat, targets: [{ provider: native, model: resp-ok }], guardrails: [contacts] }
${TEST_TOKENS_YAML}`,
  };
}

function withGateway(fn: (gw: TestGateway, fakes: Fakes) => Promise<void>): Promise<void> {
  return withTestGateway(setup, fn);
}

async function post(
  gw: TestGateway,
  path: string,
  model: string,
  input: unknown[],
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Json; dropped: string[] }> {
  const res = await fetch(`${gw.baseURL}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ model, input, store: false }),
  });
  const dropped = (res.headers.get("x-gateway-dropped") ?? "").split(",").filter((p) => p !== "");
  return { status: res.status, json: await res.json(), dropped };
}

function compact(gw: TestGateway, model: string, input: unknown[], headers: Record<string, string> = {}) {
  return post(gw, "/responses/compact", model, input, headers);
}

/** A conversation as Codex sends it to be compacted. */
const CONVERSATION = [
  { role: "user", content: "Build the booking page." },
  { type: "message", role: "assistant", content: [{ type: "output_text", text: "Done: booking.html." }] },
  { role: "user", content: "Now the confirmation mail." },
];

/** The summary in a compaction's gateway-made item, its last output item. */
function summaryOf(json: Json): string {
  const item = (json.output as Json[]).at(-1);
  const summary = gatewaySummary(item);
  assert.ok(summary !== null, `not the gateway's compaction item: ${JSON.stringify(item)}`);
  return summary;
}

/** The texts of the user messages a compaction kept (all its output items but the last). */
function keptTexts(json: Json): string[] {
  return (json.output as Json[]).slice(0, -1).map((item) => String((item.content as Json[])[0].text));
}

interface Row {
  status: number;
  outcome: string;
  rule: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  guardrails: string | null;
}

/** The usage records, once there are `n` (and, a moment later, still only `n`: one per request). */
async function rows(gw: TestGateway, n: number): Promise<Row[]> {
  const found = await pollUsageRows<Row>(gw, (r) => r.length >= n, {
    sql:
      "SELECT status, outcome, rule, prompt_tokens, completion_tokens, guardrails FROM usage ORDER BY rowid",
    settleMs: 200,
  });
  assert.equal(found.length, n, JSON.stringify(found));
  return found;
}

/** A record's guardrail outcomes as `name phase action`. */
function outcomes(row: Row): string[] {
  return (JSON.parse(row.guardrails ?? "[]") as Json[]).map((o) => `${o.name} ${o.phase} ${o.action}`);
}

for (const model of ["chat-out", "chat-native-out"]) {
  Deno.test(`guardrails compact: an output guardrail replaces text in the summary (${model})`, async () => {
    await withGateway(async (gw, fakes) => {
      fakes.chat.answer = () => ({ content: [`The user wants a booking page; ${MASK_MARK} stays secret.`] });
      const { status, json } = await compact(gw, model, CONVERSATION);
      assert.equal(status, 200, JSON.stringify(json));
      assert.equal(json.object, "response.compaction");
      const summary = summaryOf(json);
      assert.ok(!summary.includes(MASK_MARK), summary);
      assert.equal(summary, `The user wants a booking page; ${MASKED_MARK} stays secret.`);
      // The summary was asked over the chat form; a native target's own (encrypted) compaction was not.
      assert.equal(fakes.chat.seen.length, 1);
      assert.ok(!fakes.native.requests.some((r) => r.path === "/v1/responses/compact"));
      const [row] = await rows(gw, 1);
      assert.deepEqual([row.status, row.outcome, row.rule], [200, "modify", "guardrail:marks"]);
      assert.deepEqual(outcomes(row), ["marks output replace"]);
    });
  });

  Deno.test(`guardrails compact: an output guardrail that denies the summary withholds the compaction (${model})`, async () => {
    await withGateway(async (gw, fakes) => {
      fakes.chat.answer = () => ({ content: [`The user said ${DENY_MARK}.`] });
      const { status, json } = await compact(gw, model, CONVERSATION);
      assert.equal(status, 400, JSON.stringify(json));
      const error = json.error as Json;
      assert.equal(error.code, "content_policy_violation");
      assert.equal(error.param, null);
      assert.ok(!JSON.stringify(json).includes(DENY_MARK), JSON.stringify(json));
      assert.ok(!fakes.native.requests.some((r) => r.path === "/v1/responses/compact"));
      // Recorded once, denied, with what the upstream spent (the script's 10 prompt and 5 completion tokens).
      const [row] = await rows(gw, 1);
      assert.deepEqual([row.status, row.outcome, row.rule], [400, "deny", "guardrail:marks"]);
      assert.deepEqual([row.prompt_tokens, row.completion_tokens], [10, 5]);
      assert.deepEqual(outcomes(row), ["marks output deny"]);
    });
  });
}

for (const model of ["chat-back", "chat-native-back"]) {
  Deno.test(`guardrails compact: a value masked with reverse comes back in the summary; kept messages are the client's (${model})`, async () => {
    await withGateway(async (gw, fakes) => {
      // The alias summarises what it was sent: the placeholder the gateway put in place of the address.
      fakes.chat.answer = (body) => {
        const placeholder = /<EMAIL_\d+>/.exec(JSON.stringify(body.messages))?.[0] ?? "(none)";
        return { content: [`The confirmation mail goes to ${placeholder}.`] };
      };
      const input = [...CONVERSATION, { role: "user", content: `Send it to ${EMAIL} please.` }];
      const { status, json } = await compact(gw, model, input);
      assert.equal(status, 200, JSON.stringify(json));
      assert.equal(summaryOf(json), `The confirmation mail goes to ${EMAIL}.`);
      assert.deepEqual(keptTexts(json), [
        "Build the booking page.",
        "Now the confirmation mail.",
        `Send it to ${EMAIL} please.`,
      ]);
      // No upstream read the address.
      assert.equal(fakes.chat.seen.length, 1);
      assert.ok(!JSON.stringify(fakes.chat.seen).includes(EMAIL));
      assert.ok(!fakes.native.requests.some((r) => r.path === "/v1/responses/compact"));
      const [row] = await rows(gw, 1);
      assert.deepEqual([row.status, row.outcome], [200, "modify"]);
      assert.deepEqual(outcomes(row), ["contacts-back input mask"]);
    });
  });
}

Deno.test("guardrails compact: an input mask without reverse keeps a native target's own compaction", async () => {
  await withGateway(async (gw, fakes) => {
    const { status, json } = await compact(gw, "chat-native-masked", [
      { role: "user", content: `Mail ${EMAIL} the plan.` },
    ]);
    assert.equal(status, 200, JSON.stringify(json));
    // Nothing of the answer is checked or given back: passed through, the address masked where it was sent.
    assert.equal((json.output as Json[]).at(-1)!.encrypted_content, NATIVE_COMPACTION);
    const sent = fakes.native.requests.filter((r) => r.path === "/v1/responses/compact");
    assert.equal(sent.length, 1);
    assert.ok(!JSON.stringify(sent[0].body).includes(EMAIL), JSON.stringify(sent[0].body));
    assert.equal(fakes.chat.seen.length, 0);
  });
});

Deno.test("guardrails compact: a native compaction the chat form cannot read is kept for the next native call", async () => {
  await withGateway(async (gw, fakes) => {
    // #1: nothing to mask, so the native target compacts itself: its encrypted item holds the early turns.
    const first = await compact(gw, "chat-native-back", CONVERSATION);
    assert.equal(first.status, 200, JSON.stringify(first.json));
    const earlier = first.json.output as Json[];
    const native = earlier.at(-1)!;
    assert.equal(native.encrypted_content, NATIVE_COMPACTION);
    // #2: a masked address sends it over the chat form, whose summary is written without the native item.
    fakes.chat.answer = () => ({ content: ["The user wants a mail sent."] });
    const input = [...earlier, { role: "user", content: `Mail ${EMAIL}.` }];
    const second = await compact(gw, "chat-native-back", input);
    assert.equal(second.status, 200, JSON.stringify(second.json));
    assert.ok(second.dropped.includes(`input[${earlier.length - 1}].type`), second.dropped.join());
    // The native item stays, unchanged and where the conversation had it, before the gateway's summary.
    const output = second.json.output as Json[];
    assert.deepEqual(output.slice(0, -1).map((item) => item.type === "compaction" ? item : item.role), [
      "user",
      "user",
      native,
      "user",
    ]);
    assert.equal(summaryOf(second.json), "The user wants a mail sent.");
    // The next natively served call reads the early turns' state back.
    const next = await post(gw, "/responses", "chat-native-masked", [
      ...output,
      { role: "user", content: "Go on." },
    ]);
    assert.equal(next.status, 200, JSON.stringify(next.json));
    const sent = fakes.native.requests.at(-1)!;
    assert.equal(sent.path, "/v1/responses");
    assert.deepEqual((sent.body.input as Json[]).find((item) => item.type === "compaction"), native);
  });
});

Deno.test("guardrails compact: a native target served the chat form names the client's openai-beta as dropped", async () => {
  await withGateway(async (gw) => {
    const beta = { "openai-beta": "some_beta=v1" };
    const compacted = await compact(gw, "chat-native-out", CONVERSATION, beta);
    assert.equal(compacted.status, 200, JSON.stringify(compacted.json));
    assert.deepEqual(compacted.dropped, ["openai-beta:some_beta=v1"]);
    const created = await post(gw, "/responses", "chat-native-out", CONVERSATION, beta);
    assert.equal(created.status, 200, JSON.stringify(created.json));
    assert.deepEqual(created.dropped, ["openai-beta:some_beta=v1"]);
  });
});

Deno.test("guardrails compact: a withheld compaction's 400 names what the chat form went without", async () => {
  await withGateway(async (gw, fakes) => {
    fakes.chat.answer = () => ({ content: [`The user said ${DENY_MARK}.`] });
    const beta = { "openai-beta": "some_beta=v1" };
    const withheld = await compact(gw, "chat-native-out", CONVERSATION, beta);
    assert.equal(withheld.status, 400, JSON.stringify(withheld.json));
    assert.deepEqual(withheld.dropped, ["openai-beta:some_beta=v1"]);
  });
});

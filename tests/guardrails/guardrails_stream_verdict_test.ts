/**
 * Over real sockets, a streamed answer gets the verdict the same answer gets in JSON, and the same record:
 * built-in output guardrails refuse, mask and record alike however the upstream cut its stream (one character
 * per chunk included); a JSON answer they withhold names what the request went without (`x-gateway-dropped`,
 * the record's `dropped`) as a withheld stream does; and a web search citation's title and URL, which reach
 * the client beside the content, are checked as the content is, in both.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { nthLog, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { type ScriptedAnswer, type ScriptedChat, startScriptedChat } from "../helpers/scripted_chat.ts";

const TOKEN = "gw-stream-verdict-0123456789abcdef";
const ADMIN = "gw-stream-verdict-admin-012345678";
const CARD = "4111 1111 1111 1111";
const PAD = "Some words of the answer around it. ".repeat(9);

interface Rig {
  gw: TestGateway;
  up: ScriptedChat;
  /** Requests answered so far (the access log's count, to wait for each one's record). */
  n: number;
}

async function withRig(fn: (rig: Rig) => Promise<void>) {
  const up = startScriptedChat();
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-scripted-0123456789 }
guardrails:
  deny-phone: { type: pii, entities: [PHONE], phase: output, action: deny }
  deny-card: { type: pii, entities: [CREDIT_CARD], phase: output, action: deny }
  deny-all: { type: pii, phase: output, action: deny }
  mask-email: { type: pii, entities: [EMAIL], phase: output, action: mask }
  mask-contacts: { type: pii, entities: [EMAIL, PHONE], phase: output, action: mask }
models:
  phones: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [deny-phone] }
  phones-cards: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [deny-phone, deny-card] }
  cards: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [deny-card] }
  mask-deny: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [mask-email, deny-all] }
  mask-mask: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [mask-email, mask-contacts] }
  masked: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [mask-email] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`);
  try {
    await fn({ gw, up, n: 0 });
  } finally {
    await gw.stop();
    await up.stop();
  }
}

/** What a client and the operator saw of one answer. */
interface Seen {
  /** `denied` when refused (a JSON 400, or a stream's error event), else `ok`. */
  verdict: "ok" | "denied";
  /** The answer's content as the client read it (null when refused). */
  content: string | null;
  status: number;
  text: string;
  dropped: string | null;
  record: { outcome: unknown; rule: unknown; guardrails: unknown; dropped: unknown };
  body: unknown[];
}

/** Asks `model` for `answer`, streamed or not; reads the whole answer and its usage record. */
async function ask(
  rig: Rig,
  model: string,
  answer: ScriptedAnswer,
  stream: boolean,
  extra: Record<string, unknown> = {},
): Promise<Seen> {
  rig.up.answer = () => answer;
  const res = await fetch(`${rig.gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model, stream, messages: [{ role: "user", content: "who?" }], ...extra }),
  });
  const text = await res.text();
  await nthLog(rig.gw, (l) => l.msg === "request" && l.path === "/v1/chat/completions", ++rig.n);
  const rows = await (await fetch(`${rig.gw.url}/admin/requests?limit=1`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  })).json();
  const { outcome, rule, guardrails, dropped } = rows.data[0];
  const body = stream
    ? text.split("\n").filter((l) => l.startsWith("data: {")).map((l) => JSON.parse(l.slice(6)))
    : [JSON.parse(text)];
  const denied = body.some((b) => b.error?.code === "content_policy_violation");
  if (stream && denied) assert.ok(!text.includes("data: [DONE]"), "a withheld stream never ends cleanly");
  const content = denied
    ? null
    : stream
    ? body.map((c) => c.choices?.[0]?.delta?.content ?? "").join("")
    : body[0].choices[0].message.content;
  return {
    verdict: denied ? "denied" : "ok",
    content,
    status: res.status,
    text,
    dropped: res.headers.get("x-gateway-dropped"),
    record: { outcome, rule, guardrails, dropped },
    body,
  };
}

/** `text` cut into pieces of `size` characters. */
function cut(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

/** The answer `text` in JSON, then streamed cut at `at`, one character per chunk and in pieces: one verdict. */
async function sameVerdict(rig: Rig, model: string, text: string, at: number[]): Promise<Seen> {
  const json = await ask(rig, model, { content: [text] }, false);
  const chunkings = [[text], ...at.map((i) => [text.slice(0, i), text.slice(i)]), [...text], cut(text, 5)];
  for (const pieces of chunkings) {
    const label = `${model}, ${pieces.length} chunks`;
    const streamed = await ask(rig, model, { content: pieces }, true);
    assert.equal(streamed.verdict, json.verdict, `${label}: ${streamed.text.slice(-300)}`);
    assert.equal(streamed.content, json.content, label);
    assert.deepEqual(streamed.record, json.record, label);
  }
  return json;
}

Deno.test("guardrails stream verdict: a card number's start is no phone number, streamed as in JSON", async () => {
  await withRig(async (rig) => {
    const text = `${PAD}Pay with ${CARD} today. ${PAD}`;
    // Cut where what has come of the card (`4111 1111 11`) reads as a phone number.
    const at = [PAD.length + 21, PAD.length + 22];
    const allowed = await sameVerdict(rig, "phones", text, at);
    assert.equal(allowed.verdict, "ok");
    assert.deepEqual(allowed.record, { outcome: "allow", rule: null, guardrails: null, dropped: null });
    // Refused by the guardrail that refuses cards, not by the phone guardrail listed before it.
    const refused = await sameVerdict(rig, "phones-cards", text, at);
    assert.equal(refused.verdict, "denied");
    assert.deepEqual(refused.record.guardrails, [
      { name: "deny-card", phase: "output", action: "deny", types: ["CREDIT_CARD"] },
    ]);
    assert.equal(refused.record.rule, "guardrail:deny-card");
  });
});

Deno.test("guardrails stream verdict: digits glued to a word stay glued when the window's text starts there", async () => {
  await withRig(async (rig) => {
    const text = `${PAD}ref abc4111111111111111 ok ${PAD}`;
    const glued = PAD.length + "ref abc".length;
    const json = await sameVerdict(rig, "cards", text, [glued]);
    assert.equal(json.verdict, "ok");
  });
});

Deno.test("guardrails stream verdict: built-ins listed together judge what the ones before them left", async () => {
  await withRig(async (rig) => {
    const text = `${PAD}mail bob@example.com now. ${PAD}`;
    const at = [text.indexOf("@")];
    // The address is masked before `deny-all` reads the answer: let through, masked.
    const masked = await sameVerdict(rig, "mask-deny", text, at);
    assert.equal(masked.content, text.replace("bob@example.com", "<EMAIL_1>"));
    assert.deepEqual(masked.record, {
      outcome: "modify",
      rule: "guardrail:mask-email",
      guardrails: [{ name: "mask-email", phase: "output", action: "mask", types: ["EMAIL"] }],
      dropped: null,
    });
    // Recorded once, under the guardrail that masked it: the second read a placeholder.
    const once = await sameVerdict(rig, "mask-mask", text, at);
    assert.deepEqual(once.record, masked.record);
  });
});

Deno.test("guardrails stream verdict: a withheld JSON answer names what the request went without", async () => {
  await withRig(async (rig) => {
    const answer = { content: [`Card ${CARD}`] };
    for (const stream of [false, true]) {
      const seen = await ask(rig, "cards", answer, stream, { logprobs: true, top_logprobs: 2 });
      assert.equal(seen.verdict, "denied", `stream=${stream}`);
      assert.equal(seen.status, stream ? 200 : 400, `stream=${stream}`);
      assert.equal(seen.dropped, "logprobs,top_logprobs", `stream=${stream}: the header`);
      assert.deepEqual(seen.record, {
        outcome: "deny",
        rule: "guardrail:deny-card",
        guardrails: [{ name: "deny-card", phase: "output", action: "deny", types: ["CREDIT_CARD"] }],
        dropped: "logprobs,top_logprobs",
      }, `stream=${stream}: the record`);
    }
    // A Responses client's withheld answer too, by its own field's name.
    const res = await fetch(`${rig.gw.baseURL}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "cards", input: "who?", top_logprobs: 2 }),
    });
    const error = await res.json();
    assert.equal(res.status, 400);
    assert.equal(error.error.code, "content_policy_violation");
    assert.equal(res.headers.get("x-gateway-dropped"), "top_logprobs");
  });
});

Deno.test("guardrails stream verdict: a citation's title and URL are checked as the content is", async () => {
  await withRig(async (rig) => {
    const citation = (title: string, url: string) => ({
      type: "url_citation",
      url_citation: { start_index: 0, end_index: 6, title, url },
    });
    const answer = (title: string, url: string) => ({
      content: ["Source: see the page."],
      annotations: [citation(title, url)],
    });
    const annotationsOf = (seen: Seen, stream: boolean) =>
      stream
        ? seen.body.flatMap((c) =>
          (c as { choices?: { delta?: { annotations?: unknown[] } }[] }).choices ?? []
        )
          .flatMap((c) => c.delta?.annotations ?? [])
        : (seen.body[0] as { choices: { message: { annotations: unknown[] } }[] }).choices[0].message
          .annotations;
    for (const stream of [false, true]) {
      const seen = await ask(
        rig,
        "masked",
        answer("Write to ann.lee@corp-mail.org", "https://example.com/contact?to=ann.lee@corp-mail.org"),
        stream,
      );
      assert.equal(seen.verdict, "ok");
      assert.ok(!seen.text.includes("ann.lee"), `stream=${stream}: the address never reaches the client`);
      assert.deepEqual(annotationsOf(seen, stream), [
        citation("Write to <EMAIL_1>", "https://example.com/contact?to=<EMAIL_1>"),
      ], `stream=${stream}`);
      assert.deepEqual(seen.record.guardrails, [
        { name: "mask-email", phase: "output", action: "mask", types: ["EMAIL"] },
      ]);
      const refused = await ask(rig, "cards", answer(`Card ${CARD}`, "https://example.com/"), stream);
      assert.equal(refused.verdict, "denied", `stream=${stream}`);
      assert.ok(!refused.text.includes("4111"), `stream=${stream}`);
      assert.equal(refused.record.rule, "guardrail:deny-card");
    }
  });
});

Deno.test("guardrails stream verdict: a citation's content is checked, and what no check reads is left out", async () => {
  await withRig(async (rig) => {
    // OpenRouter's citation carries the cited page's snippet as `content`; another annotation type, or another
    // field of a citation, no check reads.
    const annotations = [
      {
        type: "url_citation",
        url_citation: {
          start_index: 0,
          end_index: 6,
          title: "Contact page",
          url: "https://example.com/contact",
          content: "Write to ann.lee@corp-mail.org or pay with 4111 1111 1111 1111",
          snippet: "ann.lee@corp-mail.org",
        },
      },
      { type: "file_citation", file_citation: { quote: "ann.lee@corp-mail.org" } },
    ];
    const answer = { content: ["Source: see the page."], annotations };
    for (const stream of [false, true]) {
      const seen = await ask(rig, "masked", answer, stream);
      assert.equal(seen.verdict, "ok");
      assert.ok(!seen.text.includes("ann.lee"), `stream=${stream}: the address never reaches the client`);
      const sent = stream
        ? seen.body.flatMap((c) =>
          (c as { choices?: { delta?: { annotations?: unknown[] } }[] }).choices?.[0]?.delta?.annotations ??
            []
        )
        : (seen.body[0] as { choices: { message: { annotations: unknown[] } }[] }).choices[0].message
          .annotations;
      assert.deepEqual(sent, [{
        type: "url_citation",
        url_citation: {
          start_index: 0,
          end_index: 6,
          title: "Contact page",
          url: "https://example.com/contact",
          content: "Write to <EMAIL_1> or pay with 4111 1111 1111 1111",
        },
      }], `stream=${stream}`);
      const refused = await ask(rig, "cards", answer, stream);
      assert.equal(refused.verdict, "denied", `stream=${stream}`);
      assert.ok(!refused.text.includes("4111"), `stream=${stream}`);
      assert.equal(refused.record.rule, "guardrail:deny-card");
    }
  });
});

/**
 * A stream's built-in guardrails reach the verdict a JSON answer gets for the same text (run.ts), however the
 * stream is cut: the same denial by the same guardrail, or the same masked text and the same outcomes.
 */
import assert from "node:assert/strict";
import { createMasker } from "./mask.ts";
import { laneOf } from "./output_lane.ts";
import { OUTPUT_CAP, OUTPUT_WINDOW } from "./output.ts";
import type { GuardrailOutcome, ResolvedGuardrail } from "./resolved.ts";
import { outputBuiltin } from "./guardrail_test_helpers.ts";
import { guardrailDenied, runGuardrails } from "./run.ts";
import { streamOutcomes } from "./stream_outcomes.ts";
import { PolicyDenied } from "../policy/denied.ts";
import type { TextSlot } from "../policy/text_slots.ts";

const builtin = outputBuiltin;

const denyPhone = builtin("deny-phone", "deny", ["PHONE"]);
const denyCard = builtin("deny-card", "deny", ["CREDIT_CARD"]);
const denyAll = builtin("deny-all", "deny", null);
const maskEmail = builtin("mask-email", "mask", ["EMAIL"]);
const maskContacts = builtin("mask-contacts", "mask", ["EMAIL", "PHONE"]);
const flagAws = builtin("flag-aws", "flag", ["AWS_SECRET_ACCESS_KEY"]);

/** What a check made of an answer: the rule that refused it, or its text; and the outcomes recorded. */
interface Verdict {
  denied: string | null;
  text: string | null;
  outcomes: GuardrailOutcome[];
}

const ruleOf = (err: unknown) => {
  if (err instanceof PolicyDenied) return err.rule;
  throw err;
};

/** The verdict on `text` as a JSON answer (run.ts); outcomes that found nothing are not recorded. */
async function jsonVerdict(guardrails: ResolvedGuardrail[], text: string): Promise<Verdict> {
  const slot: TextSlot = { param: "", text, write: (t) => slot.text = t };
  const outcomes: GuardrailOutcome[] = [];
  const req = { phase: "output" as const, alias: "a", token: "t", signal: new AbortController().signal };
  let denied: string | null = null;
  await runGuardrails(guardrails, [slot], { ...req, masker: createMasker() }, outcomes)
    .catch((err) => denied = ruleOf(err));
  return { denied, text: denied ? null : slot.text, outcomes: outcomes.filter((o) => o.action !== "pass") };
}

/** The verdict on `pieces` as one stream lane (output_lane.ts) at the gateway's window and cap. */
async function streamVerdict(guardrails: ResolvedGuardrail[], pieces: string[]): Promise<Verdict> {
  const outcomes: GuardrailOutcome[] = [];
  const merged = streamOutcomes(guardrails, outcomes);
  const lane = laneOf({
    guardrails,
    req: {
      phase: "output",
      alias: "a",
      token: "t",
      signal: new AbortController().signal,
      masker: createMasker(),
    },
    outcomes: merged,
    onDeny: (g, types): never => {
      merged.note({ name: g.name, phase: "output", action: "deny", types: [...types] });
      throw guardrailDenied(g, "output", types.join(", "), null);
    },
    window: OUTPUT_WINDOW,
    cap: OUTPUT_CAP,
  }, undefined);
  let out = "";
  try {
    for (const piece of pieces) out += await lane.push(piece);
    out += await lane.end();
  } catch (err) {
    return { denied: ruleOf(err), text: null, outcomes };
  }
  return { denied: null, text: out, outcomes };
}

/** `text` cut into pieces of `size` characters. */
function cut(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

/** Chunkings of `text`: whole, one character per chunk, pieces of a few sizes, and split at each `at`. */
function chunkings(text: string, at: readonly number[]): string[][] {
  return [
    [text],
    [...text],
    ...[2, 3, 7, 13, 64].map((n) => cut(text, n)),
    ...at.map((i) => [text.slice(0, i), text.slice(i)]),
  ];
}

/** Every chunking of `text` gets the JSON answer's verdict, which is `expected`. */
async function sameVerdict(guardrails: ResolvedGuardrail[], text: string, at: number[], expected: Verdict) {
  const json = await jsonVerdict(guardrails, text);
  assert.deepEqual(json, expected, "the JSON answer's verdict");
  for (const pieces of chunkings(text, at)) {
    const label = `${pieces.length} chunks (${pieces.slice(0, 2).map((p) => p.length).join(", ")}, …)`;
    assert.deepEqual(await streamVerdict(guardrails, pieces), json, label);
  }
}

const PAD = "Some words of the answer before it. ".repeat(10); // past the window: text is released before it
const CARD = "4111 1111 1111 1111";

Deno.test("builtin window: a card number is no phone number on a stream, whatever its prefix looked like", async () => {
  const text = `${PAD}Pay with ${CARD} today. ${PAD}`;
  // Cut where the card's start alone reads as a phone number (`4111 1111 11`).
  const at = [PAD.length + 9 + 12, PAD.length + 9 + 13];
  await sameVerdict([denyPhone], text, at, { denied: null, text, outcomes: [] });
  // Refused by the guardrail that refuses cards, not by the one before it that refuses phone numbers.
  await sameVerdict([denyPhone, denyCard], text, at, {
    denied: "guardrail:deny-card",
    text: null,
    outcomes: [{ name: "deny-card", phase: "output", action: "deny", types: ["CREDIT_CARD"] }],
  });
});

Deno.test("builtin window: what the stream released before a value is its context, as in the whole answer", async () => {
  // Digits glued to a word are no card number; where the window's text starts after `abc`, they stood alone.
  const text = `${PAD}ref abc4111111111111111 ok ${PAD}`;
  const glued = PAD.length + "ref abc".length;
  await sameVerdict([denyCard], text, [glued, glued + 1], { denied: null, text, outcomes: [] });
  // A secret is known by its name 150 characters before it (a key without `/` or `+`).
  const secret = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY12";
  const text2 = `${PAD}aws_secret_access_key is below.${" ".repeat(150)}${secret} ${PAD}`;
  await sameVerdict([flagAws], text2, [text2.indexOf(secret)], {
    denied: null,
    text: text2,
    outcomes: [{ name: "flag-aws", phase: "output", action: "flag", types: ["AWS_SECRET_ACCESS_KEY"] }],
  });
});

Deno.test("builtin window: built-ins listed together read what the ones before them left, as in JSON", async () => {
  const text = `${PAD}mail bob@example.com now or call +1 415 555 2671. ${PAD}`;
  const masked = text.replace("bob@example.com", "<EMAIL_1>");
  const at = [text.indexOf("@"), text.indexOf("+")];
  // The address is masked before the deny reads the answer: nothing left to refuse.
  await sameVerdict([maskEmail, denyCard], text, at, {
    denied: null,
    text: masked,
    outcomes: [{ name: "mask-email", phase: "output", action: "mask", types: ["EMAIL"] }],
  });
  await sameVerdict([maskEmail, denyAll], text, at, {
    denied: "guardrail:deny-all",
    text: null,
    outcomes: [
      { name: "mask-email", phase: "output", action: "mask", types: ["EMAIL"] },
      { name: "deny-all", phase: "output", action: "deny", types: ["PHONE"] },
    ],
  });
  // The address is recorded under the guardrail that masked it only; the second masks the phone number.
  await sameVerdict([maskEmail, maskContacts], text, at, {
    denied: null,
    text: masked.replace("+1 415 555 2671", "<PHONE_1>"),
    outcomes: [
      { name: "mask-email", phase: "output", action: "mask", types: ["EMAIL"] },
      { name: "mask-contacts", phase: "output", action: "mask", types: ["PHONE"] },
    ],
  });
});

const maskCard = builtin("mask-card", "mask", ["CREDIT_CARD"]);
const maskKey = builtin("mask-key", "mask", ["OPENAI_API_KEY"]);
const maskPhone = builtin("mask-phone", "mask", ["PHONE"]);
const maskIp = builtin("mask-ip", "mask", ["IP_ADDRESS"]);
const denyIp = builtin("deny-ip", "deny", ["IP_ADDRESS"]);
const flagPhone = builtin("flag-phone", "flag", ["PHONE"]);
const KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD";

Deno.test("builtin window: a value glued to one an earlier guardrail masked is read after its placeholder", async () => {
  // The address (the card, the key) is released masked before the phone number's end arrives; the next check
  // reads it as context, where the guardrails after the mask must see its placeholder, as in the JSON answer.
  const email = `${PAD}Reach a@example.com+1 415 555 2671 any time. ${PAD}`;
  const denied = (types: string[]) => ({
    denied: "guardrail:deny-phone",
    text: null,
    outcomes: [
      { name: types[0], phase: "output" as const, action: "mask" as const, types: [types[1]] },
      { name: "deny-phone", phase: "output" as const, action: "deny" as const, types: ["PHONE"] },
    ],
  });
  await sameVerdict([maskEmail, denyPhone], email, [email.indexOf("+")], denied(["mask-email", "EMAIL"]));
  const card = `${PAD}Card 4111111111111111(415) 555-2671 on file. ${PAD}`;
  await sameVerdict([maskCard, denyPhone], card, [card.indexOf("(")], denied(["mask-card", "CREDIT_CARD"]));
  const key = `${PAD}key ${KEY}+1 415 555 2671 end ${PAD}`;
  await sameVerdict([maskKey, maskPhone], key, [key.indexOf("+")], {
    denied: null,
    text: key.replace(KEY, "<OPENAI_API_KEY_1>").replace("+1 415 555 2671", "<PHONE_1>"),
    outcomes: [
      { name: "mask-key", phase: "output", action: "mask", types: ["OPENAI_API_KEY"] },
      { name: "mask-phone", phase: "output", action: "mask", types: ["PHONE"] },
    ],
  });
});

Deno.test("builtin window: a deny or a flag before a mask decides what the mask's placeholder releases", async () => {
  // The mask after it finds a value reaching past the release point, released whole through its end: what
  // the guardrails before it find there is decided in that check, never left in the context unread.
  const ip = `${PAD}host ${KEY}-192.168.10.1 ok ${PAD}`;
  await sameVerdict([denyIp, maskKey], ip, [ip.indexOf("-192")], {
    denied: "guardrail:deny-ip",
    text: null,
    outcomes: [{ name: "deny-ip", phase: "output", action: "deny", types: ["IP_ADDRESS"] }],
  });
  const phone = `${PAD}Call ref: ::020 7946 0958 now ${PAD}`;
  await sameVerdict([denyPhone, maskIp], phone, [phone.indexOf("020")], {
    denied: "guardrail:deny-phone",
    text: null,
    outcomes: [{ name: "deny-phone", phase: "output", action: "deny", types: ["PHONE"] }],
  });
  const json = await jsonVerdict([flagPhone, maskIp], phone);
  await sameVerdict([flagPhone, maskIp], phone, [phone.indexOf("020")], {
    denied: null,
    text: json.text,
    outcomes: [
      { name: "flag-phone", phase: "output", action: "flag", types: ["PHONE"] },
      { name: "mask-ip", phase: "output", action: "mask", types: ["IP_ADDRESS"] },
    ],
  });
  assert.notEqual(json.text, phone, "the address is masked");
});

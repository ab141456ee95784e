import assert from "node:assert/strict";
import { createMasker } from "./mask.ts";
import { type Lane, laneOf } from "./output_lane.ts";
import type { GuardrailOutcome, ResolvedGuardrail } from "./resolved.ts";
import { outputBuiltin } from "./guardrail_test_helpers.ts";
import { guardrailDenied } from "./run.ts";
import { streamOutcomes } from "./stream_outcomes.ts";
import type { GuardrailService, Verdict } from "./types.ts";

const WINDOW = 32;

const builtin = outputBuiltin;

/** An external guardrail whose service records every call's texts and answers `verdict` (or fails). */
function external(name: string, verdict: (texts: readonly string[]) => Verdict | Error) {
  const calls: string[][] = [];
  const service: GuardrailService = {
    check: (input) => {
      calls.push([...input.texts]);
      const v = verdict(input.texts);
      return v instanceof Error ? Promise.reject(v) : Promise.resolve(v);
    },
  };
  const g: ResolvedGuardrail = { ...builtin(name, "deny", []), pii: null, service };
  return { g, calls };
}

/** Lanes under `guardrails` (window {@linkcode WINDOW}) sharing one request's masker and outcomes. */
function lanes(guardrails: ResolvedGuardrail[]) {
  const outcomes: GuardrailOutcome[] = [];
  const merged = streamOutcomes(guardrails, outcomes);
  const masker = createMasker();
  const setup = {
    guardrails,
    req: { phase: "output" as const, alias: "a", token: "t", signal: new AbortController().signal, masker },
    outcomes: merged,
    onDeny: (g: ResolvedGuardrail, types: readonly string[]): never => {
      merged.note({ name: g.name, phase: "output", action: "deny", types: [...types] });
      throw guardrailDenied(g, "output", types.join(", "), null);
    },
    window: WINDOW,
    cap: 4 * WINDOW,
  };
  return { outcomes, open: () => laneOf(setup, undefined) };
}

/** `pieces` through `lane`: what it released, or the error that stopped it. */
async function run(lane: Lane, pieces: string[]): Promise<{ text: string; error?: unknown }> {
  let text = "";
  try {
    for (const p of pieces) text += await lane.push(p);
    text += await lane.end();
  } catch (error) {
    return { text, error };
  }
  return { text };
}

/** `text` cut into pieces of `size`. */
const cut = (text: string, size: number) =>
  Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size));

Deno.test("output lane: a service after a built-in mask is sent only what the window released, masked", async () => {
  const text = `Write to bob.private@corp-mail.org soon. ${
    "x".repeat(70)
  } and again bob.private@corp-mail.org.`;
  for (const size of [1, 5, 17, 40, 500]) {
    const hook = external("hook", () => ({ action: "allow" }));
    const { open } = lanes([builtin("mask", "mask", ["EMAIL"]), hook.g]);
    const got = await run(open(), cut(text, size));
    assert.equal(got.error, undefined);
    const masked = `Write to <EMAIL_1> soon. ${"x".repeat(70)} and again <EMAIL_1>.`;
    assert.equal(got.text, masked, `size ${size}`);
    assert.equal(hook.calls.flat().join(""), masked, `size ${size}: the service read what the client got`);
    assert.ok(!JSON.stringify(hook.calls).includes("@"), `size ${size}: never a piece of the address`);
    assert.ok(
      hook.calls.every((c) => c.length === 1 && c[0] !== ""),
      `size ${size}: never asked about nothing`,
    );
  }
});

Deno.test("output lane: a built-in after a service reads what the service left", async () => {
  // The service writes an address in; the mask after it masks it, as in a JSON answer.
  const hook = external("hook", (texts) => ({
    action: "replace",
    texts: texts.map((t) => t.replaceAll("SOMEONE", "ann@example.org")),
    categories: ["rewrite"],
  }));
  const { open, outcomes } = lanes([hook.g, builtin("mask", "mask", ["EMAIL"])]);
  const got = await run(open(), cut(`Ask SOMEONE. ${"y".repeat(40)} Then SOMEONE again.`, 9));
  assert.equal(got.text, `Ask <EMAIL_1>. ${"y".repeat(40)} Then <EMAIL_1> again.`);
  assert.deepEqual(outcomes, [
    { name: "hook", phase: "output", action: "replace", types: ["rewrite"] },
    { name: "mask", phase: "output", action: "mask", types: ["EMAIL"] },
  ]);
});

Deno.test("output lane: a service after a built-in deny never gets what it refuses", async () => {
  const hook = external("hook", () => ({ action: "allow" }));
  const { open, outcomes } = lanes([builtin("cards", "deny", ["CREDIT_CARD"]), hook.g]);
  const got = await run(open(), ["a".repeat(60), " card 4111 1111", " 1111 1111 ", "b".repeat(60)]);
  assert.ok(got.error instanceof Error);
  assert.ok(!JSON.stringify(hook.calls).includes("4111") && !JSON.stringify(hook.calls).includes("1111"));
  assert.ok(!got.text.includes("4111"));
  // The service read the text before the card (released, so judged); the record shows what it did not pass.
  assert.deepEqual(outcomes.filter((o) => o.action !== "pass"), [
    { name: "cards", phase: "output", action: "deny", types: ["CREDIT_CARD"] },
  ]);
});

Deno.test("output lane: one outcome per guardrail over segments and lanes, in the guardrails' order", async () => {
  const hook = external("hook", () => new Error("down"));
  const { open, outcomes } = lanes([
    builtin("mask", "mask", ["EMAIL"]),
    hook.g,
    builtin("ips", "flag", ["IP_ADDRESS"]),
  ]);
  const content = await run(
    open(),
    cut(`${"c".repeat(100)} from 10.1.2.3 to bob@example.com ${"d".repeat(100)}`, 10),
  );
  const reasoning = await run(open(), cut(`${"r".repeat(200)} mail ann@example.org`, 10));
  assert.equal(content.error, undefined);
  assert.equal(reasoning.text, `${"r".repeat(200)} mail <EMAIL_2>`);
  assert.ok(hook.calls.length >= 4, "the service was asked per segment of each lane");
  assert.deepEqual(outcomes, [
    { name: "mask", phase: "output", action: "mask", types: ["EMAIL"] },
    { name: "hook", phase: "output", action: "error", error: "unavailable" },
    { name: "ips", phase: "output", action: "flag", types: ["IP_ADDRESS"] },
  ]);
});

Deno.test("output lane: a value at the window's end is recorded as what it turns out to be", async () => {
  // `4111 1111 11` reads as a phone number until the card's last digits come: nothing is flagged.
  const { open, outcomes } = lanes([builtin("phones", "flag", ["PHONE"])]);
  const got = await run(open(), ["x".repeat(40), " card 4111 1111 11", "11 1111 ok.", "y".repeat(40)]);
  assert.equal(got.error, undefined);
  assert.deepEqual(outcomes, []);
  const phone = lanes([builtin("phones", "flag", ["PHONE"])]);
  await run(phone.open(), ["x".repeat(40), " call 415 555 2671", " now.", "y".repeat(40)]);
  assert.deepEqual(phone.outcomes, [{ name: "phones", phase: "output", action: "flag", types: ["PHONE"] }]);
});

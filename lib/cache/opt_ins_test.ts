/**
 * The one rule of the cache's opt-ins: each thing an answer holds needs its own opt-in, and an answer holding
 * several needs each of them.
 */
import assert from "node:assert/strict";
import { askedChoices, cutOff, optedIn, type OptIns } from "./opt_ins.ts";

const NONE: OptIns = { toolCalls: false, incomplete: false, n: false };
const WHOLE = { calls: false, cut: false };
const CALLS = { calls: true, cut: false };
const CUT = { calls: false, cut: true };
const BOTH = { calls: true, cut: true };

Deno.test("opt-ins: a whole answer needs none; a call, a cut, both each need theirs", () => {
  const table: [string, OptIns, boolean[]][] = [
    ["none", NONE, [true, false, false, false]],
    ["toolCalls", { ...NONE, toolCalls: true }, [true, true, false, false]],
    ["incomplete", { ...NONE, incomplete: true }, [true, false, true, false]],
    ["both", { ...NONE, toolCalls: true, incomplete: true }, [true, true, true, true]],
    ["n", { ...NONE, n: true }, [true, false, false, false]],
  ];
  for (const [name, settings, expected] of table) {
    const got = [WHOLE, CALLS, CUT, BOTH].map((ending) => optedIn([ending], 1, settings));
    assert.deepEqual(got, expected, name);
  }
});

Deno.test("opt-ins: several choices, given or asked, need n, and each choice its own opt-ins", () => {
  assert.equal(optedIn([WHOLE, WHOLE], 1, NONE), false);
  assert.equal(optedIn([WHOLE, WHOLE], 1, { ...NONE, n: true }), true);
  assert.equal(optedIn([WHOLE], 2, NONE), false, "two asked, one given");
  assert.equal(optedIn([WHOLE], 2, { ...NONE, n: true }), true);
  assert.equal(optedIn([WHOLE, CUT], 2, { ...NONE, n: true }), false);
  assert.equal(optedIn([WHOLE, CUT], 2, { ...NONE, n: true, incomplete: true }), true);
  assert.equal(optedIn([], 1, { toolCalls: true, incomplete: true, n: true }), false, "no choice");
});

Deno.test("opt-ins: cut off is any finish reason but stop and the calls'; n of 1 or none asks one", () => {
  for (const reason of ["stop", "tool_calls", "function_call"]) assert.equal(cutOff(reason), false, reason);
  for (const reason of ["length", "content_filter", null, undefined]) assert.equal(cutOff(reason), true);
  const chat = { model: "m", messages: [] };
  assert.equal(askedChoices(chat), 1);
  assert.equal(askedChoices({ ...chat, n: 1 }), 1);
  assert.equal(askedChoices({ ...chat, n: 3 }), 3);
});

import assert from "node:assert/strict";
import { type CheckResult, createHoldback, type Holdback, type HoldbackStep } from "./holdback.ts";

const EMAIL = /[A-Za-z0-9._+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;

/** The output guardrail under test: deny `forbidden`, mask every email. */
function check(text: string): CheckResult {
  if (text.includes("forbidden")) return { ok: false, reason: "not allowed", categories: ["WORDS"] };
  const replace = [...text.matchAll(EMAIL)].map((m) => ({
    start: m.index,
    end: m.index + m[0].length,
    with: "<EMAIL>",
  }));
  return { ok: true, replace };
}

/** What the whole answer becomes when checked in one piece. */
function maskWhole(text: string): string {
  const hb = createHoldback({ window: 0, check });
  return hb.push(text).release + hb.end().release;
}

/** Every way to cut `text` in two and, for short texts, in three. */
function* cuts(text: string, three: boolean): Generator<string[]> {
  for (let i = 0; i <= text.length; i++) {
    yield [text.slice(0, i), text.slice(i)];
    if (!three) continue;
    for (let j = i; j <= text.length; j++) yield [text.slice(0, i), text.slice(i, j), text.slice(j)];
  }
}

interface Run {
  steps: HoldbackStep[];
  released: string;
  denied: boolean;
}

/** Feeds `chunks` and `end`, checking the bounds on the way: held ≤ window, checked ≤ window + chunk. */
function run(chunks: readonly string[], window: number): Run {
  let lastChecked = 0;
  const hb: Holdback = createHoldback({
    window,
    check: (text) => {
      lastChecked = text.length;
      return check(text);
    },
  });
  const steps: HoldbackStep[] = [];
  let fed = 0;
  for (const chunk of chunks) {
    lastChecked = 0;
    const step = hb.push(chunk);
    steps.push(step);
    fed += chunk.length;
    assert.ok(lastChecked <= window + chunk.length, `checked ${lastChecked} > ${window} + ${chunk.length}`);
    assert.ok(hb.held <= window, `held ${hb.held} > ${window}`);
    if (!step.denied) assert.ok(hb.held <= fed);
  }
  steps.push(hb.end());
  assert.throws(() => hb.end());
  return { steps, released: steps.map((s) => s.release).join(""), denied: steps.some((s) => s.denied) };
}

const DENIED = "Sure, here it is: the forbidden word, and more text after it.";

Deno.test("holdback: a deny word cut anywhere is caught; nothing from it on is released", () => {
  const at = DENIED.indexOf("forbidden");
  for (const window of [9, 12, 40, DENIED.length + 5]) {
    for (const chunks of cuts(DENIED, window === 12)) {
      const { steps, released, denied } = run(chunks, window);
      assert.ok(denied, `not denied: ${JSON.stringify(chunks)}`);
      assert.ok(DENIED.startsWith(released), "released text is not the answer's start");
      assert.ok(released.length <= at, `released past the deny word: ${JSON.stringify(released)}`);
      // The denial is told once, and every step after it repeats it with nothing released.
      const first = steps.findIndex((s) => s.denied);
      for (const step of steps.slice(first)) {
        assert.deepEqual(step, { release: "", denied: { reason: "not allowed", categories: ["WORDS"] } });
      }
    }
  }
});

Deno.test("holdback: a deny word one character at a time", () => {
  // Its last letter arrives with the 8 before it and one character more held: all before those is out.
  const { released, denied } = run([...DENIED], 9);
  assert.ok(denied);
  assert.equal(released, DENIED.slice(0, DENIED.indexOf("forbidden") - 1));
});

const EMAILS = "Mail bob.smith@example.com, or ann@test.org; not bob@ nor @x. Thanks, ann@test.org!";

Deno.test("holdback: an email cut anywhere is masked whole", () => {
  const expected = maskWhole(EMAILS);
  assert.equal(expected, "Mail <EMAIL>, or <EMAIL>; not bob@ nor @x. Thanks, <EMAIL>!");
  for (const window of [21, 24, 30]) {
    for (const chunks of cuts(EMAILS, window === 21)) {
      const { steps, released, denied } = run(chunks, window);
      assert.ok(!denied);
      assert.equal(released, expected, JSON.stringify(chunks));
      // No release shows any part of an address: every `@` left is one of the text's own non-addresses.
      for (const step of steps) assert.ok(!/[a-z]@[a-z]/.test(step.release), step.release);
    }
  }
  assert.equal(run([...EMAILS], 21).released, expected);
});

const CLEAN = "Plain text: 日本語, é, emoji 😀👍🏽 and a < b > c; nothing to mask here at all.";

/** Whether `text` holds half a surrogate pair. */
function hasLoneSurrogate(text: string): boolean {
  return /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

Deno.test("holdback: clean text comes through unchanged at every cut, delayed by at most the window", () => {
  for (const window of [0, 1, 2, 7, CLEAN.length, CLEAN.length + 1]) {
    for (const chunks of cuts(CLEAN, window === 7)) {
      const { steps, released } = run(chunks, window);
      assert.equal(released, CLEAN);
      // Delay: after each push, all but the last `window` characters fed are out (one more for a whole pair).
      let fed = 0;
      let out = 0;
      for (const [i, chunk] of chunks.entries()) {
        fed += chunk.length;
        out += steps[i].release.length;
        assert.ok(fed - out <= window, `held ${fed - out} > ${window}`);
      }
      // A release never ends between the halves of a pair the answer had whole.
      const whole = chunks.every((c) => !hasLoneSurrogate(c));
      if (whole) {
        for (const step of steps) assert.ok(!hasLoneSurrogate(step.release), JSON.stringify(step));
      }
    }
  }
});

Deno.test("holdback: held text stays bounded by the window across chunk sizes", () => {
  const text = (EMAILS + " " + CLEAN + " ").repeat(20);
  const expected = maskWhole(text);
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % 97;
  for (const window of [21, 32, 64]) {
    const chunks: string[] = [];
    for (let i = 0; i < text.length;) {
      const size = next();
      chunks.push(text.slice(i, i + size));
      i += size;
    }
    assert.equal(run(chunks, window).released, expected);
  }
});

Deno.test("holdback: a finding across the release point is masked whole and released through its end", () => {
  const hb = createHoldback({ window: 8, check });
  // The email starts before the release point (length − 8) and ends after it.
  assert.deepEqual(hb.push("hello bob@example.com xyz"), { release: "hello <EMAIL>" });
  assert.equal(hb.held, 4);
  assert.deepEqual(hb.end(), { release: " xyz" });
});

Deno.test("holdback: a finding after the release point waits for more text", () => {
  const hb = createHoldback({ window: 16, check });
  assert.deepEqual(hb.push("one two three four bob@example.co"), { release: "one two three fou" });
  assert.equal(hb.held, 16);
  assert.deepEqual(hb.push("m and more text to push it out"), { release: "r <EMAIL> and more tex" });
  assert.deepEqual(hb.end(), { release: "t to push it out" });
});

Deno.test("holdback: end() checks and releases the tail", () => {
  const short = createHoldback({ window: 100, check });
  assert.deepEqual(short.push("reach me at "), { release: "" });
  assert.deepEqual(short.push("ann@test.org"), { release: "" });
  assert.equal(short.held, 24);
  assert.deepEqual(short.end(), { release: "reach me at <EMAIL>" });
  assert.throws(() => short.push("more"), /push after end/);

  const late = createHoldback({ window: 100, check });
  assert.deepEqual(late.push("a forbid"), { release: "" });
  assert.deepEqual(late.push("den"), {
    release: "",
    denied: { reason: "not allowed", categories: ["WORDS"] },
  });
  assert.deepEqual(late.end(), { release: "", denied: { reason: "not allowed", categories: ["WORDS"] } });

  const empty = createHoldback({ window: 4, check: () => assert.fail("nothing to check") });
  assert.deepEqual(empty.push(""), { release: "" });
  assert.deepEqual(empty.end(), { release: "" });
});

Deno.test("holdback: replacements out of range are ignored, overlapping ones swallowed", () => {
  const hb = createHoldback({
    window: 0,
    check: () => ({
      ok: true,
      replace: [
        { start: 6, end: 9, with: "[B]" }, // overlaps A: masked with it
        { start: 2, end: 7, with: "[A]" },
        { start: 8, end: 99, with: "[X]" }, // past the end
        { start: 3, end: 1, with: "[X]" },
      ],
    }),
  });
  assert.deepEqual(hb.push("0123456789"), { release: "01[A]9" });
});

Deno.test("holdback: the window must be a non-negative integer", () => {
  for (const window of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(() => createHoldback({ window, check }), RangeError);
  }
});

/**
 * A check for long values: `[[…]]` is a value, masked whole as `<V>`; an `[[` without its `]]` is open from
 * there (masked through the end of the text, as a private key without its END line is).
 */
function bracketCheck(text: string): CheckResult {
  const replace = [...text.matchAll(/\[\[[^\]]*\]\]/g)].map((m) => ({
    start: m.index,
    end: m.index + m[0].length,
    with: "<V>",
  }));
  const last = text.lastIndexOf("[[");
  if (last === -1 || text.indexOf("]]", last) !== -1) return { ok: true, replace };
  return { ok: true, replace: [...replace, { start: last, end: text.length, with: "<V>" }], open: last };
}

Deno.test("holdback: a value reported open is held past the window until it ends, then masked whole", () => {
  const value = `[[${"x".repeat(100)}]]`;
  const text = `before ${value} after the value, and some more text.`;
  for (const size of [1, 7, 30]) {
    const chunks: string[] = [];
    for (let i = 0; i < text.length; i += size) chunks.push(text.slice(i, i + size));
    const hb = createHoldback({ window: 8, cap: 200, check: bracketCheck });
    let released = "";
    for (const chunk of chunks) {
      const step = hb.push(chunk);
      assert.ok(
        !step.release.includes("x"),
        `a piece of the value went out: ${JSON.stringify(step.release)}`,
      );
      released += step.release;
      assert.ok(hb.held <= 200 + 8 + size, `held ${hb.held}`);
    }
    released += hb.end().release;
    assert.equal(released, "before <V> after the value, and some more text.");
  }
});

Deno.test("holdback: a check while a value is open waits for `window` more characters", () => {
  let checks = 0;
  const hb = createHoldback({
    window: 10,
    cap: 1000,
    check: (text) => {
      checks++;
      return bracketCheck(text);
    },
  });
  assert.deepEqual(hb.push("ab [[xy"), { release: "" });
  assert.equal(checks, 1);
  for (let i = 0; i < 9; i++) assert.deepEqual(hb.push("z"), { release: "" });
  assert.equal(checks, 1, "9 characters came: no check yet");
  assert.deepEqual(hb.push("]] and then text"), { release: "ab <V> and" });
  assert.equal(checks, 2);
  assert.deepEqual(hb.end(), { release: " then text" });
});

Deno.test("holdback: past the cap an open value is no longer held (the check masks it), and held stays bounded", () => {
  const hb = createHoldback({ window: 4, cap: 20, check: bracketCheck });
  assert.deepEqual(hb.push("ok [["), { release: "o" });
  assert.deepEqual(hb.push("y".repeat(10)), { release: "k " });
  // 22 characters from the `[[`: more than the cap, so the check's mask through the end is released.
  assert.deepEqual(hb.push("y".repeat(10)), { release: "<V>" });
  assert.equal(hb.held, 0);
  assert.throws(() => createHoldback({ window: 4, cap: -1, check: bracketCheck }), RangeError);
});

Deno.test("holdback: an open value of exactly the cap is still held, and masked whole when it ends", () => {
  const hb = createHoldback({ window: 4, cap: 20, check: bracketCheck });
  assert.deepEqual(hb.push("ok [["), { release: "o" });
  // 20 characters from the `[[`: at the cap, not past it, so none of the value goes out yet.
  assert.deepEqual(hb.push("y".repeat(18)), { release: "k " });
  assert.deepEqual(hb.push("]] end"), { release: "<V>" });
  assert.deepEqual(hb.end(), { release: " end" });
});

Deno.test("holdback: once `window` characters came after an open value, the value that ended goes out", () => {
  const hb = createHoldback({ window: 10, cap: 1000, check: bracketCheck });
  assert.deepEqual(hb.push("ab [[xy"), { release: "" });
  // Exactly `window` more characters: checked again now, not one chunk later.
  assert.deepEqual(hb.push("]]12345678"), { release: "ab <V>" });
  assert.deepEqual(hb.end(), { release: "12345678" });
});

Deno.test("holdback: without a cap an open value is held no longer than the window", () => {
  const hb = createHoldback({ window: 4, check: bracketCheck });
  // The open value (from offset 3) is 9 characters long, past the default cap of 4: released as masked.
  assert.deepEqual(hb.push("ok [[yyyyyyy"), { release: "ok <V>" });
});

Deno.test("holdback: `drop` removes the text's start at once, however short the text", () => {
  let dropping = true;
  const hb = createHoldback({
    window: 10,
    check: (text) => {
      if (!dropping) return { ok: true };
      const end = text.indexOf("|");
      if (end !== -1) dropping = false;
      return { ok: true, drop: end === -1 ? text.length : end + 1 };
    },
  });
  assert.deepEqual(hb.push("rest of"), { release: "" });
  assert.equal(hb.held, 0);
  assert.deepEqual(hb.push(" it| then"), { release: "" });
  assert.equal(hb.held, 5);
  assert.deepEqual(hb.end(), { release: " then" });
});

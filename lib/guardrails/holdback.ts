/**
 * Output checks on a stream (issue 27): a sliding window across chunk boundaries with a bounded hold-back, so
 * the client sees text only after it passed.
 *
 * A check (a deny word, a recognizer that masks PII) cannot look at one chunk at a time: `bob@exa` and
 * `mple.com` are each harmless. The hold-back keeps the last `window` characters of the answer unreleased;
 * each time text arrives it checks everything unreleased and releases all but the last `window` characters.
 * So every character is released only after a check saw it together with the `window` characters after it,
 * and a deny word or a value of up to `window` characters is whole in some check however the stream was cut.
 *
 * Masking. A replacement (a finding) is applied when it starts before the release point: it then had at least
 * `window` characters of text after its start, so a value of up to `window` characters is complete and masked
 * whole. One that reaches past the release point is masked whole too and released through its end, never cut
 * in half; one starting after the release point waits for the next check, which sees it again with more text
 * after it (`bob@example.co` at the tail may still become `.com`). A check sees the unreleased text from the
 * last release point, so a finding at its very start has no left context (a recognizer that wants a word
 * boundary before a match sees the start of text): that can mask more, never less.
 *
 * Costs. Latency: text is delayed by at most `window` characters; it is released as soon as later text pushes
 * it out of the window, or at the end. Memory: the held text is at most `window` characters between pushes,
 * so a check sees at most `window` + the chunk just pushed. Time: each push checks that much again, so a
 * recognizer's linear cost is paid about (`window` / chunk size) times per character.
 *
 * @module
 */

/** One replacement in the text a check was given: `[start, end)` becomes `with`. */
export interface Replacement {
  readonly start: number;
  readonly end: number;
  readonly with: string;
}

/** What an output check decides about a text. */
export type CheckResult =
  /** Pass, with these spans replaced (masking); none means as is. */
  | { readonly ok: true; readonly replace?: readonly Replacement[] }
  /** Stop the answer: `reason` for the client; `categories` (never the matched text) for the policy outcome. */
  | { readonly ok: false; readonly reason: string; readonly categories: readonly string[] };

/** Why a stream was stopped. */
export interface Denial {
  readonly reason: string;
  readonly categories: readonly string[];
}

/** What the client may be sent now. After a denial, `release` is always empty and `denied` is set. */
export interface HoldbackStep {
  readonly release: string;
  readonly denied?: Denial;
}

export interface HoldbackOptions {
  /** Characters (UTF-16 code units) held back: the longest deny word or value the check sees whole. */
  readonly window: number;
  /** Pure and synchronous; sees the unreleased text. Thrown errors reach the caller of `push`/`end`. */
  readonly check: (text: string) => CheckResult;
}

/** One answer's hold-back. Not shared across answers. */
export interface Holdback {
  /** The next piece of the answer: what passed and may be sent, or the denial that stops it. */
  push(chunk: string): HoldbackStep;
  /** The answer ended: checks and releases the held rest. Calling `push` or `end` after it throws. */
  end(): HoldbackStep;
  /** Characters held now (at most `window` between calls). */
  readonly held: number;
}

const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/**
 * Applies the valid replacements that start before `upTo`, in start order (one overlapping a replacement
 * already applied is swallowed by it: its rest masked too, never let out; one reaching out of the text is
 * ignored), and returns the released text, masked, and where the release ends in
 * `text`: `upTo`, or the end of an applied replacement that reaches past it.
 */
function releaseUpTo(
  text: string,
  upTo: number,
  replace: readonly Replacement[] | undefined,
): { released: string; end: number } {
  if (!replace || replace.length === 0) return { released: text.slice(0, upTo), end: upTo };
  const ordered = replace
    .filter((r) =>
      Number.isInteger(r.start) && Number.isInteger(r.end) && r.start >= 0 && r.start <= r.end &&
      r.end <= text.length && r.start < upTo
    )
    .sort((a, b) => a.start - b.start || b.end - a.end);
  let out = "";
  let from = 0;
  for (const r of ordered) {
    if (r.start < from) {
      from = Math.max(from, r.end); // overlaps one applied: masked with it, rather than let its rest out
      continue;
    }
    out += text.slice(from, r.start) + r.with;
    from = r.end;
  }
  const end = Math.max(from, upTo);
  return { released: out + text.slice(from, end), end };
}

/** A hold-back of `window` characters in front of `check`. Throws a `RangeError` for a bad `window`. */
export function createHoldback(options: HoldbackOptions): Holdback {
  const { window, check } = options;
  if (!Number.isSafeInteger(window) || window < 0) {
    throw new RangeError(`window must be a non-negative integer, not ${window}`);
  }
  let held = "";
  let denied: Denial | undefined;
  let ended = false;

  /** Checks `text` (the held text and what just came) and releases all of it but the last `window` characters. */
  const step = (text: string, final: boolean): HoldbackStep => {
    const result = check(text);
    if (!result.ok) {
      denied = { reason: result.reason, categories: [...result.categories] };
      held = "";
      return { release: "", denied };
    }
    let upTo = final ? text.length : Math.max(0, text.length - window);
    // Never between the halves of a surrogate pair: a chunk ending in half a character would be mangled when
    // encoded on its own. Releasing the pair whole is safe: no finding starts at its second half.
    if (upTo > 0 && upTo < text.length && isHigh(text.charCodeAt(upTo - 1)) && isLow(text.charCodeAt(upTo))) {
      upTo += 1;
    }
    const { released, end } = releaseUpTo(text, upTo, result.replace);
    held = text.slice(end);
    return { release: released };
  };

  return {
    push(chunk) {
      if (ended) throw new Error("holdback: push after end");
      if (denied) return { release: "", denied };
      if (chunk === "") return { release: "" };
      return step(held + chunk, false);
    },
    end() {
      if (ended) throw new Error("holdback: end after end");
      ended = true;
      if (denied) return { release: "", denied };
      if (held === "") return { release: "" };
      return step(held, true);
    },
    get held() {
      return held.length;
    },
  };
}

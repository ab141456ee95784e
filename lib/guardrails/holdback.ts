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
 * last release point, and, with `context`, that many characters released before it to read (a recognizer that
 * wants a word boundary before a match sees what stood there, not the start of a text).
 *
 * Values longer than the window. A private key or a long JWT can run for kilobytes: its start would be
 * released before its end arrived, and what follows (base64 lines without the BEGIN line, a JWT's signature)
 * means nothing to a check on its own. So a check may say that a value starting at `open` may not be finished
 * at the end of its text: nothing from there on is released (a replacement starting there waits too) until a
 * later check sees it end, as long as it is at most `cap` characters long. A check that reports `open` must
 * deal with a value longer than `cap` itself (deny it, or mask it through the end of the text — then all of
 * the text is released and the next check's text starts right where it was cut — and `drop` the value's
 * continuation from the start of the next texts until it ends, which removes it at once, however short the
 * text); the hold-back never holds more than `cap` for it, whatever the check says. While
 * a value is held open, the hold-back checks again only once `window` more characters came (or at the end),
 * so a long value is not re-read for every small chunk.
 *
 * Costs. Latency: text is delayed by at most `window` characters; it is released as soon as later text pushes
 * it out of the window, or at the end. Memory: the held text is at most `window` characters between pushes,
 * plus `context` characters released before it, so a check reads at most `context` + `window` + the chunk
 * just pushed. Time: each push reads that much again, so a recognizer's linear cost is paid about
 * ((`context` + `window`) / chunk size) times per character (twice as often as without a context of `window`
 * characters). An open value raises these to `cap`: held text up to `cap` + `window` + a chunk, delayed until
 * the value ends, and read about (`cap` / `window`) times per character.
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
  /**
   * Pass, with these spans replaced (masking); none means as is. `open`: a value starts at this offset that
   * may continue past the end of the text (held from there; see the module's doc). `drop`: the text's first
   * `drop` characters are removed now, never released (the rest of a value masked at the cap).
   */
  | {
    readonly ok: true;
    readonly replace?: readonly Replacement[];
    readonly open?: number;
    readonly drop?: number;
  }
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
  /**
   * Most characters a value the check reports `open` is held for (default: `window`, which holds nothing
   * longer). Past it `open` is ignored: the check must have masked or denied such a value itself.
   */
  readonly cap?: number;
  /**
   * Characters of the text already released (as the check was given it, before its replacements) passed to
   * each check as `before` (default: none). A recognizer looks behind a value (a word glued to a number, the
   * name of a key 200 characters before it): without them, a check whose text starts where the last release
   * ended reads a value there as standing on its own, where the whole answer has it glued to what precedes.
   */
  readonly context?: number;
  /**
   * Synchronous; sees the unreleased text, once per step, and whether the answer ended (`final`: no value is
   * open any more, all of the text is released), and up to `context` characters released before it (`before`:
   * to read, not to find in; offsets stay `text`'s), and where `text` starts in the answer (`at`: characters
   * released before it, as checked, so a check may remember what it did to the text it released). Pure, unless
   * it reports values `open` or keeps what it masked for the context. Thrown errors reach the caller of
   * `push`/`end`.
   */
  readonly check: (text: string, final: boolean, before: string, at: number) => CheckResult;
}

/** One answer's hold-back. Not shared across answers. */
export interface Holdback {
  /** The next piece of the answer: what passed and may be sent, or the denial that stops it. */
  push(chunk: string): HoldbackStep;
  /** The answer ended: checks and releases the held rest. Calling `push` or `end` after it throws. */
  end(): HoldbackStep;
  /** Characters held now (at most `window` between calls, `cap` + `window` + a chunk while a value is open). */
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

/**
 * Where a check's text of `length` characters is released up to: all of it when the answer ended (`final`),
 * else all but the last `window` characters, and nothing from a value held `open` (one within the cap). A
 * replacement starting before it is applied in this step; one starting at or after it waits for the next check,
 * which may find it otherwise. So a check that notes what it found (output_lane.ts) notes only what starts
 * before it: what the client's text is made of. (A `drop`, or a surrogate pair it would split, moves the
 * release point on, past no finding.)
 */
export function releasePoint(length: number, window: number, final: boolean, open?: number): number {
  if (final) return length;
  const upTo = Math.max(0, length - window);
  return open === undefined ? upTo : Math.min(upTo, open);
}

/** A hold-back of `window` characters in front of `check`. Throws a `RangeError` for a bad `window` or `cap`. */
export function createHoldback(options: HoldbackOptions): Holdback {
  const { window, check, cap = window, context = 0 } = options;
  if (!Number.isSafeInteger(window) || window < 0) {
    throw new RangeError(`window must be a non-negative integer, not ${window}`);
  }
  // At least the window: then a value past the cap starts before the release point, and a replacement of it
  // through the end of the text is applied and releases all of it (what a check that masks at the cap needs).
  if (!Number.isSafeInteger(cap) || cap < window) {
    throw new RangeError(`cap must be an integer no less than the window, not ${cap}`);
  }
  if (!Number.isSafeInteger(context) || context < 0) {
    throw new RangeError(`context must be a non-negative integer, not ${context}`);
  }
  let held = "";
  /** The last `context` characters released, as checked (before replacements). */
  let before = "";
  /** Characters released so far, as checked (where the next check's text starts in the answer). */
  let at = 0;
  let denied: Denial | undefined;
  let ended = false;
  /** While a value is held open: the held length when last checked (the next check waits for `window` more). */
  let openChecked = -1;

  /** Checks `text` (the held text and what just came) and releases all of it but the last `window` characters. */
  const step = (text: string, final: boolean): HoldbackStep => {
    const result = check(text, final, before, at);
    if (!result.ok) {
      denied = { reason: result.reason, categories: [...result.categories] };
      held = "";
      return { release: "", denied };
    }
    const open = result.open;
    const holding = !final && open !== undefined && Number.isInteger(open) && open >= 0 &&
      open <= text.length && text.length - open <= cap;
    let upTo = releasePoint(text.length, window, final, holding ? open : undefined);
    let replace = result.replace;
    const drop = result.drop;
    if (drop !== undefined && Number.isInteger(drop) && drop > 0 && drop <= text.length) {
      replace = [{ start: 0, end: drop, with: "" }, ...(replace ?? [])];
      upTo = Math.max(upTo, drop);
    }
    // Never between the halves of a surrogate pair: a chunk ending in half a character would be mangled when
    // encoded on its own. Releasing the pair whole is safe: no finding starts at its second half.
    if (upTo > 0 && upTo < text.length && isHigh(text.charCodeAt(upTo - 1)) && isLow(text.charCodeAt(upTo))) {
      upTo += 1;
    }
    const { released, end } = releaseUpTo(text, upTo, replace);
    held = text.slice(end);
    at += end;
    if (context > 0 && end > 0) {
      before = (before + text.slice(Math.max(0, end - context), end)).slice(-context);
    }
    openChecked = holding ? held.length : -1;
    return { release: released };
  };

  return {
    push(chunk) {
      if (ended) throw new Error("holdback: push after end");
      if (denied) return { release: "", denied };
      if (chunk === "") return { release: "" };
      // A value held open only ends in later text: wait for `window` more before reading it all again.
      if (openChecked !== -1 && held.length + chunk.length - openChecked < window) {
        held += chunk;
        return { release: "" };
      }
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

/**
 * The check a stream's sliding window (holdback.ts) runs for consecutive built-in guardrails (output_lane.ts),
 * made to reach the verdict a JSON answer gets from run.ts for the same text, however the stream was cut:
 * - In the alias's order, each guardrail reading what the ones before it left: a value an earlier guardrail
 *   masks is, for the later ones, a placeholder (a stand-in here, as no placeholder is minted before its text is
 *   released), so `[mask EMAIL, deny]` masks the address and lets the answer through, and `[mask EMAIL, mask
 *   EMAIL+PHONE]` records the address under the first only, as in JSON.
 * - Deciding only about what the window releases now: a value found in the window's last `window` characters
 *   may still become another, or none (`4111 1111 11` reads as a phone number until the card's last digits
 *   come), so a `deny` refuses, as a `mask` masks and a `flag` notes, only a value starting before the release
 *   point, which had `window` characters after it; the rest is read again with more text (or at the end).
 * - With the text released before as context (the hold-back's `context`): a recognizer's look-behind (`abc`
 *   glued to a card number's digits, an AWS key's name before its secret) reads what the whole answer has
 *   there, not the start of a text; a value starting in that context was decided already, and is left out.
 *
 * @module
 */
import type { CheckResult, Replacement } from "./holdback.ts";
import { releasePoint } from "./holdback.ts";
import type { Masker } from "./mask.ts";
import { findPii, findUnfinished } from "./pii/index.ts";
import type { ResolvedGuardrail } from "./resolved.ts";
import type { StreamOutcomes } from "./stream_outcomes.ts";
import type { LongValues } from "./types.ts";

/** What the check needs of its lane's setup (output_lane.ts's `LaneSetup`). */
export interface BuiltinWindowSetup {
  readonly req: { readonly masker: Masker };
  readonly outcomes: StreamOutcomes;
  readonly window: number;
  readonly cap: number;
}

/**
 * A text as a guardrail reads it once the ones before it masked what they found, and where each of its offsets
 * stands in the check's text: `start` for a finding's start, `end` for its end (inside a stand-in, the start and
 * the end of the value it stands for).
 */
interface View {
  readonly text: string;
  start(at: number): number;
  end(at: number): number;
}

const plain = (text: string): View => ({ text, start: (at) => at, end: (at) => at });

/** `view` with the spans `masked` (its own offsets; sorted, disjoint) replaced by stand-ins of their type. */
function maskedView(view: View, masked: readonly { start: number; end: number; type: string }[]): View {
  if (masked.length === 0) return view;
  /** Each stand-in: where it is in the new text, and the span of `view` it replaced. */
  const parts: { at: number; to: number; start: number; end: number }[] = [];
  let text = "";
  let from = 0;
  for (const m of masked) {
    text += view.text.slice(from, m.start);
    const stand = `<${m.type}_0>`;
    parts.push({ at: text.length, to: text.length + stand.length, start: m.start, end: m.end });
    text += stand;
    from = m.end;
  }
  text += view.text.slice(from);
  /** The last stand-in starting at or before `at` (strictly before it, for an end); -1 when none. */
  const last = (at: number, isEnd: boolean): number => {
    let lo = 0, hi = parts.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (parts[mid].at < at || (!isEnd && parts[mid].at === at)) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  };
  const back = (at: number, isEnd: boolean): number => {
    const i = last(at, isEnd);
    if (i === -1) return at;
    const p = parts[i];
    if (at < p.to || (isEnd && at === p.to)) return isEnd ? p.end : p.start;
    return at - p.to + p.end;
  };
  return { text, start: (at) => view.start(back(at, false)), end: (at) => view.end(back(at, true)) };
}

/** A span in the check's text (or the answer's, in `kept`) a mask guardrail replaces, and that guardrail's index. */
interface Span {
  readonly gi: number;
  readonly type: string;
  readonly start: number;
  readonly end: number;
}

/**
 * The text `raw` as the guardrail at index `gi` reads it: with stand-ins for the `spans` (`raw`'s offsets) the
 * mask guardrails before it replaced. Spans of different guardrails nest (a later mask reads an earlier one's
 * stand-in inside its value) but never cross, so the outermost ones are the text's stand-ins.
 */
function viewOf(raw: string, spans: readonly Span[], gi: number): View {
  const outer: Span[] = [];
  const sorted = spans.filter((sp) => sp.gi < gi).sort((a, b) => a.start - b.start || b.end - a.end);
  for (const sp of sorted) if (outer.length === 0 || sp.start >= outer[outer.length - 1].end) outer.push(sp);
  return maskedView(plain(raw), outer);
}

/** One value a guardrail found in the check's text. */
interface Found extends Span {
  readonly g: ResolvedGuardrail;
  readonly mask: boolean;
}

/** Notes in `outcomes` what was found before `end` by the guardrails before index `upTo`. */
function noteReleased(found: readonly Found[], end: number, upTo: number, outcomes: StreamOutcomes): void {
  for (const { g, gi, type, start } of found) {
    if (start < end && gi < upTo) {
      outcomes.note({ name: g.name, phase: "output", action: g.action, types: [type] });
    }
  }
}

/**
 * Built-in guardrails as one synchronous window check: a denial, or the masks to apply. A value that may run on
 * past the end of the text (a private key before its END line, a JWT still arriving) is reported `open`, so the
 * hold-back keeps it until it ends and it is checked whole, as in a JSON answer. One longer than `cap` is
 * refused under `deny` and masked under `mask`: its part so far becomes one placeholder, and what continues it
 * (the next texts' start, as the hold-back released all of this one) is dropped up to its end, so the client
 * never gets a piece of it; under `flag` it is noted and let through. A finding counts (noted in `outcomes`,
 * masked, refused) once the hold-back releases it: it starts before the release point, or before the end of a
 * mask's placeholder that reaches past it (released whole with it: what a `deny` or `flag` finds there is
 * decided now, as it stands in the context from then on).
 */
export function builtinCheck(
  guardrails: readonly ResolvedGuardrail[],
  setup: BuiltinWindowSetup,
): (text: string, final: boolean, before: string, at: number) => CheckResult {
  const { req: { masker }, outcomes, window, cap } = setup;
  /** A value masked at the cap whose rest the next text starts with (dropped through its end), and its mask. */
  let cut: { long: LongValues; gi: number; type: string } | undefined;
  /** What the masks replaced in the released text (the answer's offsets): the context as later guardrails read it. */
  let kept: Span[] = [];
  const placeholder = (value: string, type: string) =>
    masker.mask(value, [{ type, start: 0, end: value.length }]);
  return (text, final, before, at) => {
    let from = 0;
    if (cut !== undefined) {
      const rest = cut.long.rest(text);
      from = rest.ended || !final ? rest.end : text.length;
      if (from > 0) kept.push({ gi: cut.gi, type: cut.type, start: at, end: at + from });
      if (rest.ended) cut = undefined;
    }
    // What may run on past the end of the text (at the end, a value is as it stands), per guardrail; the
    // earliest such value within the cap is held open, and the release point is where it starts at the latest.
    const unfinished = guardrails.map((g) => {
      if (final) return undefined;
      const u = findUnfinished(text, g.pii ?? undefined);
      return u !== undefined && u.start >= from ? u : undefined;
    });
    let open: number | undefined;
    for (const u of unfinished) {
      if (u !== undefined && text.length - u.start <= cap) open = Math.min(open ?? Infinity, u.start);
    }
    const released = releasePoint(text.length, window, final, open);
    const off = before.length;
    const raw = before + text;
    // The masks' spans in the context and then in the text, in the offsets of `before + text`.
    kept = kept.filter((sp) => sp.end > at - off);
    const spans: Span[] = kept.map((sp) => ({
      ...sp,
      start: Math.max(0, sp.start - at + off),
      end: sp.end - at + off,
    }));
    const found: Found[] = [];
    let cutAt = Infinity;
    for (const [gi, g] of guardrails.entries()) {
      const u = unfinished[gi];
      const long = u !== undefined && text.length - u.start > cap;
      const view = viewOf(raw, spans, gi);
      // Offsets in `text`; what starts in the context (or in a cut value's rest) was decided before. A finding
      // inside a value still open waits with it (no placeholder minted for a part of it).
      const seen = findPii(view.text, g.pii ?? undefined, (f) => view.start(f.start) - off >= from)
        .map((f) => ({ type: f.type, start: view.start(f.start) - off, end: view.end(f.end) - off }))
        .filter((f) => u === undefined || long || f.start < u.start);
      const mask = g.action === "mask";
      for (const f of seen) found.push({ g, gi, ...f, mask });
      // The guardrails after a mask read its placeholders, as in a JSON answer (a flag changes nothing).
      if (mask) {
        for (const f of seen) spans.push({ gi, type: f.type, start: f.start + off, end: f.end + off });
      }
      if (long) {
        // Masked through the end of the text once (the earliest such value), its rest dropped from the next.
        const cuts = mask && u.start < cutAt;
        found.push({ g, gi, type: u.type, start: u.start, end: text.length, mask: cuts });
        if (cuts) (cut = { long: u.long, gi, type: u.type }, cutAt = u.start);
      }
    }
    // Where the release ends: a mask's placeholder starting before the release point is released whole, and
    // what a deny (or a flag) finds up to its end is decided now, as a JSON answer would.
    let end = released;
    for (let grew = true; grew;) {
      grew = false;
      for (const f of found) if (f.mask && f.start < end && f.end > end) (end = f.end, grew = true);
    }
    for (const [gi, g] of guardrails.entries()) {
      if (g.action !== "deny") continue;
      const types = new Set(found.filter((f) => f.gi === gi && f.start < end).map((f) => f.type));
      if (types.size === 0) continue;
      // What the guardrails before it found in what it refuses is theirs too, as a JSON answer records.
      noteReleased(found, end, gi, outcomes);
      return { ok: false, reason: g.name, categories: [...types].sort() };
    }
    // Only what is released now is masked and noted: a placeholder minted for a value the next check sees
    // otherwise would skip a number the JSON answer gives (`<EMAIL_2>` for the only address).
    noteReleased(found, end, guardrails.length, outcomes);
    const replace: Replacement[] = [];
    for (const { gi, type, start, end: to, mask } of found) {
      if (!mask || start >= end) continue;
      kept.push({ gi, type, start: at + start, end: at + to });
      if (start < released) replace.push({ start, end: to, with: placeholder(text.slice(start, to), type) });
    }
    return {
      ok: true,
      replace,
      ...(open === undefined ? {} : { open }),
      ...(from > 0 ? { drop: from } : {}),
    };
  };
}

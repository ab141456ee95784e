/**
 * One lane of a stream (a choice's content, reasoning or refusal, one tool call's text) through the output
 * guardrails, in the order the alias lists them, as a JSON answer runs them (run.ts): each sees what the ones
 * before it left. The guardrails make a chain of stages, consecutive built-ins one stage and consecutive external
 * services another, and each stage is given only what the stage before it released:
 * - built-ins: one sliding window (holdback.ts), which releases text only once a check saw it with the `window`
 *   characters after it, masked or refused;
 * - external services: one call each per segment of at least `window` characters (or the rest at the lane's
 *   end), the segment released once they all answered, as they changed it; never a call about no text.
 * So a service after a built-in `mask` is sent the placeholder, and one after a built-in `deny` is never sent a
 * character that guardrail has not finished judging. Each stage holds up to `window` characters (more while a
 * built-in holds a long value open), so a lane's delay is a window per stage. The request's masked values come
 * back last (mask.ts), after every check read what the model said.
 *
 * @module
 */
import type { TextSlot } from "../policy/text_slots.ts";
import { builtinCheck } from "./builtin_window.ts";
import { createHoldback } from "./holdback.ts";
import { createUnmasker } from "./mask.ts";
import type { GuardrailOutcome, ResolvedGuardrail } from "./resolved.ts";
import { type GuardrailRequest, runGuardrails } from "./run.ts";
import type { StreamOutcomes } from "./stream_outcomes.ts";

/** What a stream's lanes share: the guardrails, who asks (with the request's masker), where outcomes go. */
export interface LaneSetup {
  readonly guardrails: readonly ResolvedGuardrail[];
  readonly req: GuardrailRequest;
  readonly outcomes: StreamOutcomes;
  /** A built-in guardrail refused the answer: records it and throws the 400. */
  readonly onDeny: (g: ResolvedGuardrail, types: readonly string[]) => never;
  readonly window: number;
  readonly cap: number;
}

/** One lane of a stream through the checks and unmasking. */
export interface Lane {
  push(text: string): Promise<string>;
  end(): Promise<string>;
}

/** One stage of a lane: the text the stage before it released (and whether the lane ended) → what it releases. */
type Stage = (text: string, last: boolean) => string | Promise<string>;

/** Consecutive built-in guardrails as a stage: their sliding window. */
function builtinStage(guardrails: readonly ResolvedGuardrail[], setup: LaneSetup): Stage {
  const holdback = createHoldback({
    window: setup.window,
    cap: setup.cap,
    // What it released before, for the recognizers' look-behind (builtin_window.ts).
    context: setup.window,
    check: builtinCheck(guardrails, setup),
  });
  const denied = (step: { denied?: { reason: string; categories: readonly string[] } }) => {
    if (!step.denied) return;
    const { reason, categories } = step.denied;
    setup.onDeny(guardrails.find((g) => g.name === reason) ?? guardrails[0], categories);
  };
  return (text, last) => {
    const step = holdback.push(text);
    denied(step);
    if (!last) return step.release;
    const tail = holdback.end();
    denied(tail);
    return step.release + tail.release;
  };
}

/** Consecutive external guardrails as a stage: a segment asked of each in turn, released as they left it. */
function externalStage(guardrails: readonly ResolvedGuardrail[], setup: LaneSetup): Stage {
  let segment = "";
  return async (text, last) => {
    segment += text;
    if (segment === "" || (!last && segment.length < setup.window)) return "";
    const slot: TextSlot = { param: "", text: segment, write: (t) => slot.text = t };
    segment = "";
    const asked: GuardrailOutcome[] = [];
    try {
      await runGuardrails(guardrails, [slot], setup.req, asked);
    } finally {
      // A refusal's or a fail_closed failure's outcome too, before it is thrown on.
      for (const outcome of asked) setup.outcomes.note(outcome);
    }
    return slot.text;
  };
}

/**
 * A lane under `setup`'s guardrails, in their order, then given back the request's masked values `masks` (as
 * they were before any output guardrail masked through the same masker; escaped for a JSON text), when given.
 */
export function laneOf(setup: LaneSetup, masks: ReadonlyMap<string, string> | undefined): Lane {
  const stages: Stage[] = [];
  const { guardrails } = setup;
  for (let i = 0; i < guardrails.length;) {
    const external = guardrails[i].service !== null;
    let j = i + 1;
    while (j < guardrails.length && (guardrails[j].service !== null) === external) j++;
    const run = guardrails.slice(i, j);
    stages.push(external ? externalStage(run, setup) : builtinStage(run, setup));
    i = j;
  }
  const unmasker = masks ? createUnmasker(masks) : null;
  const pass = async (text: string, last: boolean): Promise<string> => {
    for (const stage of stages) text = await stage(text, last);
    if (!unmasker) return text;
    return unmasker.push(text) + (last ? unmasker.end() : "");
  };
  return { push: (text) => pass(text, false), end: () => pass("", true) };
}

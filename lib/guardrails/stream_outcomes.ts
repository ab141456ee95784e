/**
 * One outcome per output guardrail for a whole stream, as a JSON answer records. A stream is checked piece by
 * piece — an external service asked once per segment of each lane (a choice's content, its reasoning, each tool
 * call), a built-in recognizer finding values as its window releases them — and each piece has an outcome of
 * its own; the usage record, its rule and the metrics take one per guardrail and request (two `error`s of one
 * service read as two guardrails that failed). So the pieces' outcomes are merged into one per guardrail, kept
 * in the request's outcomes where the guardrail stands in the alias's list and updated in place as the stream
 * goes on (the record is written from them whenever the stream ends, cut short or not).
 *
 * @module
 */
import type { GuardrailOutcome, ResolvedGuardrail } from "./resolved.ts";

/**
 * How much an action says, for one guardrail over many pieces: a refusal ends the answer; a failure (under
 * `fail_open`) means part of it went unchecked, which the operator must see even when other parts were
 * changed; then a change (`mask` from a built-in, `replace` from a service: never both for one guardrail),
 * then a flag, then nothing found.
 */
const WEIGHT: Readonly<Record<GuardrailOutcome["action"], number>> = {
  pass: 0,
  flag: 1,
  mask: 2,
  replace: 2,
  error: 3,
  deny: 4,
};

/** The outcomes of one stream's output guardrails, merged per guardrail into `outcomes`. */
export interface StreamOutcomes {
  /** One piece's outcome of a guardrail: merged into the one `outcomes` holds for it (added the first time). */
  note(outcome: GuardrailOutcome): void;
}

/**
 * Merges the pieces' outcomes of `guardrails` (the output phase's, in the order they run) into `outcomes` (the
 * request's, which may hold the input phase's already): one each, in the order of `guardrails`, each added when
 * its first piece is noted (a guardrail the stream never reached has none, as in a JSON answer). Its action is the
 * weightiest of its pieces' ({@linkcode WEIGHT}), its types all of theirs, its error (while it is one) its first failure's.
 */
export function streamOutcomes(
  guardrails: readonly ResolvedGuardrail[],
  outcomes: GuardrailOutcome[],
): StreamOutcomes {
  const order = new Map(guardrails.map((g, i) => [g.name, i]));
  /** The merged outcomes by guardrail name. */
  const merged = new Map<string, GuardrailOutcome>();
  const place = (outcome: GuardrailOutcome) => {
    const at = order.get(outcome.name) ?? guardrails.length;
    // Before the first of ours that runs after it: what the stream added stays in the guardrails' order.
    const next = outcomes.findIndex((o) =>
      merged.get(o.name) === o && (order.get(o.name) ?? guardrails.length) > at
    );
    if (next === -1) outcomes.push(outcome);
    else outcomes.splice(next, 0, outcome);
  };
  return {
    note(outcome) {
      const held = merged.get(outcome.name);
      if (held === undefined) {
        const copy: GuardrailOutcome = {
          ...outcome,
          ...(outcome.types ? { types: [...outcome.types] } : {}),
        };
        merged.set(outcome.name, copy);
        place(copy);
        return;
      }
      if (WEIGHT[outcome.action] > WEIGHT[held.action]) held.action = outcome.action;
      if (outcome.types && outcome.types.length > 0) {
        held.types = [...new Set([...(held.types ?? []), ...outcome.types])].sort();
      }
      // Why it failed, while a failure is what it says (a refusal after it is what happened to the answer).
      if (held.action !== "error") delete held.error;
      else held.error ??= outcome.error;
    },
  };
}

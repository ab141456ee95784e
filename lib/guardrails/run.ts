/**
 * Runs a phase's guardrails over a list of text slots (a request's texts, or an answer's), in order: the
 * built-in PII recognizers synchronously, external services one call each, bounded by the guardrail's timeout
 * and decided by its failure mode when the call fails. A denial is thrown as the policy's 400
 * `content_policy_violation` (rule `guardrail:<name>`), in each client API's error shape downstream; masks and
 * replacements are written back into the slots; every guardrail's outcome is returned for the usage record.
 * Matched text is never put in an error, an outcome or a log.
 *
 * @module
 */
import { GatewayError } from "../errors.ts";
import { PolicyDenied } from "../policy/denied.ts";
import type { TextSlot } from "../policy/text_slots.ts";
import { findPii } from "./pii/index.ts";
import type { Masker } from "./mask.ts";
import type { GuardrailOutcome, ResolvedGuardrail } from "./resolved.ts";
import type { Finding, GuardrailPhase, Verdict } from "./types.ts";

/** Who asks, for external services and messages. */
export interface GuardrailRequest {
  readonly phase: GuardrailPhase;
  readonly alias: string;
  readonly token: string;
  /** The request's signal: a client that goes away cancels the calls too. */
  readonly signal: AbortSignal;
  /** Masks for `mask` guardrails (one per request, so the same value gets the same placeholder). */
  readonly masker: Masker;
}

/** The rule name a guardrail is reported under. */
export function guardrailRule(name: string): string {
  return `guardrail:${name}`;
}

function typesOf(findings: readonly Finding[]): string[] {
  return [...new Set(findings.map((f) => f.type))].sort();
}

/**
 * An external service's categories as an outcome records them. The adapters have made each a short name
 * (lib/guardrails/external/http.ts, `categoryName`), but a short name can still be a credential the service
 * quotes back (`sk-…`, the `authorization` header it got): each passes the config's scrubber. `test` first, so
 * the usual answer (`hate`, `SelfHarm`) costs a scan of a few characters and no allocation beyond the copy.
 */
function recordedTypes(g: ResolvedGuardrail, categories: readonly string[]): string[] {
  const scrubber = g.scrubber;
  return [...new Set(categories.map((c) => scrubber.test(c) ? scrubber.scrub(c) : c))].sort();
}

/** A deny's reason as a client's error shows it: the service's own text, so scrubbed like its categories. */
function shownReason(g: ResolvedGuardrail, reason: string): string {
  return g.scrubber.test(reason) ? g.scrubber.scrub(reason) : reason;
}

/**
 * The 400 for a request (or an answer) a guardrail refuses. A request's refusal names the parameter that held
 * what was found (`param`, as OpenAI's errors do); an answer's names none (`param: null`): the answer is no
 * parameter of the client's request.
 */
export function guardrailDenied(
  g: ResolvedGuardrail,
  phase: GuardrailPhase,
  detail: string,
  param: string | null,
): PolicyDenied {
  const what = phase === "input" ? "This request was rejected" : "The answer was withheld";
  const message = g.message ?? `${what} by guardrail ${g.name} (${detail}).`;
  return new PolicyDenied(400, message, guardrailRule(g.name), {
    type: "invalid_request_error",
    code: "content_policy_violation",
    ...(param && phase === "input" ? { param } : {}),
  });
}

/** A guardrail's refusal or failure, with its outcome for the record (pushed before it is thrown). */
class Stopped extends Error {
  constructor(readonly outcome: GuardrailOutcome, readonly error: unknown) {
    super("guardrail stopped the request");
  }
}

/** The 503 for an external guardrail that failed under `fail_closed`; says which, never what was asked. */
function guardrailUnavailable(g: ResolvedGuardrail, why: string): GatewayError {
  return new GatewayError(
    503,
    `Guardrail ${g.name} could not be reached (${why}) and is configured to fail closed; try again later.`,
    { code: "guardrail_unavailable", headers: { "retry-after": "1" } },
  );
}

function builtin(g: ResolvedGuardrail, slots: TextSlot[], req: GuardrailRequest): GuardrailOutcome {
  const found: Finding[] = [];
  const perSlot = slots.map((slot) => {
    const findings = findPii(slot.text, g.pii ?? undefined);
    found.push(...findings);
    return findings;
  });
  if (found.length === 0) return { name: g.name, phase: req.phase, action: "pass" };
  const types = typesOf(found);
  if (g.action === "deny") {
    const first = slots[perSlot.findIndex((f) => f.length > 0)];
    throw new Stopped(
      { name: g.name, phase: req.phase, action: "deny", types },
      guardrailDenied(g, req.phase, `it contains ${types.join(", ")}`, first?.param ?? null),
    );
  }
  if (g.action === "mask") {
    slots.forEach((slot, i) => {
      if (perSlot[i].length === 0) return;
      slot.text = req.masker.mask(slot.text, perSlot[i]);
      slot.write(slot.text);
    });
  }
  return { name: g.name, phase: req.phase, action: g.action, types };
}

/** One external call under the guardrail's timeout; rejects with `timeout` or `unavailable`. */
async function ask(g: ResolvedGuardrail, texts: string[], req: GuardrailRequest): Promise<Verdict> {
  const timeout = AbortSignal.timeout(g.timeoutMs);
  const signal = AbortSignal.any([req.signal, timeout]);
  try {
    return await g.service!.check({ phase: req.phase, alias: req.alias, token: req.token, texts }, signal);
  } catch {
    // The service's own error may quote what it was sent; only the kind of failure goes further.
    throw new Error(timeout.aborted ? "timeout" : "unavailable");
  }
}

async function external(
  g: ResolvedGuardrail,
  slots: TextSlot[],
  req: GuardrailRequest,
): Promise<GuardrailOutcome> {
  if (slots.length === 0) return { name: g.name, phase: req.phase, action: "pass" };
  let verdict: Verdict;
  try {
    verdict = await ask(g, slots.map((s) => s.text), req);
  } catch (err) {
    if (req.signal.aborted) throw err;
    const why = err instanceof Error ? err.message : "unavailable";
    const outcome: GuardrailOutcome = { name: g.name, phase: req.phase, action: "error", error: why };
    if (g.onFailure === "fail_closed") throw new Stopped(outcome, guardrailUnavailable(g, why));
    return outcome;
  }
  switch (verdict.action) {
    case "allow":
      return { name: g.name, phase: req.phase, action: "pass" };
    case "deny":
      // `action: flag` records what the service would have refused, and lets it through.
      if (g.action === "flag") {
        return {
          name: g.name,
          phase: req.phase,
          action: "flag",
          types: recordedTypes(g, verdict.categories),
        };
      }
      throw new Stopped(
        { name: g.name, phase: req.phase, action: "deny", types: recordedTypes(g, verdict.categories) },
        guardrailDenied(g, req.phase, shownReason(g, verdict.reason) || "refused", null),
      );
    case "flag":
      return { name: g.name, phase: req.phase, action: "flag", types: recordedTypes(g, verdict.categories) };
    case "replace": {
      if (verdict.texts.length !== slots.length) {
        const outcome: GuardrailOutcome = {
          name: g.name,
          phase: req.phase,
          action: "error",
          error: "unavailable",
        };
        if (g.onFailure === "fail_closed") {
          throw new Stopped(outcome, guardrailUnavailable(g, "a malformed answer"));
        }
        return outcome;
      }
      slots.forEach((slot, i) => {
        if (slot.text === verdict.texts[i]) return;
        slot.text = verdict.texts[i];
        slot.write(slot.text);
      });
      return {
        name: g.name,
        phase: req.phase,
        action: "replace",
        types: recordedTypes(g, verdict.categories),
      };
    }
  }
}

/**
 * Runs `guardrails` over `slots` in order (each sees what the ones before it left), adding each outcome to
 * `outcomes` as it comes (a refusal's too); throws the first denial (or a `fail_closed` failure).
 */
export async function runGuardrails(
  guardrails: readonly ResolvedGuardrail[],
  slots: TextSlot[],
  req: GuardrailRequest,
  outcomes: GuardrailOutcome[],
): Promise<void> {
  for (const g of guardrails) {
    try {
      outcomes.push(g.service ? await external(g, slots, req) : builtin(g, slots, req));
    } catch (err) {
      if (!(err instanceof Stopped)) throw err;
      outcomes.push(err.outcome);
      throw err.error;
    }
  }
}

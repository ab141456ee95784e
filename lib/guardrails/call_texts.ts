/**
 * The tool calls of an answer (a completion's message, or a stream's delta) as texts the output guardrails read:
 * a function call's arguments, a custom (freeform) tool's call input and a deprecated `function_call`'s
 * arguments, each on its stream lane. Kept apart from output.ts, which checks them, because the kinds differ
 * in one thing that matters there: arguments are JSON text and a custom call's input is free text, so a masked
 * request value goes back JSON-escaped into the one and raw into the other.
 *
 * @module
 */
import type { JsonObject } from "../openai/types.ts";
import { isObject } from "../openai/types.ts";

/** The lane of a legacy `function_call`'s arguments. */
const LEGACY_LANE = "l";
/** A function call's lane is `t<index>`; a custom call's `u<index>` (its held text goes back as `custom.input`). */
const FUNCTION_LANE = "t";
const CUSTOM_LANE = "u";

/** One tool call's text in a message or a delta. */
export interface CallText {
  /** The lane's letter(s): `t<index>` (function), `u<index>` (custom), `l` (a legacy `function_call`). */
  lane: string;
  /** Whether the text is JSON (arguments), so a request's masked value goes back escaped as in a JSON string. */
  json: boolean;
  text: string;
  write(text: string): void;
}

/**
 * The texts of a message's (or a delta's) tool calls: `tool_calls[…].function.arguments`,
 * `tool_calls[…].custom.input` (a custom tool's call: the model's raw text where a function call has
 * arguments, reaching the client as such) and the deprecated `function_call`'s arguments, which an upstream
 * still sends to a client that asked with `functions` (one call, no index). A call whose text is no string
 * (a stream's first piece may carry only its name) is left out.
 */
export function callTexts(message: JsonObject): CallText[] {
  const texts: CallText[] = [];
  const fc = message.function_call;
  if (isObject(fc) && typeof fc.arguments === "string") {
    texts.push({ lane: LEGACY_LANE, json: true, text: fc.arguments, write: (t) => fc.arguments = t });
  }
  for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
    if (!isObject(call)) continue;
    const index = call.index ?? 0;
    const fn = call.function;
    const custom = call.custom;
    if (isObject(fn)) {
      if (typeof fn.arguments !== "string") continue;
      texts.push({
        lane: `${FUNCTION_LANE}${index}`,
        json: true,
        text: fn.arguments,
        write: (t) => fn.arguments = t,
      });
    } else if (isObject(custom) && typeof custom.input === "string") {
      texts.push({
        lane: `${CUSTOM_LANE}${index}`,
        json: false,
        text: custom.input,
        write: (t) => custom.input = t,
      });
    }
  }
  return texts;
}

/**
 * Adds `rest`, the text a tool-call lane (`lane` as {@linkcode callTexts} names it) held back, to `delta`: onto
 * its `function_call`'s arguments, or as a piece of its own for the tool call at the lane's index (in the shape
 * of that call's kind). Returns false for a lane that is no tool call's.
 */
export function putBackCallText(delta: JsonObject, lane: string, rest: string): boolean {
  if (lane === LEGACY_LANE) {
    const fn = isObject(delta.function_call) ? delta.function_call : (delta.function_call = {}) as JsonObject;
    fn.arguments = (typeof fn.arguments === "string" ? fn.arguments : "") + rest;
    return true;
  }
  const kind = lane[0];
  if (kind !== FUNCTION_LANE && kind !== CUSTOM_LANE) return false;
  const index = Number(lane.slice(1));
  const calls = Array.isArray(delta.tool_calls) ? delta.tool_calls : (delta.tool_calls = []) as unknown[];
  calls.push(
    kind === CUSTOM_LANE ? { index, custom: { input: rest } } : { index, function: { arguments: rest } },
  );
  return true;
}

/**
 * The request's masked values as they go back into JSON text (tool-call arguments). A placeholder the model
 * wrote there stands inside a JSON string, so its value goes back escaped as in one (`JSON.stringify(value)`
 * without its quotes): a PEM key's newlines as `\n`, a quote as `\"`. Put back raw, they would break the JSON
 * the client parses (Responses' `arguments`, Messages' `tool_use` input too: all render from these arguments).
 * Plain text (content, reasoning, refusal, a custom call's input) gets the raw value.
 */
export function jsonEscaped(masks: ReadonlyMap<string, string>): Map<string, string> {
  return new Map([...masks].map(([placeholder, value]) => [placeholder, JSON.stringify(value).slice(1, -1)]));
}

/**
 * The `reasoning` items the gateway makes itself, from a translated target's reasoning (the chat form's
 * `reasoning_content`, response.ts and stream.ts), told apart from an upstream's by their id: `rs_gw_` then 48
 * random hex digits. An upstream's ids (OpenAI's, Azure's) are `rs_` and hex digits only, so none starts so.
 *
 * Such an item holds the reasoning as its summary and no `encrypted_content`: a translated target reads the
 * summary back (reasoning_item.ts), but a native Responses target can only look an item without
 * `encrypted_content` up by its id among the items it kept, and it never had this one: it answers 404 "Item with
 * id 'rs_…' not found" (with `store: false`, "Items are not persisted"). Codex sends its output items back as its
 * next input (`store: false`), so a conversation that moved from a translated target to a native one (an alias's
 * fallback, or a switch of model mid-session) could not go on. A native target gets the input without them, and
 * the answer names each (`input[3]`) in `x-gateway-dropped` and the usage record: named, never refused (not even
 * by a `strict` alias), since no native target could read one. Under `store: false` nothing is kept upstream, so
 * no reasoning item without `encrypted_content` can be looked up, whoever made it (the gateway, before its ids
 * were told apart; a client that did not ask for the content): such items are left out and named alike. A
 * stored conversation resent for a `previous_response_id` leaves them out already (native.ts `historyItems`:
 * only a native target's own reasoning goes back to it).
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import { randomHex } from "../../encoding/random_hex.ts";

/** What starts the id of every reasoning item the gateway makes. */
const PREFIX = "rs_gw_";

/** A new id for a reasoning item the gateway makes. */
export function gatewayReasoningId(): string {
  return PREFIX + randomHex(24);
}

/** Whether `item` is a reasoning item the gateway made. */
export function isGatewayReasoning(item: unknown): boolean {
  return isObject(item) && item.type === "reasoning" && typeof item.id === "string" &&
    item.id.startsWith(PREFIX);
}

/**
 * Whether a native target could not read `item` back: a reasoning item the gateway made, or, under `store: false`
 * (`stored` false), any reasoning item without `encrypted_content`.
 */
export function unreadableReasoning(item: unknown, stored: boolean): boolean {
  if (isGatewayReasoning(item)) return true;
  return !stored && isObject(item) && item.type === "reasoning" && typeof item.encrypted_content !== "string";
}

/** The paths (`input[3]`) of the reasoning items in a request's input a native target goes without. */
export function unreadableReasoningPaths(input: readonly JsonObject[], stored: boolean): string[] {
  const paths: string[] = [];
  input.forEach((item, i) => {
    if (unreadableReasoning(item, stored)) paths.push(`input[${i}]`);
  });
  return paths;
}

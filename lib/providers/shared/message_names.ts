/**
 * Participant names in the chat form: `messages[].name` on a system, developer, user or assistant message, which
 * OpenAI's reference says "provides the model information to differentiate between participants of the same
 * role" (a group chat's alice and bob, an agent framework's agents). Anthropic's Messages API, Gemini's contents
 * and Bedrock's Converse have no such field, and their translations merge consecutive turns of one role into
 * one, so the two users become one anonymous turn.
 *
 * What a translated target goes without, a name is named (`x-gateway-dropped`, the usage record's `dropped`) by
 * its path, `messages[3].name`, as a prompt-caching marker a target cannot take is: left out whatever the
 * provider's `unsupported_params`, as agent frameworks (AutoGen, LangChain's multi-agent graphs) put a name on
 * every message as a label, and refusing it by default would fail them on every translated alias for a field
 * most of their conversations do not depend on; a `strict` alias refuses it, and then routes to a target that
 * takes it (an OpenAI-compatible one). It is not written into the text: no vendor documents a rendering its
 * models read as OpenAI's do, and one the gateway made up would change the prompt the client wrote.
 *
 * A tool message's `name` (which some clients add) is not named: it repeats the call its `tool_call_id` already
 * names. A legacy `function` message's `name` is the function's, read by Gemini and refused with the role
 * elsewhere.
 *
 * @module
 */
import type { JsonObject } from "../../openai/types.ts";

/** The roles whose `name` is a participant's. */
const PARTICIPANT_ROLES: ReadonlySet<unknown> = new Set(["system", "developer", "user", "assistant"]);

/** The paths of the participant names in `messages` (none for most requests, which allocates nothing). */
export function messageNamesDropped(messages: readonly JsonObject[]): string[] {
  let paths: string[] | null = null;
  messages.forEach((m, i) => {
    if (!PARTICIPANT_ROLES.has(m.role) || typeof m.name !== "string" || m.name === "") return;
    (paths ??= []).push(`messages[${i}].name`);
  });
  return paths ?? [];
}

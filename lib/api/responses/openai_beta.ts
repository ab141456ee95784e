/**
 * The client's opt-in to a beta of the Responses API, as the openai SDK's `client.beta.responses` sends it:
 * `POST /v1/responses?beta=true` with `openai-beta: responses_multi_agent=v1` (its `betas` joined by commas),
 * and the beta's fields in the body (`multi_agent`). A native target that takes it (OpenAI's own API) gets both
 * as sent, since the body's fields mean nothing upstream without the opt-in; the names every other target goes
 * without are named in `x-gateway-dropped` and the usage record's `dropped` (`openai-beta:<name>`), as the
 * Messages API names the `anthropic-beta` names it drops. Read here for create, compact and input_tokens (and so
 * for each WebSocket message, which carries its handshake's headers and URL).
 *
 * @module
 */
import type { ResolvedTarget } from "../../config/types.ts";
import { openaiBetasDropped } from "../../providers/capabilities.ts";
import type { OpenAIBeta } from "../../providers/types.ts";
import type { ClientRequest } from "../../runtime/types.ts";

/**
 * What a well-formed `openai-beta` is: comma-separated names (`responses_multi_agent=v1`); the bound is the
 * one an `anthropic-beta` has. A header value is client text: a malformed one is not passed upstream.
 */
const BETAS = /^[A-Za-z0-9._=-]+(?:\s*,\s*[A-Za-z0-9._=-]+)*\s*,?$/;
const MAX_BETAS = 2048;

/** The client's beta opt-in in `request` (its `openai-beta` when well-formed, its `?beta=true`), or null. */
export function openAIBetaOf(request: ClientRequest): OpenAIBeta | null {
  const value = request.headers.get("openai-beta")?.trim() ?? "";
  const header = value !== "" && value.length <= MAX_BETAS && BETAS.test(value) ? value : null;
  const query = new URL(request.url).searchParams.get("beta") === "true";
  return header === null && !query ? null : { header, query };
}

/**
 * The `openai-beta` names the request went without, as `noteDropped` takes them: `bodyTo` is the target that was
 * sent the client's Responses body, null when none was (an answer over the chat form, whichever target gave it:
 * that form carries no betas; a count the gateway made).
 */
export function betasDropped(bodyTo: ResolvedTarget | null, beta: OpenAIBeta | null): string[] {
  return openaiBetasDropped(bodyTo, beta?.header ?? null);
}

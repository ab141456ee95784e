/**
 * What a Responses answer (a response, a compaction) names as gone without, in `x-gateway-dropped` and the usage
 * record's `dropped` (lib/http/tolerance.ts): one rule for both, by what the answering target was sent.
 *
 * @module
 */
import type { ResolvedTarget } from "../../config/types.ts";
import type { ClientContext } from "../../http/context.ts";
import { answeredTolerance, type ChatForm, noteDropped } from "../../http/tolerance.ts";
import type { OpenAIBeta } from "../../providers/types.ts";
import { nativeDropped } from "./create_native.ts";
import { betasDropped } from "./openai_beta.ts";
import type { ResponsesRequest } from "./request.ts";

/**
 * Names what `target`, the target that answered, went without. Sent the client's body (`form` null): the
 * reasoning items it could not look up, and the `openai-beta` names its row does not take. Sent the chat form
 * `form` instead (a translated target, or a native one the request's guardrails served so:
 * `RequestGuardrails.chatOnly`): what that form went without (`answeredTolerance`), and every `openai-beta`
 * name, since that form carries none whichever target it went to.
 */
export function noteResponsesDropped(
  ctx: ClientContext,
  headers: Headers,
  target: ResolvedTarget,
  parsed: ResponsesRequest,
  beta: OpenAIBeta | null,
  form: ChatForm | null,
): void {
  if (form === null) return noteDropped(ctx, headers, nativeDropped(parsed), betasDropped(target, beta));
  noteDropped(ctx, headers, answeredTolerance(target, parsed.tolerance, form), betasDropped(null, beta));
}

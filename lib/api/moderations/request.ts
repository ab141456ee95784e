/**
 * The moderation request (OpenAI's CreateModerationRequest): `input` a string, an array of strings, or an array
 * of `text` / `image_url` parts, and `model`, which the gateway requires although OpenAI defaults it: it names
 * the moderation alias the request is routed by, and the gateway has no default alias. Other fields pass
 * through to the upstream untouched, as for every OpenAI endpoint.
 *
 * @module
 */
import { z } from "zod";
import { invalidRequest } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import { withoutNullOptions } from "../../http/request_schemas.ts";
import { toRequestError } from "../../http/request_errors.ts";
import type { ModerationRequest } from "../../providers/types.ts";

/** Most inputs one request may classify (as many as an embeddings request may embed). */
export const MAX_MODERATION_INPUTS = 2048;

const REQUIRED: ReadonlySet<string> = new Set(["model", "input"]);

const textPart = z.looseObject({ type: z.literal("text"), text: z.string() });
const imagePart = z.looseObject({
  type: z.literal("image_url"),
  image_url: z.looseObject({ url: z.string().min(1) }),
});

const moderationSchema = z.looseObject({
  model: z.string().min(1),
  input: z.union([
    z.string(),
    z.array(z.string()).min(1).max(MAX_MODERATION_INPUTS),
    z.array(z.discriminatedUnion("type", [textPart, imagePart])).min(1).max(MAX_MODERATION_INPUTS),
  ]),
});

/**
 * Validates a moderation request; throws OpenAI's 400 naming the first bad `param` (a missing `model` says the
 * gateway needs a moderation alias there). Returns the request without its null optional parameters.
 */
export function parseModerationRequest(given: JsonObject): ModerationRequest {
  const body = withoutNullOptions(given, REQUIRED);
  const result = moderationSchema.safeParse(body);
  if (result.success) return body as ModerationRequest;
  const err = toRequestError(body, result.error.issues[0]);
  if (err.param === "model" && err.code === "missing_required_parameter") {
    throw invalidRequest(
      "Missing required parameter: 'model'. The gateway has no default moderation model: name a moderation " +
        "alias (GET /v1/models lists the ones this token may use).",
      "model",
      "missing_required_parameter",
    );
  }
  throw err;
}

/** The texts of a validated request: its strings, or its `text` parts' texts (images have none). */
export function moderationTexts(request: ModerationRequest): string[] {
  const input = request.input;
  if (typeof input === "string") return [input];
  const texts: string[] = [];
  for (const item of input) {
    if (typeof item === "string") texts.push(item);
    else if (typeof item.text === "string") texts.push(item.text);
  }
  return texts;
}

/**
 * How many results the upstream must answer: one per string; null for an array of parts, which OpenAI
 * classifies as one multi-modal input.
 */
export function expectedResults(request: ModerationRequest): number | null {
  const input = request.input;
  if (typeof input === "string") return 1;
  return input.every((item) => typeof item === "string") ? input.length : null;
}

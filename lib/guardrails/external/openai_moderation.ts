/**
 * OpenAI's moderation endpoint as a guardrail: `POST {base_url}/moderations` with every text of the phase in
 * one `input` array, one result per text (CreateModerationRequest / CreateModerationResponse in OpenAI's
 * OpenAPI description). A text is caught when its result is `flagged`, or when a category's score reaches a
 * threshold the operator set (the service's own cut-offs are not tunable, thresholds make it stricter).
 *
 * What a catch becomes is `action_on_flag`: `deny` refuses the request, `flag` only records the categories.
 *
 * @module
 */
import type { GuardrailInput, GuardrailService, Verdict } from "../types.ts";
import { isRecord, malformed, postJson, type ServiceDeps, sortedUnique } from "./http.ts";

/** An OpenAI moderation guardrail's config entry (see `openaiModerationGuardrailSchema` in `index.ts`). */
export interface OpenAIModerationConfig {
  readonly base_url?: string;
  readonly api_key: string;
  readonly model?: string;
  /** Category name → score in [0, 1] at or above which the text is caught, flagged or not. */
  readonly thresholds?: Readonly<Record<string, number>>;
  readonly action_on_flag?: "deny" | "flag";
  readonly headers?: Readonly<Record<string, string>>;
}

const SERVICE = "openai_moderation";
/** OpenAI's public API. */
export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";
/** The model the API defaults to; sent explicitly so the answer does not change under the gateway. */
export const DEFAULT_MODERATION_MODEL = "omni-moderation-latest";

/** A guardrail service that asks OpenAI's moderation endpoint. */
export function createOpenAIModerationGuardrail(
  config: OpenAIModerationConfig,
  deps: ServiceDeps = {},
): GuardrailService {
  const fetchFn = deps.fetch ?? fetch;
  const url = `${(config.base_url ?? OPENAI_DEFAULT_BASE_URL).replace(/\/+$/, "")}/moderations`;
  const model = config.model ?? DEFAULT_MODERATION_MODEL;
  const onFlag = config.action_on_flag ?? "deny";
  return {
    async check(input: GuardrailInput, signal: AbortSignal): Promise<Verdict> {
      if (input.texts.length === 0) return { action: "allow" };
      const answer = await postJson({
        service: SERVICE,
        fetch: fetchFn,
        url,
        headers: {
          ...config.headers,
          "content-type": "application/json",
          accept: "application/json",
          authorization: `Bearer ${config.api_key}`,
        },
        body: JSON.stringify({ model, input: input.texts }),
        signal,
        hidden: [config.api_key, ...input.texts],
        errorCode: (_headers, body) => isRecord(body) && isRecord(body.error) ? body.error.code : undefined,
      });
      const caught = caughtCategories(answer, input.texts.length, config.thresholds ?? {});
      if (caught === null) return { action: "allow" };
      if (onFlag === "flag") return { action: "flag", categories: caught };
      return {
        action: "deny",
        reason: `flagged by moderation: ${caught.length > 0 ? caught.join(", ") : "unspecified"}`,
        categories: caught,
      };
    },
  };
}

/**
 * The categories that caught any text (sorted, deduplicated), or null when none did. A result that is
 * `flagged` with no category set true still catches (with no category of its own).
 */
export function caughtCategories(
  answer: unknown,
  textCount: number,
  thresholds: Readonly<Record<string, number>>,
): string[] | null {
  if (!isRecord(answer) || !Array.isArray(answer.results)) throw malformed(SERVICE, "expected `results`");
  if (answer.results.length !== textCount) {
    throw malformed(SERVICE, `${answer.results.length} results for ${textCount} inputs`);
  }
  let caught = false;
  const names: string[] = [];
  for (const result of answer.results) {
    if (!isRecord(result) || typeof result.flagged !== "boolean") {
      throw malformed(SERVICE, "each result needs a boolean `flagged`");
    }
    const { categories, category_scores: scores } = result;
    if (!isRecord(categories) || !isRecord(scores)) {
      throw malformed(SERVICE, "each result needs `categories` and `category_scores` objects");
    }
    if (result.flagged) caught = true;
    for (const [name, value] of Object.entries(categories)) {
      // `illicit` and `illicit/violent` may be null for models that do not score them.
      if (value !== null && typeof value !== "boolean") {
        throw malformed(SERVICE, "a category is not a boolean");
      }
      if (value === true && result.flagged) names.push(name);
    }
    for (const [name, score] of Object.entries(scores)) {
      if (score === null) continue;
      if (typeof score !== "number" || !Number.isFinite(score)) {
        throw malformed(SERVICE, "a category score is not a number");
      }
      if (Object.hasOwn(thresholds, name) && score >= thresholds[name]) {
        caught = true;
        names.push(name);
      }
    }
  }
  return caught ? sortedUnique(names) : null;
}

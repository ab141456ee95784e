/**
 * Azure AI Content Safety's text analysis as a guardrail: `POST {endpoint}/contentsafety/text:analyze` with
 * the key in `Ocp-Apim-Subscription-Key`, one text per call, severities in four levels (0, 2, 4, 6) for
 * `Hate`, `SelfHarm`, `Sexual` and `Violence`. A text is caught when a category's severity reaches its
 * threshold, or when it matches one of the named blocklists.
 *
 * The service takes at most 10,000 characters per call, so a longer text is cut into pieces of at most that
 * many UTF-16 code units (never between a surrogate pair) and each piece is asked about. Calls run at most
 * `concurrency` at a time; the first failure aborts the rest, since one failed piece fails the whole check.
 *
 * @module
 */
import type { GuardrailInput, GuardrailService, Verdict } from "../types.ts";
import { isRecord, malformed, postJson, type ServiceDeps, sortedUnique } from "./http.ts";
import type { AZURE_CATEGORIES } from "./schema.ts";

/** One harm category. */
export type AzureCategory = typeof AZURE_CATEGORIES[number];

/** An Azure Content Safety guardrail's config entry (see `azureContentSafetyGuardrailSchema` in `index.ts`). */
export interface AzureContentSafetyConfig {
  readonly endpoint: string;
  readonly api_key: string;
  /** The categories asked about; all four when absent. */
  readonly categories?: readonly AzureCategory[];
  /** Severity at or above which a text is caught (default 4, i.e. medium). */
  readonly severity_threshold?: number;
  /** Per-category thresholds, overriding `severity_threshold`. */
  readonly category_thresholds?: Readonly<Partial<Record<AzureCategory, number>>>;
  readonly blocklist_names?: readonly string[];
  /** Calls in flight at most, for one check. */
  readonly concurrency?: number;
}

const SERVICE = "azure_content_safety";
/** The API version whose wire format this adapter speaks. */
export const AZURE_CONTENT_SAFETY_API_VERSION = "2024-09-01";
/** The most characters the service takes in one call. */
export const AZURE_MAX_TEXT = 10_000;
const DEFAULT_THRESHOLD = 4;
const DEFAULT_CONCURRENCY = 4;

/** A guardrail service that asks Azure AI Content Safety. */
export function createAzureContentSafetyGuardrail(
  config: AzureContentSafetyConfig,
  deps: ServiceDeps = {},
): GuardrailService {
  const fetchFn = deps.fetch ?? fetch;
  const url = `${config.endpoint.replace(/\/+$/, "")}/contentsafety/text:analyze?api-version=` +
    AZURE_CONTENT_SAFETY_API_VERSION;
  const base = config.severity_threshold ?? DEFAULT_THRESHOLD;
  const thresholdOf = (category: string): number =>
    Object.hasOwn(config.category_thresholds ?? {}, category)
      ? config.category_thresholds![category as AzureCategory]!
      : base;
  const concurrency = Math.max(1, config.concurrency ?? DEFAULT_CONCURRENCY);

  return {
    async check(input: GuardrailInput, signal: AbortSignal): Promise<Verdict> {
      // Empty texts are skipped: the service refuses them, and there is nothing in them to catch.
      const pieces = input.texts.filter((t) => t !== "").flatMap((text) => splitText(text, AZURE_MAX_TEXT));
      if (pieces.length === 0) return { action: "allow" };
      const hidden = [config.api_key, ...input.texts];
      const caught: string[] = [];
      const ask = async (text: string, inner: AbortSignal) => {
        const answer = await postJson({
          service: SERVICE,
          fetch: fetchFn,
          url,
          headers: {
            "content-type": "application/json",
            accept: "application/json",
            "ocp-apim-subscription-key": config.api_key,
          },
          body: JSON.stringify({
            text,
            ...(config.categories ? { categories: config.categories } : {}),
            ...(config.blocklist_names?.length ? { blocklistNames: config.blocklist_names } : {}),
            outputType: "FourSeverityLevels",
          }),
          signal: inner,
          hidden,
          errorCode: (_headers, body) => isRecord(body) && isRecord(body.error) ? body.error.code : undefined,
        });
        caught.push(...caughtCategories(answer, thresholdOf));
      };
      await boundedAll(pieces, concurrency, ask, signal);
      if (caught.length === 0) return { action: "allow" };
      const categories = sortedUnique(caught);
      return { action: "deny", reason: `flagged by content safety: ${categories.join(", ")}`, categories };
    },
  };
}

/** The categories one analysis catches: severities at or over their threshold, and blocklists matched. */
export function caughtCategories(answer: unknown, thresholdOf: (category: string) => number): string[] {
  if (!isRecord(answer) || !Array.isArray(answer.categoriesAnalysis)) {
    throw malformed(SERVICE, "expected `categoriesAnalysis`");
  }
  const out: string[] = [];
  for (const entry of answer.categoriesAnalysis) {
    if (
      !isRecord(entry) || typeof entry.category !== "string" ||
      (entry.severity !== undefined && entry.severity !== null && typeof entry.severity !== "number")
    ) {
      throw malformed(SERVICE, "each analysis needs a `category` and a numeric `severity`");
    }
    if (typeof entry.severity === "number" && entry.severity >= thresholdOf(entry.category)) {
      out.push(entry.category);
    }
  }
  const matches = answer.blocklistsMatch ?? [];
  if (!Array.isArray(matches)) throw malformed(SERVICE, "`blocklistsMatch` must be an array");
  for (const match of matches) {
    if (!isRecord(match) || typeof match.blocklistName !== "string") {
      throw malformed(SERVICE, "each blocklist match needs a `blocklistName`");
    }
    // The list's name, never `blocklistItemText` (the matched words).
    out.push(`Blocklist:${match.blocklistName}`);
  }
  return out;
}

/** `text` in pieces of at most `max` UTF-16 code units, never cutting a surrogate pair. */
export function splitText(text: string, max: number): string[] {
  if (text.length <= max) return [text];
  const pieces: string[] = [];
  let at = 0;
  while (at < text.length) {
    let end = Math.min(at + max, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
    pieces.push(text.slice(at, end));
    at = end;
  }
  return pieces;
}

/**
 * Runs `task` over `items`, at most `limit` at a time, under a signal linked to `signal`: the first failure
 * aborts the others and is what this rejects with.
 */
async function boundedAll<T>(
  items: readonly T[],
  limit: number,
  task: (item: T, signal: AbortSignal) => Promise<void>,
  signal: AbortSignal,
): Promise<void> {
  const inner = new AbortController();
  const onAbort = () => inner.abort(signal.reason);
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });
  let next = 0;
  let failure: { error: unknown } | null = null;
  const worker = async () => {
    while (failure === null && next < items.length) {
      const item = items[next++];
      try {
        await task(item, inner.signal);
      } catch (error) {
        if (failure === null) failure = { error };
        inner.abort(error);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
  if (failure !== null) throw (failure as { error: unknown }).error;
}

/**
 * Azure's error bodies in OpenAI's four fields: numeric-string codes and the content filter's `innererror`.
 *
 * @module
 */
import { type ParsedUpstreamError, parseUpstreamErrorBody } from "../shared/upstream_error.ts";
import { isObject } from "../../openai/types.ts";

/** The fields of `innererror.content_filter_result(s)` that were filtered, as `hate (high)`, `jailbreak`. */
function filteredCategories(innererror: unknown): string[] {
  if (!isObject(innererror)) return [];
  const results = innererror.content_filter_result ?? innererror.content_filter_results;
  if (!isObject(results)) return [];
  const out: string[] = [];
  for (const [category, result] of Object.entries(results)) {
    if (!isObject(result) || result.filtered !== true) continue;
    out.push(typeof result.severity === "string" ? `${category} (${result.severity})` : category);
  }
  return out;
}

/**
 * Reads an Azure error body into OpenAI's four fields. Azure's numeric-string codes ("401", "429") are HTTP
 * statuses, not error codes: 429 becomes OpenAI's `rate_limit_exceeded`, the others null. A content-filter
 * 400 keeps `code: content_filter` and `param: prompt`; the filtered categories from `innererror` (which
 * OpenAI's error shape has no field for) are appended to the message so the client still learns why.
 */
export function azureErrorFields(status: number, text: string): ParsedUpstreamError {
  const parsed = parseUpstreamErrorBody(text);
  if (parsed.code !== null && /^\d+$/.test(parsed.code)) {
    parsed.code = status === 429 ? "rate_limit_exceeded" : null;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return parsed;
  }
  const error = isObject(json) && isObject(json.error) ? json.error : undefined;
  const categories = filteredCategories(error?.innererror);
  if (categories.length > 0 && parsed.message !== null) {
    parsed.message = `${parsed.message} (filtered: ${categories.join(", ")})`;
  }
  return parsed;
}

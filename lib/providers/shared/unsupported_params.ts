/**
 * One rule for OpenAI parameters a vendor cannot honour: by default the client gets a 400 naming the
 * parameter; a provider configured with `unsupported_params: drop` leaves it out instead. Never silent.
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";

/** For each parameter name, whether a given (non-null) value is one the vendor cannot honour. */
export type UnsupportedRules = Record<string, (value: unknown) => boolean>;

/** Any value at all is unsupported. */
export const always = (): boolean => true;

/**
 * Returns `request` without the unsupported parameters it carries (mode `drop`), or throws a 400
 * `unsupported_parameter` naming the first one (mode `error`). Null and absent parameters are fine.
 */
export function applyUnsupportedRules<T extends JsonObject>(
  request: T,
  rules: UnsupportedRules,
  mode: "error" | "drop",
  vendor: string,
): T {
  let out = request;
  for (const [param, unsupported] of Object.entries(rules)) {
    const value = request[param];
    if (value === undefined || value === null || !unsupported(value)) continue;
    if (mode === "error") {
      throw invalidRequest(
        `The parameter '${param}' with this value is not supported by ${vendor} models; remove it, or ask the ` +
          "gateway operator to set `unsupported_params: drop` for this provider.",
        param,
        "unsupported_parameter",
      );
    }
    if (out === request) out = { ...request };
    delete out[param];
  }
  return out;
}

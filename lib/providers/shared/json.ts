/**
 * Reading what an upstream sent as JSON. Every vendor module checks shapes field by field with
 * {@linkcode isObject} (from `lib/openai/types.ts`), and every non-stream answer that must be an object goes through
 * {@linkcode parseJsonObject}, so the 502 a client sees for a broken body reads the same whichever vendor
 * sent it.
 *
 * @module
 */
import { badGateway } from "../../errors.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";

/** Parses an upstream body that must be a JSON object; anything else is a 502 `upstream_invalid_response`. */
export function parseJsonObject(provider: string, text: string): JsonObject {
  try {
    const json: unknown = JSON.parse(text);
    if (isObject(json)) return json;
  } catch { /* reported below */ }
  throw notAJsonObject(provider);
}

/** The 502 for a non-stream upstream body that is not a JSON object. */
export function notAJsonObject(provider: string) {
  return badGateway(
    `Provider "${provider}" returned a body that is not a JSON object.`,
    "upstream_invalid_response",
  );
}

/** Parses the data of one upstream stream event; data that is not JSON is a 502 `upstream_invalid_response`. */
export function parseEventJson(provider: string, data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    throw badGateway(
      `Provider "${provider}" sent a stream event that is not JSON.`,
      "upstream_invalid_response",
    );
  }
}

/** The 502 for a stream event whose JSON is not an object. */
export function eventNotAnObject(provider: string) {
  return badGateway(
    `Provider "${provider}" sent a stream event that is not an object.`,
    "upstream_invalid_response",
  );
}

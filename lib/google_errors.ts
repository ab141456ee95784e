/**
 * Google's error shape, `{"error":{"code","message","status"}}`: how the Gemini API's routes answer every error,
 * a failed stream's last chunk too. Beside lib/errors.ts, which has the OpenAI and Anthropic shapes.
 *
 * @module
 */
import { type GatewayError, jsonError } from "./errors.ts";

/** Google's canonical status names by HTTP status, as the Gemini API answers them. */
const GOOGLE_STATUS: Readonly<Record<number, string>> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  405: "UNIMPLEMENTED",
  408: "DEADLINE_EXCEEDED",
  409: "ABORTED",
  413: "INVALID_ARGUMENT",
  429: "RESOURCE_EXHAUSTED",
  499: "CANCELLED",
  500: "INTERNAL",
  501: "UNIMPLEMENTED",
  502: "UNAVAILABLE",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

/** The body of a Google API error: `{"error":{"code","message","status"}}`. */
export interface GoogleErrorBody {
  error: { code: number; message: string; status: string };
}

/** `err` in Google's error shape (the Gemini API's routes answer every error this way, streams' last chunk too). */
export function googleErrorBody(err: GatewayError): GoogleErrorBody {
  const status = GOOGLE_STATUS[err.status] ?? (err.status >= 500 ? "INTERNAL" : "INVALID_ARGUMENT");
  return { error: { code: err.status, message: err.message, status } };
}

/** Serialises `err` in Google's shape with its status: the error boundary's answer on the Gemini API's routes. */
export function googleErrorResponse(err: GatewayError): Response {
  return jsonError(JSON.stringify(googleErrorBody(err)), err.status, err.headers);
}

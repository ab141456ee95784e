/**
 * The slice of Gemini's Generative Language API (v1beta) wire format the gateway speaks, plus the one
 * trick that makes Gemini tool calls survive a stateless round trip through OpenAI clients: the
 * thought signature travels inside the generated tool-call id.
 *
 * Reference: https://ai.google.dev/api/generate-content, https://ai.google.dev/gemini-api/docs/thought-signatures
 *
 * @module
 */
import { newToolCallId } from "../shared/chunks.ts";
import type { JsonObject } from "../../openai/types.ts";
import { isTokenCount } from "../../openai/usage_counts.ts";

/** One part of a Gemini `Content`. Only the fields the gateway reads or writes are named. */
export interface GeminiPart {
  text?: string;
  /** True for thought summaries, which are not part of the answer. */
  thought?: boolean;
  /** Opaque base64 bytes that Gemini 3 requires back on function-call parts in later turns. */
  thoughtSignature?: string;
  inlineData?: { mimeType: string; data: string };
  fileData?: { fileUri: string; mimeType?: string };
  functionCall?: { name: string; args?: JsonObject; id?: string };
  functionResponse?: { name: string; response: JsonObject };
}

/** A Gemini `Content`: one turn. */
export interface GeminiContent {
  role: "user" | "model";
  parts: GeminiPart[];
}

/** `usageMetadata` of a `GenerateContentResponse`. */
export interface GeminiUsageMetadata {
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  toolUsePromptTokenCount?: number;
  cachedContentTokenCount?: number;
  totalTokenCount?: number;
}

/** A token count field of an untrusted object ({@linkcode isTokenCount}, the rule for every vendor), or 0. */
export function count(obj: JsonObject, key: string): number {
  const value = obj[key];
  return isTokenCount(value) ? value : 0;
}

// ---------------------------------------------------------------------------------------------------------
// Tool-call ids that carry the thought signature

/** Separates the random part of a tool-call id from the encoded thought signature. */
const SIGNATURE_MARK = "_ts_";

/**
 * A fresh OpenAI tool-call id (`call_…`) for a Gemini function call. Gemini 3 rejects a later request whose
 * replayed function call lacks the `thoughtSignature` it came with, and OpenAI clients replay nothing but
 * the id, so the signature is appended to the id (base64url) and recovered by {@linkcode signatureFromToolCallId}.
 */
export function toolCallIdFor(signature: string | undefined, newId: () => string = newToolCallId): string {
  const id = newId();
  if (signature === undefined || signature === "") return id;
  const url = signature.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  return `${id}${SIGNATURE_MARK}${url}`;
}

/** The thought signature (standard base64) carried by a tool-call id, if it carries one. */
export function signatureFromToolCallId(id: string): string | undefined {
  if (!id.startsWith("call_")) return undefined;
  const at = id.indexOf(SIGNATURE_MARK, "call_".length);
  if (at < 0) return undefined;
  const url = id.slice(at + SIGNATURE_MARK.length);
  if (url === "" || !/^[A-Za-z0-9_-]+$/.test(url)) return undefined;
  const b64 = url.replace(/-/g, "+").replace(/_/g, "/");
  return b64 + "=".repeat((4 - (b64.length % 4)) % 4);
}

/**
 * OpenAI embeddings ↔ Gemini `embedContent` / `batchEmbedContents`. Pure functions: request bodies from
 * the OpenAI request, float vectors from Gemini's answers (the server encodes base64 when asked).
 *
 * @module
 */
import { badGateway, type GatewayError, invalidRequest } from "../../errors.ts";
import { type EmbeddingRequest, isObject, type JsonObject } from "../../openai/types.ts";
import { isFloat32Vector } from "../../encoding/float32_base64.ts";
import { CORE_EMBEDDING_PARAMS, type ParamRules } from "../shared/unsupported_params.ts";

/**
 * Largest batch sent in one `batchEmbedContents` call; bigger OpenAI inputs (up to 2048) are split.
 * UNVERIFIED: Gemini's documented per-call limit is believed to be 100 requests.
 */
export const GEMINI_MAX_BATCH = 100;

/**
 * What Gemini's embeddings translation reads of a request: the core (`dimensions` → `outputDimensionality`).
 * Any other field (`input_type`, `task_type`, next month's) reaches no Gemini request: refused, or under
 * `unsupported_params: drop` left out and named, as on chat. Google's own per-input fields (`taskType`, `title`)
 * come beside the request, from the Gemini API only (`EmbeddingCall.geminiFields`): no body can set them.
 */
export const GEMINI_EMBEDDING_RULES: ParamRules = {
  vendor: "Gemini embedding",
  unsupported: {},
  known: new Set(CORE_EMBEDDING_PARAMS),
};

/** The fields of Google's `EmbedContentRequest` a Gemini target gets as sent, beside its content. */
export const GEMINI_EMBED_FIELDS: readonly string[] = ["taskType", "title"];

/**
 * Each of `count` inputs' own Google fields ({@linkcode GEMINI_EMBED_FIELDS}) of `sent` (an embedding call's
 * `geminiFields`), by position: only those names, each as sent; `{}` for an input without (or for anything that
 * is no object).
 */
export function embedFieldsOf(sent: readonly JsonObject[] | undefined, count: number): JsonObject[] {
  return Array.from({ length: count }, (_, i) => {
    const fields: JsonObject = {};
    const entry = sent?.[i];
    if (!isObject(entry)) return fields;
    for (const name of GEMINI_EMBED_FIELDS) if (entry[name] != null) fields[name] = entry[name];
    return fields;
  });
}

/**
 * What one call with `texts` and their `fields` ({@linkcode embedFieldsOf}) has the model read, for the gateway's
 * own count when Gemini reports none: each text, then each string `title` sent beside one (Google reads the title
 * with a document's text).
 */
export function readTexts(texts: readonly string[], fields: readonly JsonObject[]): string[] {
  const titles = fields.flatMap((own) => typeof own.title === "string" ? [own.title] : []);
  return titles.length === 0 ? [...texts] : [...texts, ...titles];
}

/**
 * Why Gemini cannot embed `request`, or null when it can: token-id inputs (number[] / number[][]) have no Gemini
 * form (400 naming `input`). Asked before routing too (`embeddingParamsOn`), so an alias's other targets serve
 * what Gemini cannot.
 */
export function geminiEmbeddingRefusal(request: EmbeddingRequest): GatewayError | null {
  const input = request.input;
  if (typeof input === "string" || input.every((item) => typeof item === "string")) return null;
  return invalidRequest(
    "Gemini embedding models accept only text input (a string or an array of strings), not token ids.",
    "input",
    "unsupported_input",
  );
}

/** The texts to embed; the refusal of {@linkcode geminiEmbeddingRefusal} for token-id inputs. */
export function embeddingTexts(request: EmbeddingRequest): string[] {
  const refusal = geminiEmbeddingRefusal(request);
  if (refusal !== null) throw refusal;
  const input = request.input;
  return typeof input === "string" ? [input] : input as string[];
}

/**
 * `embedContent` body for one text (the model is in the URL); `dimensions` → `outputDimensionality`; `fields`
 * (its `taskType`, `title`: {@linkcode embedFieldsOf}) as sent.
 */
export function embedContentBody(text: string, dimensions?: number, fields: JsonObject = {}): JsonObject {
  const body: JsonObject = { content: { parts: [{ text }] }, ...fields };
  if (dimensions !== undefined) body.outputDimensionality = dimensions;
  return body;
}

/**
 * `batchEmbedContents` body: one request per text, each naming the model (`models/<m>`), with its own `fields`
 * (by position, as {@linkcode embedFieldsOf} gives them).
 */
export function batchEmbedBody(
  modelPath: string,
  texts: readonly string[],
  dimensions?: number,
  fields: readonly JsonObject[] = [],
): JsonObject {
  return {
    requests: texts.map((text, i) => ({
      model: modelPath,
      ...embedContentBody(text, dimensions, fields[i]),
    })),
  };
}

function vector(value: unknown): number[] | null {
  if (!isObject(value) || !Array.isArray(value.values)) return null;
  return isFloat32Vector(value.values) ? value.values : null;
}

function malformed(provider: string) {
  return badGateway(`Provider "${provider}" returned malformed embeddings.`, "upstream_invalid_response");
}

/** The vector of an `embedContent` answer, `{embedding:{values}}`. */
export function parseEmbedContent(provider: string, body: unknown): number[] {
  const values = isObject(body) ? vector(body.embedding) : null;
  if (values === null) throw malformed(provider);
  return values;
}

/** The vectors of a `batchEmbedContents` answer, `{embeddings:[{values}]}`, which must match `expected`. */
export function parseBatchEmbed(provider: string, body: unknown, expected: number): number[][] {
  const list = isObject(body) && Array.isArray(body.embeddings) ? body.embeddings.map(vector) : null;
  if (list === null || list.length !== expected || list.some((v) => v === null)) throw malformed(provider);
  return list as number[][];
}

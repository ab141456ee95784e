/**
 * OpenAI embeddings on Bedrock's InvokeModel, for the two embedding families whose bodies differ:
 *
 * - Amazon Titan Text Embeddings (`amazon.titan-embed-text-v2:0`, and v1/G1): one text per call, so inputs
 *   are sent concurrently (a few at a time); v2 takes `dimensions` 256/512/1024 and is asked to normalise.
 * - Cohere Embed (`cohere.embed-english-v3`, `cohere.embed-multilingual-v3`, `cohere.embed-v4:0`): up to 96
 *   texts per call; v3 vectors are fixed at 1024 dimensions, v4 takes `output_dimension` 256/512/1024/1536.
 *
 * The family is chosen from the model id (inference-profile prefixes such as `us.` and foundation-model ARNs
 * are understood). Token-id inputs cannot be sent to either family and are refused.
 *
 * @module
 */
import { badGateway, type GatewayError, invalidRequest } from "../../errors.ts";
import type { EmbeddedPart, EmbeddingResult } from "../types.ts";
import type { EmbeddingRequest, JsonObject } from "../../openai/types.ts";
import { isTokenCount } from "../../openai/usage_counts.ts";
import { isFloat32Vector } from "../../encoding/float32_base64.ts";
import { CORE_EMBEDDING_PARAMS, type ParamRules } from "../shared/unsupported_params.ts";

/** Which request/response shape a model id speaks. */
export type EmbeddingFamily =
  | { kind: "titan"; version: 1 | 2 }
  | { kind: "cohere"; version: 3 | 4 };

/** One InvokeModel call: JSON body in, JSON body and response headers out (errors are thrown). */
export type InvokeJson = (body: JsonObject) => Promise<{ json: JsonObject; headers: Headers }>;

/** Titan calls in flight at once per request. */
export const TITAN_CONCURRENCY = 4;
/** Cohere's documented maximum number of texts per call. */
export const COHERE_BATCH = 96;

/** Cohere `input_type` values a client may pass through (an extra request field); default `search_document`. */
const COHERE_INPUT_TYPES = ["search_document", "search_query", "classification", "clustering"];

const TITAN_RULES: ParamRules = {
  vendor: "Bedrock Titan embedding",
  unsupported: {},
  known: new Set(CORE_EMBEDDING_PARAMS),
};

const COHERE_RULES: ParamRules = {
  vendor: "Bedrock Cohere embedding",
  // An `input_type` Cohere has no such value for would be sent as the default, `search_document`.
  unsupported: { input_type: (value) => typeof value !== "string" || !COHERE_INPUT_TYPES.includes(value) },
  known: new Set(CORE_EMBEDDING_PARAMS),
};

/**
 * What the embedding translation of the Bedrock model `modelId` reads of a request: the core, and Cohere's
 * `input_type` (one of its values) for Cohere Embed. Any other field reaches no Bedrock request: refused, or
 * under `unsupported_params: drop` left out and named, as on chat. (A model of no known family is refused by
 * {@linkcode bedrockEmbeddingRefusal} first.)
 */
export function bedrockEmbeddingRules(modelId: string): ParamRules {
  return embeddingFamily(modelId)?.kind === "cohere" ? COHERE_RULES : TITAN_RULES;
}

/** The embedding family of a Bedrock model id, or null when the gateway does not know its body format. */
export function embeddingFamily(modelId: string): EmbeddingFamily | null {
  const m =
    /(?:^|[./])(amazon\.titan-embed-(?:text-v(\d)|g1-text)|cohere\.embed-(?:(?:english|multilingual)-v(3)|v(4)))/
      .exec(modelId);
  if (!m) return null;
  if (m[1].startsWith("amazon.")) return { kind: "titan", version: m[2] === "2" ? 2 : 1 };
  return { kind: "cohere", version: m[4] === "4" ? 4 : 3 };
}

function allowedDimensions(family: EmbeddingFamily): readonly number[] {
  if (family.kind === "titan") return family.version === 2 ? [256, 512, 1024] : [1536];
  return family.version === 4 ? [256, 512, 1024, 1536] : [1024];
}

/** The input texts, or a 400 naming `input` for token-id inputs. */
export function inputTexts(input: EmbeddingRequest["input"]): string[] {
  const refusal = textOnly(input);
  if (refusal !== null) throw refusal;
  return typeof input === "string" ? [input] : input as string[];
}

function textOnly(input: EmbeddingRequest["input"]): GatewayError | null {
  if (typeof input === "string" || input.every((item) => typeof item === "string")) return null;
  return invalidRequest(
    "Bedrock embedding models take text only; token-id arrays are not supported.",
    "input",
    "unsupported_input",
  );
}

function unknownFamily(modelId: string): GatewayError {
  return invalidRequest(
    `The gateway does not know the request format of Bedrock embedding model "${modelId}"; ` +
      "supported are Amazon Titan Text Embeddings and Cohere Embed.",
    "model",
    "model_not_supported",
  );
}

function dimensionsRefusal(family: EmbeddingFamily, dimensions: number | undefined): GatewayError | null {
  if (dimensions === undefined) return null;
  const allowed = allowedDimensions(family);
  if (allowed.includes(dimensions)) return null;
  return invalidRequest(
    `This Bedrock embedding model supports dimensions ${allowed.join(", ")}; got ${dimensions}.`,
    "dimensions",
    "unsupported_dimensions",
  );
}

/**
 * Why the Bedrock model `modelId` cannot embed `request`, or null when it can: a model whose body format the
 * gateway does not know, token-id inputs, `dimensions` the family does not offer. {@linkcode bedrockEmbed}
 * refuses with it, and client APIs ask it before routing (`embeddingParamsOn`), so an alias's other targets
 * serve what this one cannot.
 */
export function bedrockEmbeddingRefusal(modelId: string, request: EmbeddingRequest): GatewayError | null {
  const family = embeddingFamily(modelId);
  if (family === null) return unknownFamily(modelId);
  return textOnly(request.input) ?? dimensionsRefusal(family, request.dimensions);
}

/** The InvokeModel body for one Titan text. */
export function titanBody(text: string, family: EmbeddingFamily, dimensions?: number): JsonObject {
  if (family.kind !== "titan" || family.version === 1) return { inputText: text };
  const body: JsonObject = { inputText: text, normalize: true };
  if (dimensions !== undefined) body.dimensions = dimensions;
  return body;
}

/** The InvokeModel body for one batch of Cohere texts. */
export function cohereBody(texts: string[], family: EmbeddingFamily, request: EmbeddingRequest): JsonObject {
  const inputType = typeof request.input_type === "string" && COHERE_INPUT_TYPES.includes(request.input_type)
    ? request.input_type
    : "search_document";
  const body: JsonObject = { texts, input_type: inputType };
  if (family.kind === "cohere" && family.version === 4) {
    body.embedding_types = ["float"];
    if (request.dimensions !== undefined) body.output_dimension = request.dimensions;
  }
  return body;
}

/** Cohere's vectors from either response shape: `embeddings: [[…]]` or `embeddings: {float: [[…]]}`. */
export function cohereVectors(provider: string, json: JsonObject, expected: number): number[][] {
  const raw = json.embeddings;
  const list = Array.isArray(raw)
    ? raw
    : (raw !== null && typeof raw === "object")
    ? (raw as JsonObject).float
    : undefined;
  if (!Array.isArray(list) || list.length !== expected || !list.every(isFloat32Vector)) {
    throw badGateway(
      `Provider "${provider}" returned malformed Cohere embeddings.`,
      "upstream_invalid_response",
    );
  }
  return list;
}

/**
 * `fn` over `items`, `limit` at a time. After a failure no call starts, but the calls in flight are waited for
 * before the first failure is thrown: each may answer, and be billed, and its `onEmbedded` must be told before
 * the request's usage is recorded.
 */
async function mapLimit<T, R>(
  items: T[],
  limit: number,
  fn: (item: T, i: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i], i);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  const settled = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, worker));
  const failure = settled.find((s) => s.status === "rejected");
  if (failure) throw failure.reason;
  return out;
}

/** The input token count Bedrock sends in a header; 0 (the gateway then counts) when it is not a count. */
function headerCount(headers: Headers): number {
  const value = Number(headers.get("x-amzn-bedrock-input-token-count"));
  return isTokenCount(value) ? value : 0;
}

/**
 * The request's tokens from its calls' counts, or 0 (none: the gateway counts every text, marked estimated) when
 * a call reported none. A sum over the calls that did would charge the others' texts nothing.
 */
function promptTokens(calls: readonly { tokens: number }[]): number {
  return calls.some((c) => c.tokens === 0) ? 0 : calls.reduce((n, c) => n + c.tokens, 0);
}

/**
 * Embeds `request` with the model `modelId` through `invoke`; throws 400s for what the family cannot do. Each
 * call that answers valid vectors is told to `onEmbedded` at once, so a failure of another leaves its tokens known.
 */
export async function bedrockEmbed(
  provider: string,
  modelId: string,
  request: EmbeddingRequest,
  invoke: InvokeJson,
  onEmbedded?: (part: EmbeddedPart) => void,
): Promise<EmbeddingResult> {
  const refusal = bedrockEmbeddingRefusal(modelId, request);
  if (refusal !== null) throw refusal;
  const family = embeddingFamily(modelId)!;
  const texts = inputTexts(request.input);
  if (family.kind === "titan") {
    const results = await mapLimit(texts, TITAN_CONCURRENCY, async (text) => {
      const { json, headers } = await invoke(titanBody(text, family, request.dimensions));
      if (!isFloat32Vector(json.embedding)) {
        throw badGateway(
          `Provider "${provider}" returned a malformed Titan embedding.`,
          "upstream_invalid_response",
        );
      }
      const tokens = isTokenCount(json.inputTextTokenCount) ? json.inputTextTokenCount : headerCount(headers);
      onEmbedded?.({ texts: [text], tokens });
      return { vector: json.embedding, tokens };
    });
    const prompt = promptTokens(results);
    return {
      data: results.map((r, index) => ({ index, embedding: r.vector })),
      usage: { prompt_tokens: prompt, total_tokens: prompt },
    };
  }
  const batches: string[][] = [];
  for (let i = 0; i < texts.length; i += COHERE_BATCH) batches.push(texts.slice(i, i + COHERE_BATCH));
  const results = await mapLimit(batches, TITAN_CONCURRENCY, async (batch) => {
    const { json, headers } = await invoke(cohereBody(batch, family, request));
    const answered = { vectors: cohereVectors(provider, json, batch.length), tokens: headerCount(headers) };
    onEmbedded?.({ texts: batch, tokens: answered.tokens });
    return answered;
  });
  const vectors = results.flatMap((r) => r.vectors);
  const prompt = promptTokens(results);
  return {
    data: vectors.map((embedding, index) => ({ index, embedding })),
    usage: { prompt_tokens: prompt, total_tokens: prompt },
  };
}

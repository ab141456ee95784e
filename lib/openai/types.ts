/**
 * The OpenAI wire shapes: the gateway's lingua franca. Inbound APIs are parsed into them, every provider
 * translates from and to them, and policy, usage and routing read them; so they live here, below every layer,
 * and not with the providers.
 *
 * @module
 */

/** A JSON object as parsed from a request or response body. */
export type JsonObject = { [key: string]: unknown };

/**
 * True for a plain JSON object: not `null`, not an array. The one definition of the check every layer makes
 * before reading a field of something parsed from JSON, kept beside the type it narrows to.
 */
export function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * True for a Responses API Response as the gateway answers with, stores and reads back one: an object with
 * `object: "response"` and an `output` array. A native upstream's whole answer and its stream's final Response
 * (`response.completed`, `.incomplete`, `.failed`) are held to this one check.
 */
export function isResponseObject(value: unknown): value is JsonObject {
  return isObject(value) && value.object === "response" && Array.isArray(value.output);
}

/** OpenAI `CompletionUsage`. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  [key: string]: unknown;
}

/** A chat message as the client sent it (validated by the server). */
export interface ChatMessage extends JsonObject {
  role: string;
}

/** An OpenAI chat completion request; unknown parameters are kept and passed through. */
export interface ChatRequest extends JsonObject {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean; [key: string]: unknown } | null;
}

/**
 * Upstream reasoning in the chat form, as DeepSeek, vLLM and LiteLLM carry it: `reasoning_content` (a string) on
 * a completion's `message` and on streamed `delta`s, never mixed into `content`; its token count, where the
 * upstream gives one, is `usage.completion_tokens_details.reasoning_tokens`. Providers fill it (Anthropic
 * thinking, Gemini thoughts, Bedrock reasoning blocks, `reasoning` from OpenAI-compatible servers); inbound
 * translations read it.
 */
export interface ReasoningFields {
  reasoning_content?: string;
}

/** OpenAI `chat.completion`. */
export interface ChatCompletion extends JsonObject {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: JsonObject[];
  usage?: Usage | null;
}

/** OpenAI `chat.completion.chunk`. */
export interface ChatCompletionChunk extends JsonObject {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: JsonObject[];
  usage?: Usage | null;
}

/** An OpenAI embeddings request, validated. */
export interface EmbeddingRequest extends JsonObject {
  model: string;
  input: string | string[] | number[] | number[][];
  encoding_format?: "float" | "base64";
  dimensions?: number;
  user?: string;
}

/**
 * The Gemini API (v1beta) of the scripted upstream (scripted_upstream.ts dispatches `/v1beta/...` here), in the
 * wire format Google documents:
 *
 * - `POST /v1beta/models/{model}:generateContent`: one `GenerateContentResponse` as JSON;
 * - `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`: SSE, each event `data: {GenerateContentResponse}`,
 *   `finishReason` and the whole `usageMetadata` on the last one;
 * - `POST /v1beta/models/{model}:countTokens`: `{ totalTokens }`;
 * - `GET /v1beta/models` and `GET /v1beta/models/{model}`: the model list and one model.
 *
 * Same script as the other APIs: a conversation whose last content carries a `functionResponse` gets the final
 * text; one that declares a file-writing tool in `tools[].functionDeclarations` (Gemini CLI's `write_file`,
 * `file_path` and `content`) gets ONE `functionCall` writing the file; anything else a short side text — or,
 * when `generationConfig.responseMimeType` asks for JSON, a JSON value matching `responseJsonSchema` (or
 * `responseSchema`), with `next_speaker: "user"` so Gemini CLI's next-speaker check ends the turn. When
 * `generationConfig.thinkingConfig.includeThoughts` is set, the tool call and the final text come after a
 * thought summary part (`thought: true`), as a thinking model sends them. In `cut` mode a streamed answer is
 * torn down after a first event (a function call, which Google streams whole, follows a short text for that).
 *
 * @module
 */
import {
  type Answer,
  type Api,
  type DeclaredTool,
  jsonAnswer,
  type Plan,
  plan,
  SIDE_TEXT,
  sseAnswer,
} from "./scripted_upstream.ts";

type Json = Record<string, unknown>;

const encoder = new TextEncoder();
let counter = 0;
const USAGE = { input: 42, output: 12 };

/** What the Gemini API part of the fake made of one request. */
export interface GeminiOutcome {
  api: Api;
  answer: Answer;
  tool?: string;
  response: Response;
}

/** The model and method of `/v1beta/models/{model}:{method}`; `method` is empty for `GET /v1beta/models/{model}`. */
function route(path: string): { model: string; method: string } | undefined {
  const m = path.match(/^\/v1beta\/models\/([^/:]+)(?::(\w+))?$/);
  return m ? { model: decodeURIComponent(m[1]), method: m[2] ?? "" } : undefined;
}

/** Google's error body. */
function googleError(code: number, status: string, message: string): Response {
  return Response.json({ error: { code, message, status } }, { status: code });
}

function modelResource(model: string): Json {
  return {
    name: `models/${model}`,
    baseModelId: model,
    version: "001",
    displayName: model,
    description: "A scripted fake model",
    inputTokenLimit: 1_048_576,
    outputTokenLimit: 65_536,
    supportedGenerationMethods: ["generateContent", "countTokens"],
    temperature: 1,
    maxTemperature: 2,
    topP: 0.95,
    topK: 64,
    thinking: true,
  };
}

/** The function declarations of `tools[]`, with their schema (`parameters` or `parametersJsonSchema`). */
export function geminiTools(body: Json): DeclaredTool[] {
  const tools = Array.isArray(body.tools) ? body.tools as Json[] : [];
  return tools.flatMap((t) => Array.isArray(t.functionDeclarations) ? t.functionDeclarations as Json[] : [])
    .map((f) => ({
      name: String(f.name),
      kind: "function" as const,
      schema: (f.parametersJsonSchema ?? f.parameters ?? {}) as Json,
    }));
}

function lastIsFunctionResponse(body: Json): boolean {
  const contents = Array.isArray(body.contents) ? body.contents as Json[] : [];
  const parts = contents.at(-1)?.parts;
  return Array.isArray(parts) && (parts as Json[]).some((p) => p.functionResponse !== undefined);
}

/** A JSON value matching `schema` (JSON Schema, or the Gemini `Schema` with upper-case types). */
export function valueFor(schema: Json | undefined, name = ""): unknown {
  if (!schema) return {};
  if (Array.isArray(schema.enum) && schema.enum.length) {
    return name === "next_speaker" && schema.enum.includes("user") ? "user" : schema.enum[0];
  }
  const anyOf = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (Array.isArray(anyOf) && anyOf.length) return valueFor(anyOf[0], name);
  const type = String(Array.isArray(schema.type) ? schema.type[0] : schema.type ?? "object").toLowerCase();
  switch (type) {
    case "string":
      return name === "next_speaker" ? "user" : SIDE_TEXT;
    case "number":
    case "integer":
      return 0;
    case "boolean":
      return false;
    case "array":
      return [];
    case "null":
      return null;
    default:
      return Object.fromEntries(
        Object.entries((schema.properties ?? {}) as Record<string, Json>).map((
          [k, s],
        ) => [k, valueFor(s, k)]),
      );
  }
}

function candidate(parts: Json[], finishReason?: string): Json {
  return {
    content: { role: "model", parts },
    ...(finishReason ? { finishReason } : {}),
    index: 0,
  };
}

/** The thought summary a thinking model sends first when `generationConfig.thinkingConfig.includeThoughts` asks. */
export const THOUGHT_TEXT = "**Writing the file**\n\nThe task asks for one file; I will write it.";

function generateAnswer(
  model: string,
  p: Plan,
  jsonText: string | undefined,
  thoughts: boolean,
  stream: boolean,
  cut: boolean,
): Response {
  const responseId = `fakeResp${(++counter).toString().padStart(6, "0")}`;
  const thoughtTokens = thoughts ? 8 : 0;
  const usageMetadata = {
    promptTokenCount: USAGE.input,
    candidatesTokenCount: USAGE.output,
    ...(thoughts ? { thoughtsTokenCount: thoughtTokens } : {}),
    totalTokenCount: USAGE.input + USAGE.output + thoughtTokens,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: USAGE.input }],
  };
  const text = jsonText ?? p.text;
  const answerParts: Json[] = p.call
    ? [{
      functionCall: {
        id: `call_fake${counter.toString().padStart(6, "0")}`,
        name: p.call.name,
        args: JSON.parse(p.call.input),
      },
    }]
    : [{ text }];
  const thought: Json[] = thoughts ? [{ text: THOUGHT_TEXT, thought: true }] : [];
  const common = { modelVersion: model, responseId };
  if (!stream) {
    return jsonAnswer({
      candidates: [candidate([...thought, ...answerParts], "STOP")],
      usageMetadata,
      ...common,
    }, cut);
  }
  // Google streams the thought summary first, then text in pieces or a function call whole; every event but the
  // last has only the prompt's count.
  const partial = { promptTokenCount: USAGE.input, totalTokenCount: USAGE.input };
  // Cut: a function call, streamed whole, follows a short text so the stream is torn after a first event.
  const leadIn: Json[][] = cut && p.call ? [[{ text: "I will write the file." }]] : [];
  const chunks: Json[][] = [
    ...thought.map((t) => [t]),
    ...leadIn,
    ...(p.call ? [answerParts] : pieces(text).map((t) => [{ text: t }])),
  ];
  const events = chunks.map((parts, i) =>
    i < chunks.length - 1
      ? { candidates: [candidate(parts)], usageMetadata: partial, ...common }
      : { candidates: [candidate(parts, "STOP")], usageMetadata, ...common }
  );
  return sseAnswer(events.map((e) => encoder.encode(`data: ${JSON.stringify(e)}\r\n\r\n`)), cut);
}

/** Splits `text` into up to four pieces (a stream cut after three events then stops mid-text). */
function pieces(text: string): string[] {
  const size = Math.max(1, Math.ceil(text.length / 4));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length ? out : [""];
}

/**
 * The answer to a Gemini API request, or undefined when `path` is not one. `cut` asks main answers (tool call,
 * final text) to be torn down mid-way.
 */
export function geminiRequest(
  method: string,
  path: string,
  search: URLSearchParams,
  body: Json,
  rawLength: number,
  workdir: string,
  cut: boolean,
): GeminiOutcome | undefined {
  if (!path.startsWith("/v1beta/")) return undefined;
  if (method === "GET" && path === "/v1beta/models") {
    return {
      api: "gemini_models",
      answer: "models",
      response: Response.json({ models: ["gemini-fake", "gemini-fake-lite"].map(modelResource) }),
    };
  }
  const r = route(path);
  if (r && method === "GET" && r.method === "") {
    return { api: "gemini_models", answer: "models", response: Response.json(modelResource(r.model)) };
  }
  if (r && method === "POST" && r.method === "countTokens") {
    return {
      api: "count_tokens",
      answer: "count",
      response: Response.json({
        totalTokens: Math.max(1, Math.ceil(rawLength / 4)),
        promptTokensDetails: [{ modality: "TEXT", tokenCount: Math.max(1, Math.ceil(rawLength / 4)) }],
      }),
    };
  }
  if (r && method === "POST" && (r.method === "generateContent" || r.method === "streamGenerateContent")) {
    const stream = r.method === "streamGenerateContent";
    if (stream && search.get("alt") !== "sse") {
      return {
        api: "gemini",
        answer: "not_found",
        response: googleError(400, "INVALID_ARGUMENT", "the scripted fake streams only with alt=sse"),
      };
    }
    const config = (body.generationConfig ?? {}) as Json;
    const wantsJson = config.responseMimeType === "application/json";
    const p: Plan = wantsJson && !lastIsFunctionResponse(body)
      ? { answer: "side", text: "" }
      : plan(lastIsFunctionResponse(body), geminiTools(body), config.maxOutputTokens === 1, workdir);
    const jsonText = wantsJson && p.answer === "side"
      ? JSON.stringify(valueFor((config.responseJsonSchema ?? config.responseSchema) as Json | undefined))
      : undefined;
    // A thinking model sums its thoughts up first when asked to (not for side answers).
    const thinking = (config.thinkingConfig ?? {}) as Json;
    const thoughts = thinking.includeThoughts === true && p.answer !== "side";
    const doCut = cut && p.answer !== "side";
    return {
      api: "gemini",
      answer: doCut ? "cut" : p.answer,
      tool: p.call?.name,
      response: generateAnswer(r.model, p, jsonText, thoughts, stream, doCut),
    };
  }
  return {
    api: "other",
    answer: "not_found",
    response: googleError(404, "NOT_FOUND", `Unknown path ${method} ${path}`),
  };
}

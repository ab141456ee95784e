/**
 * Fuzzing Google's Gemini API routes: a valid `generateContent` body using most of what the gateway's
 * translation reads, and random mutations of it (a value at one of its paths replaced by junk, or removed),
 * as JSON text for `tests/gemini/gemini_bad_requests_test.ts`.
 *
 * @module
 */
import fc from "fast-check";
import { junk } from "./fuzz_requests.ts";

/** A valid `generateContent` body using most of what the translation reads. */
export const GEMINI_VALID: Record<string, unknown> = {
  contents: [
    { role: "user", parts: [{ text: "Weather in Paris?" }] },
    {
      role: "model",
      parts: [{ text: "Checking." }, { functionCall: { name: "f", args: { city: "Paris" } } }],
    },
    { role: "user", parts: [{ functionResponse: { name: "f", response: { temp: 21 } } }, { text: "And?" }] },
  ],
  systemInstruction: { parts: [{ text: "Be brief." }] },
  tools: [{ functionDeclarations: [{ name: "f", description: "d", parameters: { type: "OBJECT" } }] }],
  toolConfig: { functionCallingConfig: { mode: "AUTO" } },
  generationConfig: {
    temperature: 0.5,
    topP: 0.9,
    maxOutputTokens: 30,
    stopSequences: ["END"],
    candidateCount: 1,
  },
};

/** The places a mutation hits: each a path into {@linkcode GEMINI_VALID} (`[]` is the body itself). */
const PATHS: (string | number)[][] = [
  "",
  "contents contents.0 contents.0.role contents.0.parts contents.0.parts.0 contents.0.parts.0.text",
  "contents.0.parts.0.inlineData contents.0.parts.0.fileData contents.1.role contents.1.parts.1",
  "contents.1.parts.1.functionCall.name contents.1.parts.1.functionCall.args contents.2.parts.0.functionResponse",
  "contents.2.parts.0.functionResponse.name systemInstruction systemInstruction.parts systemInstruction.parts.0.text",
  "tools tools.0 tools.0.functionDeclarations tools.0.functionDeclarations.0.name tools.0.googleSearch",
  "tools.0.functionDeclarations.0.parameters toolConfig toolConfig.functionCallingConfig.mode",
  "toolConfig.functionCallingConfig.allowedFunctionNames generationConfig generationConfig.temperature",
  "generationConfig.topP generationConfig.topK generationConfig.maxOutputTokens generationConfig.stopSequences",
  "generationConfig.candidateCount generationConfig.seed generationConfig.responseMimeType",
  "generationConfig.responseSchema generationConfig.thinkingConfig generationConfig.thinkingConfig.thinkingBudget",
  "generationConfig.presencePenalty cachedContent safetySettings generateContentRequest model",
].flatMap((line) =>
  line === "" ? [[]] : line.split(" ").map((p) => p.split(".").map((k) => /^\d+$/.test(k) ? Number(k) : k))
);

/** `value` with `replacement` at `path` (or the key removed, for `undefined`). */
function mutate(value: unknown, path: (string | number)[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [key, ...rest] = path;
  const copy =
    (Array.isArray(value)
      ? [...value]
      : value !== null && typeof value === "object"
      ? { ...value }
      : {}) as Record<string | number, unknown>;
  if (rest.length === 0 && replacement === undefined) delete copy[key];
  else copy[key] = mutate(copy[key], rest, replacement);
  return copy;
}

/** {@linkcode GEMINI_VALID} after one to three mutations, as JSON text. */
export const geminiMutationArb: fc.Arbitrary<string> = fc.array(
  fc.tuple(fc.constantFrom(...PATHS), fc.option(junk, { freq: 5, nil: undefined })),
  { minLength: 1, maxLength: 3 },
).map((ms) =>
  JSON.stringify(ms.reduce((body, [path, value]) => mutate(body, path, value), GEMINI_VALID as unknown))
);

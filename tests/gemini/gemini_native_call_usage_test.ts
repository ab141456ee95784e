/**
 * A native Gemini target that reports no usage has its answer counted by the gateway (`tokens_estimated`): a
 * `functionCall` part's args, and an `executableCode` part's code (code execution: the model wrote it, the vendor
 * bills it as output), are counted as the same text in a `text` part is, in a JSON answer and in a stream.
 */
import { assertCountedAlike, type OwnCountCase } from "../helpers/own_count.ts";
import { dataEvents, jsonStep, sseStep } from "../helpers/raw_upstream.ts";

const ARGS = { location: "Reykjavik, Iceland", unit: "celsius", days: 5, include: ["wind", "humidity"] };
const TEXT = JSON.stringify(ARGS);

/** The part the upstream says {@linkcode TEXT} in. */
type Kind = "text" | "functionCall" | "executableCode";

/** A Gemini answer of one part of a kind holding {@linkcode TEXT}, without any usage metadata. */
const GEMINI: OwnCountCase<Kind> = {
  provider: (url) => `{ type: gemini, base_url: "${url}/v1beta", api_key: AIza-scripted-0123456789 }`,
  answer(kind, stream) {
    const part = kind === "text"
      ? { text: TEXT }
      : kind === "functionCall"
      ? { functionCall: { name: "get_weather", args: ARGS } }
      : { executableCode: { language: "PYTHON", code: TEXT } };
    const answer = {
      candidates: [{ index: 0, content: { role: "model", parts: [part] }, finishReason: "STOP" }],
      modelVersion: "m",
      responseId: "r1",
    };
    return stream ? sseStep(dataEvents([answer])) : jsonStep(answer);
  },
  request: ({ stream, alias, token }) => ({
    path: `/v1beta/models/${alias}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`,
    headers: { "x-goog-api-key": token },
    body: {
      contents: [{ role: "user", parts: [{ text: "weather" }] }],
      tools: [{ functionDeclarations: [{ name: "get_weather" }] }, { codeExecution: {} }],
    },
  }),
  shows: "Reykjavik",
};

for (const stream of [false, true]) {
  for (const kind of ["functionCall", "executableCode"] as const) {
    Deno.test(
      `gemini native usage: without the upstream's usage, a ${kind} part is counted as text is (${
        stream ? "stream" : "JSON"
      })`,
      () => assertCountedAlike(GEMINI, kind, "text", stream),
    );
  }
}

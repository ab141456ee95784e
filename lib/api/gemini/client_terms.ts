/**
 * Errors found in the chat form of a Gemini request, named in the client's own terms. The request is translated
 * to chat before policy and the provider adapters see it, so what a translated target refuses names a chat
 * param (`seed`, `reasoning_effort`, `messages[2].content`) that a Gemini client never sent; it sent
 * `generationConfig.seed`, `generationConfig.thinkingConfig.thinkingLevel`, `contents[1]`. Google's error
 * shape has no `param`, so the message is what the client reads: its mention of the chat param is rewritten too.
 *
 * @module
 */
import type { ClientTerms } from "../../errors.ts";
import type { GeminiRequest } from "./request.ts";

/** Top-level chat params with one place in a Gemini request. */
const RENAMED: Readonly<Record<string, string>> = {
  temperature: "generationConfig.temperature",
  top_p: "generationConfig.topP",
  top_k: "generationConfig.topK",
  max_completion_tokens: "generationConfig.maxOutputTokens",
  max_tokens: "generationConfig.maxOutputTokens",
  stop: "generationConfig.stopSequences",
  seed: "generationConfig.seed",
  presence_penalty: "generationConfig.presencePenalty",
  frequency_penalty: "generationConfig.frequencyPenalty",
  n: "generationConfig.candidateCount",
  tool_choice: "toolConfig.functionCallingConfig",
  reasoning_effort: "generationConfig.thinkingConfig",
  response_format: "generationConfig.responseMimeType",
};

/**
 * The client's path of a chat param: a message's or a tool's (with what follows it, for a tool, past its
 * `function`), where the request put it; a top-level param by {@linkcode RENAMED}; undefined when the client's
 * request has no other name for it.
 */
export function geminiParam(parsed: GeminiRequest, param: string): string | undefined {
  const message = /^messages\[(\d+)\]/.exec(param);
  if (message !== null) return parsed.params.messages[Number(message[1])];
  const tool = /^tools\[(\d+)\](?:\.function)?(.*)$/.exec(param);
  if (tool !== null) {
    const at = parsed.params.tools[Number(tool[1])];
    return at === undefined ? undefined : at + tool[2];
  }
  const top = /^[a-z_]+/.exec(param)?.[0] ?? "";
  const named = top === "reasoning_effort"
    ? parsed.params.reasoning
    : top === "response_format"
    ? parsed.params.format
    : undefined;
  return named ?? RENAMED[top];
}

/** A quoted mention of a chat param in an error's message ('seed', `messages[2].content`). */
const QUOTED = /(['`])([a-z_]+(?:\[\d+\])?(?:\.[\w.[\]]+)?)\1/g;

/**
 * The Gemini API's terms for `inClientTerms` (`lib/errors.ts`): a 400 naming a chat param renamed to the field
 * the client sent ({@linkcode geminiParam}), and every quoted chat param its message mentions (a refusal may
 * name two: `'max_completion_tokens' must be above 1024 with 'reasoning_effort'`) with the client's own;
 * other errors are left as they are.
 */
export function geminiClientTerms(parsed: GeminiRequest): ClientTerms {
  return (err) => {
    if (err.status !== 400) return undefined;
    const client = geminiParam(parsed, err.param);
    if (client === undefined || client === err.param) return undefined;
    const message = err.message.replace(
      QUOTED,
      (quoted, mark: string, name: string) => {
        const renamed = geminiParam(parsed, name);
        return renamed === undefined ? quoted : `${mark}${renamed}${mark}`;
      },
    );
    return { param: client, message };
  };
}

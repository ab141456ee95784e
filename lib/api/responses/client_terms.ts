/**
 * Errors found in the chat form of a Responses request, named in the client's own terms. The request is
 * translated to chat before policy and the provider adapters see it, so what they refuse names a chat param
 * (`response_format`, `reasoning_effort`, `messages[3].content[0].image_url.url`, `tools[1].function.name`);
 * the client sent `text.format`, `reasoning.effort`, `input[2].content[0].image_url`, `tools[2].name`, and
 * OpenAI's SDKs show `param` to the user as the field to fix.
 *
 * @module
 */
import type { ClientTerms } from "../../errors.ts";
import type { ResponsesRequest } from "./request.ts";

/** Top-level chat params that have another name (or place) in a Responses request. */
const RENAMED: Readonly<Record<string, string>> = {
  response_format: "text.format",
  max_completion_tokens: "max_output_tokens",
  max_tokens: "max_output_tokens",
  reasoning_effort: "reasoning.effort",
  verbosity: "text.verbosity",
  messages: "input",
};

/** The client's path of what follows a chat message's `content` (an image's URL is the part's `image_url`). */
function partPath(rest: string): string {
  return rest.replace(/^(\[\d+\])\.image_url\.url\b/, "$1.image_url");
}

/** `messages[i]…` in the client's terms, or undefined when the message is not one the request translated. */
function messagePath(parsed: ResponsesRequest, index: number, rest: string): string | undefined {
  const path = parsed.messageParams[index];
  if (path === undefined) return undefined;
  const content = /^\.content(.*)$/.exec(rest);
  if (content !== null) {
    // A user message's parts are its item's parts one for one; any other content became one string.
    return path.endsWith(".content") ? path + partPath(content[1]) : path;
  }
  // Another field of the message (its role, its tool calls): the item it came from, or the param itself.
  return /^input\[\d+\]/.exec(path)?.[0] ?? path;
}

/**
 * `tools[i]…` (the chat form's i-th function tool: a function or custom tool) as the client's index and flat
 * function-tool fields.
 */
function toolPath(parsed: ResponsesRequest, index: number, rest: string): string | undefined {
  let seen = -1;
  const at = parsed.params.tools.findIndex((tool) =>
    (tool.type === "function" || tool.type === "custom") && ++seen === index
  );
  if (at < 0) return undefined;
  return `tools[${at}]${rest.replace(/^\.function(?=\.|$)/, "")}`;
}

/**
 * The client's own name for a param of the chat form its request was translated to: `messages[0].content` →
 * `instructions`, `messages[3].content[0].text` → `input[2].content[0].text`, `response_format.json_schema`
 * → `text.format`, `tool_choice.function.name` → `tool_choice.name`. A param with no other name is returned
 * as it is.
 */
export function clientParam(parsed: ResponsesRequest, param: string): string {
  const message = /^messages\[(\d+)\](.*)$/.exec(param);
  if (message !== null) return messagePath(parsed, Number(message[1]), message[2]) ?? param;
  const tool = /^tools\[(\d+)\](.*)$/.exec(param);
  if (tool !== null) return toolPath(parsed, Number(tool[1]), tool[2]) ?? param;
  if (/^tool_choice\.function(?=\.|$)/.test(param)) return param.replace(".function", "");
  // The format's own fields are flat in `text.format` (`json_schema.schema` → `schema`).
  if (/^response_format(?=\.|$)/.test(param)) {
    return param.replace(/^response_format(\.json_schema)?/, "text.format");
  }
  const top = /^([a-z_]+)(.*)$/.exec(param);
  const renamed = top === null ? undefined : RENAMED[top[1]];
  return renamed === undefined ? param : renamed + top![2];
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * `message` with the chat param it names (`param`, and its top-level name: "The parameter 'response_format'
 * with this value…") written as the client's (`client`), so the text agrees with the error's `param`.
 */
export function clientMessage(message: string, param: string, client: string): string {
  let out = message.replace(new RegExp(`(?<![\\w.\\]])${escape(param)}(?![\\w\\[])`, "g"), client);
  const top = /^[a-z_]+/.exec(param)?.[0];
  const renamed = top === undefined ? undefined : RENAMED[top];
  if (top !== undefined && renamed !== undefined && top !== "messages") {
    out = out.replace(new RegExp(`(?<![\\w.\\]])${escape(top)}(?![\\w\\[])`, "g"), renamed);
  }
  return out;
}

/**
 * The Responses API's terms for `inClientTerms` (`lib/errors.ts`): an error's chat param renamed to the client's
 * ({@linkcode clientParam}), and the message's mention of it with it; left as it is when the names agree.
 */
export function responsesClientTerms(parsed: ResponsesRequest): ClientTerms {
  return (err) => {
    const param = clientParam(parsed, err.param);
    return param === err.param ? undefined : { param, message: clientMessage(err.message, err.param, param) };
  };
}

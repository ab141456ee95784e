/**
 * Helpers shared by the Bedrock request tests. The tool example is AWS's own ("Call a tool with the Converse
 * API", docs.aws.amazon.com/bedrock/latest/userguide/tool-use-inference-call.html): tool `top_song`, station
 * WZPZ, tool use id `tooluse_kZJMlvQmRJ6eAyJE5GIl7Q`.
 */
import type { ChatRequest, JsonObject } from "../../openai/types.ts";

export const req = (fields: Partial<ChatRequest> & JsonObject): ChatRequest => ({
  model: "m",
  messages: [],
  ...fields,
});

export const TOP_SONG_TOOL = {
  type: "function",
  function: {
    name: "top_song",
    description: "Get the most popular song played on a radio station.",
    parameters: {
      type: "object",
      properties: {
        sign: {
          type: "string",
          description: "The call sign for the radio station for which you want the most popular song. " +
            "Example calls signs are WZPZ and WKRP.",
        },
      },
      required: ["sign"],
    },
  },
};
export const TOOL_USE_ID = "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q";

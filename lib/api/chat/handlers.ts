/**
 * OpenAI's chat completions (`POST /v1/chat/completions`): the handlers this client API gives the server,
 * which binds them to the endpoint table (`lib/http/endpoints.ts`). Everything else in this folder is the
 * API's own: its request schema and validation, its translation to and from the chat form, its native
 * passthrough, its stream events.
 *
 * @module
 */
export { handleChatCompletions } from "./completions.ts";

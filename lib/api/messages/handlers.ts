/**
 * Anthropic's Messages API (`POST /v1/messages`, `POST /v1/messages/count_tokens`): the handlers this client
 * API gives the server, which binds them to the endpoint table (`lib/http/endpoints.ts`). Everything else in
 * this folder is the API's own: its request schema and validation, its translation to and from the chat form,
 * its native passthrough, its stream events.
 *
 * @module
 */
export { handleMessagesCountTokens } from "./count_tokens.ts";
export { handleMessages } from "./create.ts";

/**
 * OpenAI's Responses API (`/v1/responses`: create, count input tokens, stored responses, their input items
 * and cancel): the handlers this client API gives the server, which binds them to the endpoint table
 * (`lib/http/endpoints.ts`). Everything else in this folder is the API's own: its request schema and
 * validation, its translation to and from the chat form, its native passthrough, its stream events.
 *
 * @module
 */
export { handleResponses } from "./create.ts";
export { handleResponsesInputTokens } from "./input_tokens.ts";
export { handleResponsesCompact } from "./compact.ts";
export { handleCancelResponse, handleInputItems, handleStoredResponse } from "./stored.ts";
export { handleResponsesWebSocket } from "./websocket.ts";

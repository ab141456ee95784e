/**
 * OpenAI's moderations (`POST /v1/moderations`): the handlers this client API gives the server, which binds
 * them to the endpoint table (`lib/http/endpoints.ts`). Everything else in this folder is the API's own: its
 * request schema and validation.
 *
 * @module
 */
export { handleModerations } from "./moderations.ts";

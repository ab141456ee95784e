/**
 * OpenAI's embeddings (`POST /v1/embeddings`): the handlers this client API gives the server, which binds
 * them to the endpoint table (`lib/http/endpoints.ts`). Everything else in this folder is the API's own: its
 * request schema and validation, its translation to and from the chat form, its native passthrough, its
 * stream events.
 *
 * @module
 */
export { handleEmbeddings } from "./embeddings.ts";

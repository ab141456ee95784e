/**
 * The Gemini API's handlers, as the server binds them to the endpoint table.
 *
 * @module
 */
export { handleGeminiModel } from "./generate.ts";
export { handleGeminiModels } from "./models.ts";

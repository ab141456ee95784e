import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { normalizeGemini } from "./normalize.ts";

Deno.test("gemini normalize: proto field names, enum case and single values of Google's REST examples", () => {
  // Google's cookbook request (Function_calling_config_REST), as published.
  const body = normalizeGemini({
    system_instruction: { parts: { text: "You are a lighting bot." } },
    tools: [{ function_declarations: [{ name: "set_light_color", parameters: { type: "object" } }] }],
    tool_config: { function_calling_config: { mode: "any", allowed_function_names: ["set_light_color"] } },
    contents: { role: "user", parts: { text: "Make this place PURPLE!" } },
    generation_config: {
      max_output_tokens: 50,
      response_mime_type: "application/json",
      stop_sequences: "END",
    },
    safety_settings: { category: "harm_category_hate_speech", threshold: "block_none" },
  }, "GenerateContentRequest");
  assert.deepEqual(body, {
    systemInstruction: { parts: [{ text: "You are a lighting bot." }] },
    tools: [{ functionDeclarations: [{ name: "set_light_color", parameters: { type: "OBJECT" } }] }],
    toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["set_light_color"] } },
    contents: [{ role: "user", parts: [{ text: "Make this place PURPLE!" }] }],
    generationConfig: { maxOutputTokens: 50, responseMimeType: "application/json", stopSequences: ["END"] },
    safetySettings: [{ category: "HARM_CATEGORY_HATE_SPEECH", threshold: "BLOCK_NONE" }],
  });
});

Deno.test("gemini normalize: the client's own JSON and unknown fields are never renamed", () => {
  const args = { file_path: "a.txt", nested: { max_output_tokens: 1 } };
  const response = { exit_code: 0, inline_data: "x" };
  const jsonSchema = { type: "object", properties: { file_path: { type: "string", max_length: 3 } } };
  const body = normalizeGemini({
    contents: [
      { role: "model", parts: [{ function_call: { name: "write_file", args } }] },
      {
        role: "user",
        parts: [
          { function_response: { name: "write_file", response } },
          { inline_data: { mime_type: "image/png", data: "iVBORw0KGgo=" } },
        ],
      },
    ],
    tools: [{
      function_declarations: [
        {
          name: "write_file",
          parameters: {
            type: "object",
            // Property names are the client's; each property's schema is Google's Schema message.
            properties: { file_path: { type: "string", max_length: 3, enum: ["a_b", "c"] } },
            property_ordering: ["file_path"],
          },
        },
        { name: "read_file", parameters_json_schema: jsonSchema },
      ],
    }],
    some_new_field: { keep_me: 1 },
  }, "GenerateContentRequest");
  const contents = body.contents as { parts: Record<string, Record<string, unknown>>[] }[];
  assert.deepEqual(contents[0].parts[0].functionCall, { name: "write_file", args });
  assert.deepEqual(contents[1].parts[0].functionResponse, { name: "write_file", response });
  assert.deepEqual(contents[1].parts[1].inlineData, { mimeType: "image/png", data: "iVBORw0KGgo=" });
  const declarations =
    (body.tools as { functionDeclarations: Record<string, unknown>[] }[])[0].functionDeclarations;
  assert.deepEqual(declarations[0].parameters, {
    type: "OBJECT",
    properties: { file_path: { type: "STRING", maxLength: 3, enum: ["a_b", "c"] } },
    propertyOrdering: ["file_path"],
  });
  assert.deepEqual(declarations[1], { name: "read_file", parametersJsonSchema: jsonSchema });
  assert.deepEqual(body.some_new_field, { keep_me: 1 }, "a field Google may know and the gateway does not");
});

Deno.test("gemini normalize: a field given in both spellings is Google's 400; embedding bodies too", () => {
  assert.throws(
    () =>
      normalizeGemini({
        contents: [{ parts: [{ text: "hi" }] }],
        generationConfig: { maxOutputTokens: 10 },
        generation_config: { max_output_tokens: 60_000 },
      }, "GenerateContentRequest"),
    (e: unknown) => e instanceof GatewayError && e.status === 400 && e.param === "generationConfig",
  );
  assert.deepEqual(
    normalizeGemini(
      { requests: { content: { parts: { text: "a" } }, output_dimensionality: 3 } },
      "BatchEmbedContentsRequest",
    ),
    { requests: [{ content: { parts: [{ text: "a" }] }, outputDimensionality: 3 }] },
  );
  // What is not a list where one goes stays as it is, for the parser's 400.
  assert.deepEqual(normalizeGemini({ contents: "Hi" }, "GenerateContentRequest"), { contents: "Hi" });
});

import assert from "node:assert/strict";
import type { JsonObject } from "../../openai/types.ts";
import { parseGeminiRequest } from "./request.ts";
import { jsonSchemaOf } from "./schema.ts";

const ask = [{ role: "user", parts: [{ text: "Subscribe me" }] }];

/** The JSON Schemas a translated target gets of a function's parameters and of the response. */
function sent(declaration: JsonObject, generationConfig: JsonObject = {}) {
  const { chat } = parseGeminiRequest(
    { contents: ask, tools: [{ functionDeclarations: [{ name: "f", ...declaration }] }], generationConfig },
    "alias",
    false,
  );
  const tool = (chat.tools as JsonObject[])[0].function as JsonObject;
  const format = chat.response_format as JsonObject | undefined;
  return { parameters: tool.parameters, response: (format?.json_schema as JsonObject | undefined)?.schema };
}

Deno.test("gemini schema: a JSON Schema the client gave goes as written, its data's case with it", () => {
  const schema = {
    type: "object",
    properties: {
      plan: {
        type: "object",
        properties: { type: { type: "string", enum: ["Premium", "Basic"] } },
        default: { type: "Premium" },
        examples: [{ type: "Basic" }],
        const: { type: "Basic" },
      },
    },
  };
  const { parameters, response } = sent({ parametersJsonSchema: schema }, {
    responseMimeType: "application/json",
    responseJsonSchema: schema,
  });
  assert.deepEqual(parameters, schema);
  assert.deepEqual(response, schema);
});

Deno.test("gemini schema: Google's Schema: its types in lower case in the schema positions only", () => {
  const schema = {
    type: "OBJECT",
    properties: {
      // A property named `type`, and data whose key is `type`: the client's, kept as written.
      type: { type: "STRING", enum: ["Premium", "BASIC"], default: "Premium" },
      plan: { type: "OBJECT", default: { type: "Premium" }, example: { type: "BASIC" } },
      tags: { type: "ARRAY", items: { type: "STRING" } },
      either: { anyOf: [{ type: "INTEGER" }, { type: "BOOLEAN" }] },
      any: { type: "TYPE_UNSPECIFIED", description: "Anything" },
    },
  };
  assert.deepEqual(sent({ parameters: schema }).parameters, {
    type: "object",
    properties: {
      type: { type: "string", enum: ["Premium", "BASIC"], default: "Premium" },
      plan: { type: "object", default: { type: "Premium" }, example: { type: "BASIC" } },
      tags: { type: "array", items: { type: "string" } },
      either: { anyOf: [{ type: "integer" }, { type: "boolean" }] },
      any: { description: "Anything" },
    },
  });
  // In any case, and by its proto name, as Google reads it (normalize.ts).
  const response =
    sent({}, { responseMimeType: "application/json", response_schema: { type: "string" } }).response;
  assert.deepEqual(response, { type: "string" });
});

Deno.test("gemini schema: nullable, propertyOrdering, counts and integer enums in JSON Schema's terms", () => {
  assert.deepEqual(
    sent({
      parameters: {
        type: "OBJECT",
        propertyOrdering: ["b", "a", "missing"],
        properties: {
          a: { type: "STRING", nullable: true, maxLength: "10" },
          c: { type: "ARRAY", items: { type: "NUMBER" }, minItems: "1", maxItems: 3 },
          b: { type: "INTEGER", format: "enum", enum: ["101", "201"], nullable: true, minimum: "0.5" },
          d: { anyOf: [{ type: "STRING" }], nullable: true },
          e: { type: "STRING", nullable: false },
        },
      },
    }).parameters,
    {
      type: "object",
      properties: {
        b: { type: ["integer", "null"], format: "enum", enum: [101, 201, null], minimum: 0.5 },
        a: { type: ["string", "null"], maxLength: 10 },
        c: { type: "array", items: { type: "number" }, minItems: 1, maxItems: 3 },
        d: { anyOf: [{ type: "string" }, { type: "null" }] },
        e: { type: "string" },
      },
    },
  );
  assert.deepEqual(
    Object.keys(
      jsonSchemaOf({ properties: { z: {}, y: {} }, propertyOrdering: ["y"] }).properties as JsonObject,
    ),
    [
      "y",
      "z",
    ],
  );
});

import assert from "node:assert/strict";
import { GatewayError, inClientTerms, invalidRequest } from "../../errors.ts";
import { geminiClientTerms } from "./client_terms.ts";
import { parseGeminiRequest } from "./request.ts";

Deno.test("gemini client terms: a refusal of the chat form names the message, tool or field the client sent", () => {
  const parsed = parseGeminiRequest(
    {
      systemInstruction: { parts: [{ text: "Be brief." }] },
      contents: [
        { role: "user", parts: [{ text: "Weather?" }] },
        { role: "model", parts: [{ functionCall: { name: "get_time", args: {} } }] },
        { role: "user", parts: [{ text: "and" }, { functionResponse: { name: "get_time", response: {} } }] },
      ],
      tools: [{ googleSearch: {} }, {
        functionDeclarations: [{ name: "get_weather" }, { name: "get_time" }],
      }],
      toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_time"] } },
      generationConfig: { responseMimeType: "application/json", responseJsonSchema: { type: "object" } },
    },
    "alias",
    false,
  );
  const renamed = (err: GatewayError) => {
    const out = inClientTerms(err, geminiClientTerms(parsed)) as GatewayError;
    return [out.param, out.message];
  };
  assert.deepEqual(renamed(invalidRequest("Invalid 'messages[0].content'.", "messages[0].content")), [
    "systemInstruction",
    "Invalid 'systemInstruction'.",
  ]);
  assert.deepEqual(
    renamed(invalidRequest("Bad 'messages[3].content'.", "messages[3].content"))[0],
    "contents[2].parts[1].functionResponse",
  );
  // Only get_time is left in the chat form: its tools[0] is the client's second declaration.
  assert.deepEqual(renamed(invalidRequest("Bad 'tools[0].function.name'.", "tools[0].function.name")), [
    "tools[1].functionDeclarations[1].name",
    "Bad 'tools[1].functionDeclarations[1].name'.",
  ]);
  assert.deepEqual(
    renamed(invalidRequest("'response_format' is not supported.", "response_format"))[1],
    "'generationConfig.responseJsonSchema' is not supported.",
  );
  const other = new GatewayError(502, "'seed' upstream", { param: "seed" });
  assert.equal(inClientTerms(other, geminiClientTerms(parsed)), other, "only a client's 400 is renamed");
});

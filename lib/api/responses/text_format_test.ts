import assert from "node:assert/strict";
import { parseResponsesRequest } from "./request.ts";

Deno.test("responses text.format: a JSON schema becomes the chat response_format", () => {
  const { chat } = parseResponsesRequest({
    model: "m",
    input: "x",
    text: { format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true } },
  });
  assert.deepEqual(chat.response_format, {
    type: "json_schema",
    json_schema: { name: "out", schema: { type: "object" }, strict: true },
  });
});

import assert from "node:assert/strict";
import { loadOpenApiSchemas, OpenApiSchemas, readOpenApiSchemas } from "./openapi_schema.ts";

/** A small spec in the published one's dialect: a discriminated `anyOf`, `nullable`, `$ref`s, `allOf`. */
const SMALL = new OpenApiSchemas({
  components: {
    schemas: {
      Event: {
        anyOf: [{ $ref: "#/components/schemas/Delta" }, { $ref: "#/components/schemas/Done" }],
        discriminator: { propertyName: "type" },
      },
      Delta: {
        type: "object",
        properties: { type: { type: "string", enum: ["x.delta"] }, delta: { type: "string" } },
        required: ["type", "delta"],
      },
      Done: {
        allOf: [{
          type: "object",
          properties: { type: { const: "x.done" }, text: { type: "string", nullable: true } },
          required: ["type", "text"],
        }],
      },
    },
  },
});

Deno.test("openapi schema: a discriminated union validates against the branch its tag picks", () => {
  assert.deepEqual(SMALL.errors("Event", { type: "x.delta", delta: "a" }), []);
  assert.deepEqual(SMALL.errors("Event", { type: "x.done", text: "all" }), []);
  // The error names the one failing branch's field, not every branch.
  const wrong = SMALL.errors("Event", { type: "x.delta", delta: 3 });
  assert.equal(wrong.length, 1, wrong.join("\n"));
  assert.match(wrong[0], /^\/delta: must be string/);
  assert.ok(SMALL.errors("Event", { type: "x.other", delta: "a" }).some((e) => e.startsWith("/type:")));
  assert.ok(SMALL.errors("Event", { delta: "a" }).length > 0, "the tag is required");
  assert.ok(SMALL.errors("Event", "x.delta").length > 0, "a union of objects takes no string");
});

Deno.test("openapi schema: nullable allows null and nothing else", () => {
  assert.deepEqual(SMALL.errors("Done", { type: "x.done", text: null }), []);
  assert.match(SMALL.errors("Done", { type: "x.done", text: 1 }).join(), /\/text: must be string,null/);
  assert.throws(
    () => SMALL.assert("Done", { type: "x.done" }, "the done event"),
    /the done event.*Done[^]*'text'/,
  );
  assert.throws(() => SMALL.errors("Nope", {}), /no component schema 'Nope'/);
});

Deno.test("openapi schema: without the spec a local run skips, and CI fails", async () => {
  const nowhere = new URL("./no-such-spec.yaml", import.meta.url);
  assert.equal(await readOpenApiSchemas(nowhere, undefined), null);
  await assert.rejects(readOpenApiSchemas(nowhere, "true"), /CI needs the OpenAPI spec/);
});

const spec = await loadOpenApiSchemas();

Deno.test({
  name: "openapi schema: the published spec catches a Response and events that break it",
  ignore: spec === null,
  fn() {
    const schemas = spec!;
    const response = {
      id: "resp_1",
      object: "response",
      created_at: 1,
      status: "completed",
      error: null,
      incomplete_details: null,
      instructions: null,
      model: "m",
      output: [{
        id: "msg_1",
        type: "message",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: "Hi", annotations: [], logprobs: [] }],
      }],
      parallel_tool_calls: true,
      metadata: {},
      tool_choice: "auto",
      tools: [],
      temperature: 1,
      top_p: 1,
      usage: {
        input_tokens: 1,
        input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
        output_tokens: 1,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 2,
      },
    };
    assert.deepEqual(schemas.errors("Response", response), []);
    // Violations deep inside: a null where a string goes, an output item's missing field, an unknown status.
    const bad = structuredClone(response) as Record<string, unknown>;
    bad.user = null;
    (bad.output as Record<string, unknown>[])[0].content = undefined;
    delete (bad.usage as { output_tokens_details: Record<string, unknown> }).output_tokens_details
      .reasoning_tokens;
    bad.status = "done";
    const errors = schemas.errors("Response", bad).join("\n");
    for (const path of ["/user", "/output/0", "/usage/output_tokens_details", "/status"]) {
      assert.ok(errors.includes(`${path}: `), `${path} in\n${errors}`);
    }
    assert.throws(() => schemas.assert("Response", bad), /does not validate against Response/);

    const delta = {
      type: "response.output_text.delta",
      item_id: "msg_1",
      output_index: 0,
      content_index: 0,
      delta: "Hi",
      logprobs: [],
      sequence_number: 3,
    };
    assert.deepEqual(schemas.errors("ResponseStreamEvent", delta), []);
    const { logprobs: _, ...noLogprobs } = delta;
    assert.match(schemas.errors("ResponseStreamEvent", noLogprobs).join(), /'logprobs'/);
    assert.ok(schemas.errors("ResponseStreamEvent", { ...delta, type: "response.text.delta" }).length > 0);
  },
});

import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { moderationResultFrom, toUpstreamModerationBody } from "./moderations.ts";

const result = {
  flagged: false,
  categories: { violence: false },
  category_scores: { violence: 0.01 },
  category_applied_input_types: { violence: ["text"] },
};

Deno.test("moderations: the upstream body is the client's with the target's model", () => {
  assert.deepEqual(
    toUpstreamModerationBody({ model: "mod-alias", input: ["a", "b"], extra: 1 }, "omni-moderation-latest"),
    { model: "omni-moderation-latest", input: ["a", "b"], extra: 1 },
  );
});

Deno.test("moderations: a well-formed answer passes on as sent, its id kept", () => {
  const answer = moderationResultFrom("p", { id: "modr-1", model: "x", results: [result] });
  assert.deepEqual(answer, { id: "modr-1", results: [result] });
  assert.equal(moderationResultFrom("p", { results: [result] }).id, null);
});

Deno.test("moderations: a malformed answer is a 502 naming the provider", () => {
  const bad = [
    {},
    { results: [] },
    { results: "x" },
    { results: [{ ...result, flagged: "no" }] },
    { results: [{ ...result, categories: null }] },
    { results: [{ flagged: true, categories: {} }] },
  ];
  for (const body of bad) {
    assert.throws(() => moderationResultFrom("up", body), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.status, 502);
      assert.match(err.message, /"up"/);
      return true;
    });
  }
});

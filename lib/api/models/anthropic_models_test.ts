import assert from "node:assert/strict";
import type { ResolvedModel } from "../../config/types.ts";
import { anthropicModelInfo, anthropicModelPage } from "./anthropic_models.ts";

const models = ["a", "b", "c", "d", "e"].map((alias) => ({ alias, created: 1_700_000_000 }) as ResolvedModel);
const page = (query: string) => {
  const p = anthropicModelPage(models, new URLSearchParams(query));
  return { ids: p.data.map((m) => m.id).join(""), more: p.has_more, first: p.first_id, last: p.last_id };
};

Deno.test("anthropic models: a model is Anthropic's ModelInfo, created as RFC 3339", () => {
  assert.deepEqual(anthropicModelInfo(models[0]), {
    type: "model",
    id: "a",
    display_name: "a",
    created_at: "2023-11-14T22:13:20Z",
  });
});

Deno.test("anthropic models: limit, after_id and before_id page as Anthropic documents", () => {
  assert.deepEqual(page(""), { ids: "abcde", more: false, first: "a", last: "e" });
  assert.deepEqual(page("limit=2"), { ids: "ab", more: true, first: "a", last: "b" });
  assert.deepEqual(page("limit=2&after_id=b"), { ids: "cd", more: true, first: "c", last: "d" });
  assert.deepEqual(page("limit=2&after_id=c"), { ids: "de", more: false, first: "d", last: "e" });
  assert.deepEqual(page("after_id=e"), { ids: "", more: false, first: null, last: null });
  assert.deepEqual(page("limit=2&before_id=e"), { ids: "cd", more: true, first: "c", last: "d" });
  assert.deepEqual(page("limit=2&before_id=c"), { ids: "ab", more: false, first: "a", last: "b" });
  assert.deepEqual(page("before_id=a"), { ids: "", more: false, first: null, last: null });
  // A cursor not in the caller's list (unknown, or an alias it may not use) is an empty page.
  assert.deepEqual(page("after_id=zz"), { ids: "", more: false, first: null, last: null });
  assert.deepEqual(page("before_id=zz"), { ids: "", more: false, first: null, last: null });
});

Deno.test("anthropic models: a bad limit or both cursors is a 400 naming the parameter", () => {
  for (
    const query of ["limit=0", "limit=1001", "limit=abc", "limit=2.5", "limit=", "after_id=a&before_id=c"]
  ) {
    assert.throws(
      () => anthropicModelPage(models, new URLSearchParams(query)),
      (e: Error & { status?: number }) => {
        assert.equal(e.status, 400, query);
        return true;
      },
    );
  }
  assert.equal(anthropicModelPage(models, new URLSearchParams("limit=1000")).data.length, 5);
});

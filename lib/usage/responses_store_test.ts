/**
 * The `ResponsesStore` contract, run against each implementation: in memory, SQLite on the calling thread,
 * SQLite through the usage store's worker (the one the server uses), and PostgreSQL (a private schema of the
 * test database, dropped after). Retention's prune is in `responses_store_prune_test.ts`, the longest chain in
 * `responses_store_chain_test.ts`.
 */
import assert from "node:assert/strict";
import type { JsonObject } from "../openai/types.ts";
import { UsageQueryError } from "./query.ts";
import { type ItemsPage, MAX_CHAIN_BYTES, pageItems } from "./responses_store.ts";
import { DAY, message, NOW, response, RESPONSES_STORES } from "./responses_store_test_helpers.ts";

const ids = (items: readonly JsonObject[] | null | undefined) => items?.map((item) => item.id) ?? null;

for (const [name, open] of RESPONSES_STORES) {
  Deno.test(`${name} responses: a response is read and deleted only by the token that created it`, async () => {
    const { store, close } = await open();
    const stored = response("resp_1", { native: true, previous_response_id: null });
    await store.put(stored);
    assert.deepEqual(await store.get("resp_1", "alice"), stored);
    // Another token sees nothing, exactly as for an id that never existed.
    assert.equal(await store.get("resp_1", "bob"), null);
    assert.equal(await store.get("resp_missing", "alice"), null);
    assert.equal(await store.inputItems("resp_1", "bob", {}), null);
    assert.equal(await store.chain("resp_1", "bob"), null);
    assert.equal(await store.delete("resp_1", "bob"), false);
    assert.deepEqual(await store.get("resp_1", "alice"), stored, "bob's delete left it in place");
    // A put of the same id by another token does not take it over.
    await store.put(response("resp_1", { owner: "bob", alias: "hijack" }));
    assert.equal((await store.get("resp_1", "alice"))?.alias, "chat-default");
    assert.equal(await store.get("resp_1", "bob"), null);

    assert.equal(await store.delete("resp_1", "alice"), true);
    assert.equal(await store.get("resp_1", "alice"), null);
    assert.equal(await store.delete("resp_1", "alice"), false);
    assert.equal(await store.inputItems("resp_1", "alice", {}), null);
    assert.equal(await store.chain("resp_1", "alice"), null);
    await close();
  });

  Deno.test(`${name} responses: a got record is a copy; changing it changes nothing stored`, async () => {
    const { store, close } = await open();
    const stored = response("resp_1");
    await store.put(stored);
    stored.input_items.push(message("late", "user", "added after put"));
    const got = (await store.get("resp_1", "alice"))!;
    assert.deepEqual(ids(got.input_items), ["resp_1_in"]);
    got.input_items.length = 0;
    (got.response.output as JsonObject[]).length = 0;
    assert.deepEqual(await store.chain("resp_1", "alice").then((c) => ids(c?.items)), [
      "resp_1_in",
      "resp_1_out",
    ]);
    await close();
  });

  Deno.test(`${name} responses: input items are paged like OpenAI's list objects`, async () => {
    const { store, close } = await open();
    await store.put(response("resp_1", { inputs: ["i1", "i2", "i3", "i4", "i5"] }));
    const page = async (p: ItemsPage) => {
      const list = (await store.inputItems("resp_1", "alice", p))!;
      return { ids: ids(list.data), first: list.first_id, last: list.last_id, more: list.has_more };
    };
    const all = (await store.inputItems("resp_1", "alice", {}))!;
    assert.equal(all.object, "list");
    assert.deepEqual(all.data[0], message("i5", "user", "said i5"), "whole items, newest first by default");
    assert.deepEqual(await page({}), {
      ids: ["i5", "i4", "i3", "i2", "i1"],
      first: "i5",
      last: "i1",
      more: false,
    });
    // Walking forward with `after`, newest first, then oldest first.
    assert.deepEqual(await page({ limit: 2 }), { ids: ["i5", "i4"], first: "i5", last: "i4", more: true });
    assert.deepEqual(await page({ limit: 2, after: "i4" }), {
      ids: ["i3", "i2"],
      first: "i3",
      last: "i2",
      more: true,
    });
    assert.deepEqual(await page({ limit: 2, after: "i2" }), {
      ids: ["i1"],
      first: "i1",
      last: "i1",
      more: false,
    });
    assert.deepEqual(await page({ limit: 2, order: "asc" }), {
      ids: ["i1", "i2"],
      first: "i1",
      last: "i2",
      more: true,
    });
    assert.deepEqual(await page({ limit: 3, order: "asc", after: "i2" }), {
      ids: ["i3", "i4", "i5"],
      first: "i3",
      last: "i5",
      more: false,
    });
    // `before` gives the page just before the cursor; both together give what lies between them.
    assert.deepEqual(await page({ limit: 2, before: "i2" }), {
      ids: ["i4", "i3"],
      first: "i4",
      last: "i3",
      more: true,
    });
    assert.deepEqual(await page({ order: "asc", before: "i3" }), {
      ids: ["i1", "i2"],
      first: "i1",
      last: "i2",
      more: false,
    });
    assert.deepEqual(await page({ order: "asc", after: "i1", before: "i5", limit: 2 }), {
      ids: ["i2", "i3"],
      first: "i2",
      last: "i3",
      more: true,
    });
    assert.deepEqual(await page({ order: "asc", after: "i5" }), {
      ids: [],
      first: null,
      last: null,
      more: false,
    });
    // Bad pages are refused naming the parameter, whether or not the response exists.
    for (
      const [bad, param] of [
        [{ limit: 0 }, "limit"],
        [{ limit: 101 }, "limit"],
        [{ limit: 1.5 }, "limit"],
        [{
          order: "up",
        }, "order"],
        [{ after: "nope" }, "after"],
        [{ before: "nope" }, "before"],
      ] as const
    ) {
      await assert.rejects(
        () => store.inputItems("resp_1", "alice", bad as ItemsPage),
        (err: unknown) => err instanceof UsageQueryError && err.param === param,
        JSON.stringify(bad),
      );
    }
    await assert.rejects(() => store.inputItems("resp_missing", "alice", { limit: 0 }), UsageQueryError);
    assert.equal((await page({ limit: 100 })).ids?.length, 5);
    await close();
  });

  Deno.test(`${name} responses: input items without an id (or with a repeated one) are given one`, async () => {
    const { store, close } = await open();
    const record = response("resp_1");
    record.input_items = [
      { type: "message", role: "user", content: "hi" },
      { type: "function_call_output", call_id: "call_1", output: "42" },
      { id: "dup", type: "message", role: "user", content: "a" },
      { id: "dup", type: "message", role: "user", content: "b" },
    ];
    await store.put(record);
    const items = (await store.inputItems("resp_1", "alice", { order: "asc" }))!.data;
    assert.match(String(items[0].id), /^msg_[0-9a-f]{48}$/);
    assert.match(String(items[1].id), /^fco_[0-9a-f]{48}$/);
    assert.equal(items[2].id, "dup");
    assert.notEqual(items[3].id, "dup");
    assert.equal(new Set(items.map((item) => item.id)).size, 4);
    assert.deepEqual(items.map((item) => item.content ?? item.output), ["hi", "42", "a", "b"]);
    // the ids are stable: the cursor from one page works on the next call
    const next = await store.inputItems("resp_1", "alice", { order: "asc", after: String(items[1].id) });
    assert.deepEqual(ids(next!.data), ids(items.slice(2)));
    await close();
  });

  Deno.test(`${name} responses: a three-response chain is rebuilt in conversation order`, async () => {
    const { store, close } = await open();
    await store.put(response("resp_1", { inputs: ["sys", "u1"], outputs: ["rs1", "a1"] }));
    await store.put(response("resp_2", { previous_response_id: "resp_1", inputs: ["u2"], outputs: ["fc2"] }));
    await store.put(
      response("resp_3", { previous_response_id: "resp_2", inputs: ["fco3"], outputs: ["a3"] }),
    );
    assert.deepEqual(ids((await store.chain("resp_3", "alice"))?.items), [
      "sys",
      "u1",
      "rs1",
      "a1",
      "u2",
      "fc2",
      "fco3",
      "a3",
    ]);
    assert.deepEqual(ids((await store.chain("resp_2", "alice"))?.items), [
      "sys",
      "u1",
      "rs1",
      "a1",
      "u2",
      "fc2",
    ]);
    assert.deepEqual(ids((await store.chain("resp_1", "alice"))?.items), ["sys", "u1", "rs1", "a1"]);
    const chain = (await store.chain("resp_3", "alice"))!.items;
    assert.deepEqual(chain[3], message("a1", "assistant", "answered a1"), "whole items");
    // A deleted (or pruned) earlier response ends the chain there, as OpenAI's: the later ones stay chainable.
    await store.delete("resp_1", "alice");
    assert.deepEqual(ids((await store.chain("resp_3", "alice"))?.items), ["u2", "fc2", "fco3", "a3"]);
    await store.delete("resp_2", "alice");
    assert.deepEqual(ids((await store.chain("resp_3", "alice"))?.items), ["fco3", "a3"]);
    assert.deepEqual(ids((await store.get("resp_3", "alice"))?.input_items), ["fco3"]);
    await store.delete("resp_3", "alice");
    assert.equal(await store.chain("resp_3", "alice"), null, "the response itself is gone");
    await close();
  });

  Deno.test(`${name} responses: a chain holds nothing of another token's responses`, async () => {
    const { store, close } = await open();
    await store.put(response("resp_1"));
    await store.put(response("resp_2", { owner: "bob", previous_response_id: "resp_1" }));
    await store.put(response("resp_3", { previous_response_id: "resp_2" }));
    assert.deepEqual(
      ids((await store.chain("resp_3", "alice"))?.items),
      ["resp_3_in", "resp_3_out"],
      "resp_2 is bob's",
    );
    assert.equal(await store.chain("resp_3", "bob"), null, "resp_3 is alice's");
    assert.deepEqual(
      ids((await store.chain("resp_2", "bob"))?.items),
      ["resp_2_in", "resp_2_out"],
      "resp_1 is alice's",
    );
    assert.deepEqual(ids((await store.chain("resp_1", "alice"))?.items), ["resp_1_in", "resp_1_out"]);
    await close();
  });

  Deno.test(`${name} responses: a conversation over MAX_CHAIN_BYTES is refused, naming previous_response_id`, async () => {
    const { store, close } = await open();
    // Five turns of a fifth of the bound each: four fit, the fifth passes it (each turn's JSON adds a little).
    const text = "x".repeat(MAX_CHAIN_BYTES / 5);
    const turn = (n: number) =>
      response(`resp_${n}`, {
        previous_response_id: n === 1 ? null : `resp_${n - 1}`,
        input_items: [message(`resp_${n}_in`, "user", text)],
      });
    for (let n = 1; n <= 6; n++) await store.put(turn(n));
    assert.equal((await store.chain("resp_4", "alice"))?.items.length, 8);
    for (const id of ["resp_5", "resp_6"]) {
      await assert.rejects(
        store.chain(id, "alice"),
        (err) =>
          err instanceof UsageQueryError && err.param === "previous_response_id" && err.message.includes(id),
      );
    }
    await close();
  });

  Deno.test(`${name} responses: a native response keeps its upstream's own id`, async () => {
    const { store, close } = await open();
    await store.put(response("resp_1", { native: true, upstream_id: "resp_upstream_1" }));
    assert.equal((await store.get("resp_1", "alice"))?.upstream_id, "resp_upstream_1");
    const { upstream_id: _, ...without } = response("resp_2");
    await store.put(without);
    assert.equal((await store.get("resp_2", "alice"))?.upstream_id, null, "absent is stored as null");
    await close();
  });

  Deno.test(`${name} responses: an upstream holds a native chain only while it is whole`, async () => {
    const { store, close } = await open();
    const native = (id: string, previous: string | null, provider = "openai") =>
      response(id, { native: true, provider, upstream_id: `up_${id}`, previous_response_id: previous });
    await store.put(native("resp_1", null));
    await store.put(native("resp_2", "resp_1"));
    await store.put(response("resp_3", { previous_response_id: "resp_2" })); // translated
    await store.put(native("resp_4", "resp_3", "azure"));
    const upstream = async (id: string) => (await store.chain(id, "alice"))?.upstream;
    assert.deepEqual(await upstream("resp_2"), { provider: "openai", id: "up_resp_2" });
    assert.equal(await upstream("resp_3"), null, "a translated response is held by no upstream");
    // Sent the rebuilt conversation, azure's upstream holds it all under its own id.
    assert.deepEqual(await upstream("resp_4"), { provider: "azure", id: "up_resp_4" });
    // The upstream's chains still hold resp_1 once it is deleted here: they are no longer the conversation.
    assert.equal(await store.delete("resp_1", "alice"), true);
    assert.equal(await upstream("resp_2"), null);
    assert.equal(await upstream("resp_4"), null);
    assert.deepEqual(ids((await store.chain("resp_4", "alice"))?.items), [
      "resp_2_in",
      "resp_2_out",
      "resp_3_in",
      "resp_3_out",
      "resp_4_in",
      "resp_4_out",
    ]);
    await close();
  });

  Deno.test(`${name} responses: items are found by id, input or output, only by their token`, async () => {
    const { store, close } = await open();
    await store.put(response("resp_1", { inputs: ["u1"], outputs: ["a1", "fc1"] }));
    await store.put(response("resp_2", { owner: "bob", inputs: ["u2"], outputs: ["a2"] }));
    assert.deepEqual(await store.items(["a1", "u1", "fc1"], "alice"), [
      message("a1", "assistant", "answered a1"),
      message("u1", "user", "said u1"),
      message("fc1", "assistant", "answered fc1"),
    ]);
    // Bob's item and an item that never existed look the same to alice, and alice's to bob.
    assert.deepEqual(await store.items(["a2", "nope", "a1"], "alice"), [
      null,
      null,
      message("a1", "assistant", "answered a1"),
    ]);
    assert.deepEqual(await store.items(["a1", "a2"], "bob"), [
      null,
      message("a2", "assistant", "answered a2"),
    ]);
    assert.deepEqual(await store.items([], "alice"), []);
    // A got item is a copy.
    const [got] = await store.items(["a1"], "alice");
    got!.role = "user";
    assert.equal((await store.items(["a1"], "alice"))[0]?.role, "assistant");
    await close();
  });

  Deno.test(`${name} responses: an item held by several responses is the newest put's`, async () => {
    const { store, close } = await open();
    await store.put(response("resp_1", { inputs: ["shared"], outputs: ["a1"] }));
    await store.put(response("resp_2", { outputs: ["shared"] }));
    assert.equal((await store.items(["shared"], "alice"))[0]?.role, "assistant", "resp_2's output");
    await store.delete("resp_2", "alice");
    assert.equal((await store.items(["shared"], "alice"))[0]?.role, "user", "resp_1's input again");
    // A replaced response is indexed afresh: the items it no longer holds are gone.
    await store.put(response("resp_1", { inputs: ["u1"], outputs: ["a1"] }));
    assert.deepEqual(await store.items(["shared", "u1"], "alice"), [null, message("u1", "user", "said u1")]);
    // Input items given an id by put are found by that id.
    const record = response("resp_3");
    record.input_items = [{ type: "message", role: "user", content: "no id" }];
    await store.put(record);
    const [listed] = (await store.inputItems("resp_3", "alice", {}))!.data;
    assert.deepEqual(await store.items([String(listed.id)], "alice"), [listed]);
    await close();
  });

  Deno.test(`${name} responses: deleted and pruned responses' items are not found`, async () => {
    const { store, close } = await open();
    await store.put(response("resp_old", { created_at: NOW - 40 * DAY }));
    await store.put(response("resp_new", { created_at: NOW - DAY }));
    await store.put(response("resp_gone"));
    assert.equal(await store.delete("resp_gone", "alice"), true);
    assert.equal(await store.prune(new Date((NOW - 30 * DAY) * 1000).toISOString(), 100), 1);
    assert.deepEqual(
      (await store.items(["resp_old_in", "resp_old_out", "resp_gone_out", "resp_new_out"], "alice")).map((
        item,
      ) => item?.id ?? null),
      [null, null, null, "resp_new_out"],
    );
    await close();
  });
}

Deno.test("pageItems: pages of an empty list are empty, with null ids", () => {
  assert.deepEqual(pageItems([], {}), {
    object: "list",
    data: [],
    first_id: null,
    last_id: null,
    has_more: false,
  });
});

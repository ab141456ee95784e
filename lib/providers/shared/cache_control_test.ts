import assert from "node:assert/strict";
import {
  cacheControlDropped,
  cacheControlPaths,
  droppedOnce,
  markBlock,
  markLast,
  markOf,
  moveMarks,
  settleMarks,
} from "./cache_control.ts";

const EPHEMERAL = { type: "ephemeral" };
const marked = (control: Record<string, unknown>, path: string) =>
  markBlock({ text: path }, { cache_control: control }, path);

Deno.test("cache_control: up to four markers are all sent, with their ttl", () => {
  const blocks = [
    marked({ type: "ephemeral", ttl: "1h" }, "a"),
    { text: "unmarked" },
    marked(EPHEMERAL, "b"),
    marked({ type: "ephemeral", ttl: "5m" }, "c"),
    marked(EPHEMERAL, "d"),
  ];
  const kept = settleMarks(blocks);
  assert.deepEqual(kept.map((m) => [m.paths[0], m.ttl]), [["a", "1h"], ["b", undefined], ["c", "5m"], [
    "d",
    undefined,
  ]]);
  assert.deepEqual(cacheControlDropped(["a", "b", "c", "d"], blocks), []);
});

Deno.test("cache_control: past four, the first two and the last two are sent and the rest named", () => {
  const blocks = ["a", "b", "c", "d", "e", "f"].map((p) => marked(EPHEMERAL, p));
  assert.deepEqual(settleMarks(blocks).map((m) => m.paths[0]), ["a", "b", "e", "f"]);
  assert.deepEqual(blocks.map((b) => markOf(b)?.sent), [true, true, false, false, true, true]);
  assert.deepEqual(cacheControlDropped(["a", "b", "c", "d", "e", "f"], blocks), ["c", "d"]);
});

Deno.test("cache_control: a 1h ttl after a shorter one, and a ttl neither vendor takes, are left out and named", () => {
  const blocks = [
    marked({ type: "ephemeral", ttl: "1h" }, "a"),
    marked({ type: "ephemeral", ttl: "1h" }, "b"),
    marked(EPHEMERAL, "c"),
    marked({ type: "ephemeral", ttl: "1h" }, "d"),
  ];
  assert.deepEqual(settleMarks(blocks).map((m) => m.ttl), ["1h", "1h", undefined, undefined]);
  assert.deepEqual(cacheControlDropped(["a", "b", "c", "d"], blocks), ["d.ttl"]);

  const odd = [marked({ type: "ephemeral", ttl: "10m" }, "x"), marked({ type: "ephemeral", ttl: "1h" }, "y")];
  assert.deepEqual(settleMarks(odd).map((m) => m.ttl), [undefined, undefined]);
  assert.deepEqual(cacheControlDropped(["x", "y"], odd), ["x.ttl", "y.ttl"]);
});

Deno.test("cache_control: only an ephemeral marker is noted; others are named as not sent", () => {
  const block = markBlock({ text: "t" }, { cache_control: { type: "persistent" } }, "p");
  assert.equal(markOf(block), undefined);
  assert.equal(markOf(markBlock({ text: "t" }, { cache_control: "ephemeral" }, "q")), undefined);
  assert.deepEqual(cacheControlDropped(["p"], [block]), ["p"]);
});

Deno.test("cache_control: a message's marker goes on its last block; a part's marker, noted first, is the one kept", () => {
  const first = { text: "one" };
  const last = markBlock(
    { text: "two" },
    { cache_control: { type: "ephemeral", ttl: "1h" } },
    "messages[0].content[1]",
  );
  markLast([first, last], { role: "user", cache_control: EPHEMERAL }, "messages[0]");
  assert.equal(markOf(first), undefined);
  assert.deepEqual(markOf(last)?.control, { type: "ephemeral", ttl: "1h" });
  assert.deepEqual(markOf(last)?.paths, ["messages[0].content[1]", "messages[0].cache_control"]);
  assert.deepEqual(markLast([], { cache_control: EPHEMERAL }, "messages[1]"), []);
});

Deno.test("cache_control: a tool result takes its content's markers", () => {
  const inner = [marked(EPHEMERAL, "x"), marked(EPHEMERAL, "y")];
  const result = moveMarks(inner, { toolResult: {} });
  assert.equal(markOf(inner[0]), undefined);
  assert.deepEqual(markOf(result)?.paths, ["x", "y"]);
});

Deno.test("cache_control: every marker of a chat request, on a message or a part, by its client path (null is none)", () => {
  assert.deepEqual(
    cacheControlPaths({
      messages: [
        { role: "system", content: "s", cache_control: EPHEMERAL },
        {
          role: "user",
          content: [{ type: "text", text: "a" }, { type: "text", text: "b", cache_control: {} }],
        },
        { role: "assistant", content: "c" },
        {
          role: "user",
          content: [{ type: "text", text: "d", cache_control: EPHEMERAL }],
          cache_control: null,
        },
      ],
    }),
    [
      "messages[0].cache_control",
      "messages[1].content[1].cache_control",
      "messages[3].content[0].cache_control",
    ],
  );
});

Deno.test("cache_control: a marker on an assistant's tool call is named by its path", () => {
  assert.deepEqual(
    cacheControlPaths({
      messages: [
        { role: "user", content: "Read a.ts" },
        {
          role: "assistant",
          content: "",
          tool_calls: [
            { id: "c1", type: "function", function: { name: "read", arguments: "{}" } },
            {
              id: "c2",
              type: "function",
              function: { name: "read", arguments: "{}" },
              cache_control: EPHEMERAL,
            },
          ],
        },
      ],
    }),
    ["messages[1].tool_calls[1].cache_control"],
  );
});

Deno.test("cache_control: a tool definition's marker is named by its path, after the messages'", () => {
  assert.deepEqual(
    cacheControlPaths({
      messages: [{ role: "user", content: "Hi", cache_control: EPHEMERAL }],
      tools: [
        { type: "function", function: { name: "a" }, cache_control: EPHEMERAL },
        { type: "function", function: { name: "b" } },
        { type: "function", function: { name: "c" }, cache_control: null },
      ],
    }),
    ["messages[0].cache_control", "tools[0].cache_control"],
  );
});

Deno.test("cache_control: a verdict is kept for the request's messages, and computed again for other tools", () => {
  const messages = [{ role: "user", content: "Hi" }];
  const marked = [{ type: "function", function: { name: "a" }, cache_control: EPHEMERAL }];
  let computed = 0;
  const compute = (paths: string[]) => (computed++, paths);
  assert.deepEqual(droppedOnce({ messages }, "v", compute), []);
  assert.deepEqual(droppedOnce({ messages, tools: marked }, "v", compute), ["tools[0].cache_control"]);
  assert.deepEqual(droppedOnce({ messages, tools: marked }, "v", compute), ["tools[0].cache_control"]);
  assert.equal(computed, 1);
  assert.deepEqual(droppedOnce({ messages, tools: [] }, "v", compute), []);
});

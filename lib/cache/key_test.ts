/**
 * The cache key: canonical JSON, what is keyed and what is not, scopes, and the semantic split of a request.
 */
import assert from "node:assert/strict";
import type { ChatRequest } from "../openai/types.ts";
import { cacheKey, canonicalJson, type KeyScope, semanticParts } from "./key.ts";

const SCOPE: KeyScope = { scope: "tok:tok_1", alias: "chat", version: "v1" };

function chat(overrides: Partial<ChatRequest> = {}): ChatRequest {
  return {
    model: "chat",
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "What is 2+2?" },
    ],
    temperature: 0.5,
    ...overrides,
  };
}

const key = (overrides: Partial<ChatRequest> = {}, scope: KeyScope = SCOPE) =>
  cacheKey(scope, chat(overrides));

Deno.test("cache key: canonicalJson sorts keys at every level and drops undefined members", () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [{ z: 1, y: 2 }], c: undefined, b: null } }),
    '{"a":{"b":null,"d":[{"y":2,"z":1}]},"b":1}',
  );
  assert.equal(canonicalJson({ b: 1, a: 2 }), canonicalJson({ a: 2, b: 1 }));
  // inside an array, undefined is null, as JSON.stringify has it
  assert.equal(canonicalJson([1, undefined, "x"]), '[1,null,"x"]');
  assert.equal(canonicalJson(undefined), "null");
  assert.equal(canonicalJson('a"b'), '"a\\"b"');
  assert.equal(canonicalJson({ 'we"ird': true }), '{"we\\"ird":true}');
});

Deno.test("cache key: a hex SHA-256", () => {
  assert.match(key(), /^[0-9a-f]{64}$/);
  assert.equal(key(), key(), "deterministic");
});

Deno.test("cache key: reordered keys, at the top and inside messages, are one key", () => {
  const a: ChatRequest = JSON.parse(
    '{"model":"chat","temperature":0.5,"messages":[{"role":"system","content":"Be brief."},' +
      '{"role":"user","content":"What is 2+2?"}]}',
  );
  const b: ChatRequest = JSON.parse(
    '{"messages":[{"content":"Be brief.","role":"system"},{"content":"What is 2+2?","role":"user"}],' +
      '"temperature":0.5,"model":"chat"}',
  );
  assert.equal(cacheKey(SCOPE, a), cacheKey(SCOPE, b));
  assert.equal(cacheKey(SCOPE, a), key());
});

Deno.test("cache key: numbers as JSON reads them (0.50 is 0.5)", () => {
  const a: ChatRequest = JSON.parse('{"model":"chat","messages":[],"temperature":0.50,"top_p":1.0}');
  const b: ChatRequest = JSON.parse('{"model":"chat","messages":[],"temperature":0.5,"top_p":1}');
  assert.equal(cacheKey(SCOPE, a), cacheKey(SCOPE, b));
});

Deno.test("cache key: max_tokens and max_completion_tokens are one field", () => {
  assert.equal(key({ max_tokens: 100 }), key({ max_completion_tokens: 100 }));
  assert.notEqual(key({ max_tokens: 100 }), key({ max_completion_tokens: 101 }));
  assert.notEqual(key({ max_tokens: 100 }), key());
});

Deno.test("cache key: a content that is a single text part is its text", () => {
  const parts = chat({
    messages: [
      { role: "system", content: [{ type: "text", text: "Be brief." }] },
      { role: "user", content: [{ type: "text", text: "What is 2+2?" }] },
    ],
  });
  assert.equal(cacheKey(SCOPE, parts), key());
  // two parts, or a part with more than its text, are not a plain string
  const two = chat({
    messages: [{
      role: "user",
      content: [{ type: "text", text: "What is " }, { type: "text", text: "2+2?" }],
    }],
  });
  assert.notEqual(cacheKey(SCOPE, two), key({ messages: [{ role: "user", content: "What is 2+2?" }] }));
  const withCache = chat({
    messages: [{
      role: "user",
      content: [{ type: "text", text: "x", cache_control: { type: "ephemeral" } }],
    }],
  });
  assert.notEqual(cacheKey(SCOPE, withCache), key({ messages: [{ role: "user", content: "x" }] }));
});

Deno.test("cache key: everything that can change the answer changes the key", () => {
  const base = key();
  const changes: [string, Partial<ChatRequest>][] = [
    ["system prompt", {
      messages: [{ role: "system", content: "Be verbose." }, { role: "user", content: "What is 2+2?" }],
    }],
    ["user turn", {
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "2+3?" }],
    }],
    ["a turn more", {
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "What is 2+2?" },
        { role: "assistant", content: "4" },
        { role: "user", content: "What is 2+2?" },
      ],
    }],
    ["tools", {
      tools: [{ type: "function", function: { name: "add", parameters: { type: "object" } } }],
    }],
    ["tool_choice", { tool_choice: "required" }],
    ["response_format", { response_format: { type: "json_object" } }],
    ["temperature", { temperature: 0.7 }],
    ["no temperature", { temperature: undefined }],
    ["seed", { seed: 42 }],
    ["stop", { stop: ["\n"] }],
    ["n", { n: 2 }],
    ["max tokens", { max_tokens: 10 }],
    ["max completion tokens", { max_completion_tokens: 11 }],
    ["reasoning", { reasoning_effort: "high" }],
    ["top_p", { top_p: 0.9 }],
  ];
  const seen = new Set([base]);
  for (const [what, change] of changes) {
    const k = key(change);
    assert.notEqual(k, base, what);
    assert.ok(!seen.has(k), `${what} collides with another change`);
    seen.add(k);
  }
  const tools = [{ type: "function", function: { name: "add", parameters: { type: "object" } } }];
  assert.notEqual(
    key({ tools }),
    key({ tools: [{ type: "function", function: { name: "sub", parameters: { type: "object" } } }] }),
  );
  assert.notEqual(key({ stop: ["a"] }), key({ stop: ["b"] }));
  assert.notEqual(key({ seed: 1 }), key({ seed: 2 }));
  assert.notEqual(key({ n: 2 }), key({ n: 3 }));
});

Deno.test("cache key: what does not change the answer does not change the key", () => {
  const base = key();
  const same: [string, Partial<ChatRequest>][] = [
    ["stream", { stream: true }],
    ["stream_options", { stream: true, stream_options: { include_usage: true } }],
    ["user", { user: "alice" }],
    ["metadata", { metadata: { run: "ci-42" } }],
    ["store", { store: true }],
    ["safety_identifier", { safety_identifier: "hash-of-user" }],
    ["prompt_cache_key", { prompt_cache_key: "pck" }],
    ["model", { model: "other-spelling" }],
  ];
  for (const [what, change] of same) assert.equal(key(change), base, what);
  assert.equal(
    key({ stream: true, stream_options: { include_usage: true }, user: "bob", metadata: { a: "b" } }),
    base,
    "all of them at once",
  );
});

Deno.test("cache key: the scope, the alias and the version each change the key", () => {
  const keys = [
    key({}, SCOPE),
    key({}, { ...SCOPE, scope: "tok:tok_2" }),
    key({}, { ...SCOPE, scope: "env:production" }),
    key({}, { ...SCOPE, scope: "shared" }),
    key({}, { ...SCOPE, alias: "chat-2" }),
    key({}, { ...SCOPE, version: "v2" }),
  ];
  assert.equal(new Set(keys).size, keys.length);
});

Deno.test("cache key: an alias with a newline cannot pass for another scope", () => {
  // Were the header joined with "\n", scope "tok:a" + alias "x\ny" and scope "tok:a\nx" + alias "y" would read
  // "1\ntok:a\nx\ny\nv" both: the JSON header keeps them apart.
  const a: KeyScope = { scope: "tok:a", alias: "x\ny", version: "v" };
  const b: KeyScope = { scope: "tok:a\nx", alias: "y", version: "v" };
  assert.equal(["1", a.scope, a.alias, a.version].join("\n"), ["1", b.scope, b.alias, b.version].join("\n"));
  assert.notEqual(cacheKey(a, chat()), cacheKey(b, chat()));
  // and a version that swallows the start of the request cannot either
  const c: KeyScope = { scope: "shared", alias: "x", version: "v" };
  const d: KeyScope = { scope: "shared", alias: "x", version: 'v"]{' };
  assert.notEqual(cacheKey(c, chat()), cacheKey(d, chat()));
  // the same with an alias that reads like the end of a scope
  const e: KeyScope = { scope: "shared", alias: 'a","b', version: "v" };
  const f: KeyScope = { scope: 'shared","a', alias: "b", version: "v" };
  assert.notEqual(cacheKey(e, chat()), cacheKey(f, chat()));
});

Deno.test("semantic parts: undefined without a user turn whose content is text", () => {
  assert.equal(
    semanticParts(SCOPE, chat({ messages: [{ role: "system", content: "Be brief." }] })),
    undefined,
  );
  assert.equal(semanticParts(SCOPE, chat({ messages: [] })), undefined);
  const image = chat({
    messages: [{
      role: "user",
      content: [{ type: "text", text: "what is this" }, {
        type: "image_url",
        image_url: { url: "data:," },
      }],
    }],
  });
  assert.equal(semanticParts(SCOPE, image), undefined);
  // an earlier text turn does not count: the last user turn is the one compared
  const lastIsImage = chat({
    messages: [
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
      { role: "user", content: [{ type: "image_url", image_url: { url: "data:," } }] },
    ],
  });
  assert.equal(semanticParts(SCOPE, lastIsImage), undefined);
});

Deno.test("semantic parts: the text is the last user turn, a single text part included", () => {
  const parts = semanticParts(
    SCOPE,
    chat({
      messages: [
        { role: "user", content: "first" },
        { role: "assistant", content: "ok" },
        { role: "user", content: "second" },
        { role: "assistant", content: "trailing" },
      ],
    }),
  );
  assert.equal(parts?.text, "second");
  const single = semanticParts(
    SCOPE,
    chat({ messages: [{ role: "user", content: [{ type: "text", text: "as a part" }] }] }),
  );
  assert.equal(single?.text, "as a part");
});

Deno.test("semantic parts: the context is the same when only the last user turn differs", () => {
  const turns = (last: string): ChatRequest =>
    chat({
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "earlier" },
        { role: "assistant", content: "reply" },
        { role: "user", content: last },
      ],
    });
  const a = semanticParts(SCOPE, turns("How do I reset my password?"));
  const b = semanticParts(SCOPE, turns("how can I reset my password"));
  assert.ok(a && b);
  assert.equal(a.context, b.context);
  assert.notEqual(a.text, b.text);
  assert.match(a.context, /^[0-9a-f]{64}$/);
  // the context is not the exact key of either request
  assert.notEqual(a.context, cacheKey(SCOPE, turns("How do I reset my password?")));
  // stream and user are left out here too
  assert.equal(semanticParts(SCOPE, { ...turns("x"), stream: true, user: "u" })?.context, a.context);
});

Deno.test("semantic parts: the context differs with an earlier turn, the system prompt, parameters or scope", () => {
  const req = (system: string, earlier: string, extra: Partial<ChatRequest> = {}): ChatRequest =>
    chat({
      messages: [
        { role: "system", content: system },
        { role: "user", content: earlier },
        { role: "assistant", content: "reply" },
        { role: "user", content: "the question" },
      ],
      ...extra,
    });
  const base = semanticParts(SCOPE, req("S", "E"))?.context;
  assert.ok(base);
  assert.notEqual(semanticParts(SCOPE, req("S", "E2"))?.context, base, "an earlier turn");
  assert.notEqual(semanticParts(SCOPE, req("S2", "E"))?.context, base, "the system prompt");
  assert.notEqual(semanticParts(SCOPE, req("S", "E", { temperature: 0.9 }))?.context, base, "a parameter");
  assert.notEqual(semanticParts({ ...SCOPE, scope: "shared" }, req("S", "E"))?.context, base, "the scope");
  assert.notEqual(semanticParts({ ...SCOPE, version: "v2" }, req("S", "E"))?.context, base, "the version");
});

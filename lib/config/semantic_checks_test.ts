import assert from "node:assert/strict";
import { type ConfigInput, configSchema } from "./schema.ts";
import { checkConfig } from "./semantic_checks.ts";

function issues(input: ConfigInput, tables?: Parameters<typeof checkConfig>[1]) {
  return checkConfig(configSchema.parse(input), tables).map((i) => ({
    path: i.path.join("."),
    message: i.message,
  }));
}

Deno.test("checkConfig: a valid config has no issues", () => {
  assert.deepEqual(
    issues({
      providers: { local: { type: "builtin" } },
      models: { chat: { type: "chat", targets: [{ provider: "local", model: "echo" }] } },
      tokens: [{ name: "t", token: "0123456789abcdef", models: ["*"], expires_at: "2030-01-01" }],
    }),
    [],
  );
});

Deno.test("checkConfig: an alias type the provider type cannot serve", () => {
  const found = issues(
    {
      providers: { up: { type: "openai", base_url: "http://h/v1" } },
      models: { emb: { type: "embedding", targets: [{ provider: "up", model: "e" }] } },
    },
    {
      serves: { builtin: ["chat", "embedding"], openai: ["chat"] },
      builtinModels: { chat: [], embedding: [] },
    },
  );
  assert.deepEqual(found, [{
    path: "models.emb.targets.0.provider",
    message: 'provider "up" (type openai) cannot serve embedding models',
  }]);
});

Deno.test("checkConfig: base_url that is an endpoint, or carries credentials", () => {
  const found = issues({
    providers: {
      a: { type: "openai", base_url: "https://api.openai.com/v1/chat/completions" },
      b: { type: "openai", base_url: "https://user:pw@h/v1" },
    },
    models: {},
  });
  assert.deepEqual(found.map((i) => i.path), ["providers.a.base_url", "providers.b.base_url"]);
  assert.match(found[0].message, /API root/);
  assert.ok(!found[1].message.includes("pw"));
});

Deno.test("checkConfig: header values with line breaks", () => {
  const found = issues({
    providers: { a: { type: "openai", base_url: "https://h/v1", headers: { "X-Org": "a\r\nInjected: 1" } } },
    models: {},
  });
  assert.deepEqual(found.map((i) => i.path), ["providers.a.headers.X-Org"]);
});

Deno.test("checkConfig: duplicate sha256 compared case-insensitively", () => {
  const found = issues({
    providers: {},
    models: {},
    tokens: [
      { name: "a", sha256: "ab".repeat(32), models: ["*"] },
      { name: "b", sha256: "AB".repeat(32), models: ["*"] },
    ],
  });
  const dup = found.find((i) => i.path === "tokens.1.sha256");
  assert.match(dup?.message ?? "", /same token as tokens\.0 \("a"\)/);
  assert.ok(!dup?.message.toLowerCase().includes("abab"));
});

import assert from "node:assert/strict";
import { formatIssues, loadConfigFile, parseConfigText } from "./load.ts";

function issuesOf(text: string) {
  const result = parseConfigText(text, { source: "test.yaml", env: {} });
  return result.ok ? [] : result.issues.map((i) => `${i.line} ${i.path}: ${i.message}`);
}

const BASE = `providers:
  local: { type: builtin }
models:
  chat-a:
    type: chat
    targets: [ { provider: local, model: echo } ]
`;

Deno.test("policy checks: a content rule whose pattern does not compile is reported at the pattern", () => {
  const issues = issuesOf(
    BASE + `    content_rules:
      - { name: bad, pattern: "([a-z", action: deny }
`,
  );
  assert.equal(issues.length, 1);
  assert.match(issues[0], /^8 models\.chat-a\.content_rules\.0\.pattern: not a valid pattern/);
});

Deno.test("policy checks: a budget needs exactly one unit, and a cost budget needs prices", () => {
  const both = issuesOf(
    BASE + `tokens:
  - { name: t, token: "0123456789abcdefXYZ", models: ["*"], budget: { tokens: 10, cost: 1, period: day } }
`,
  );
  assert.deepEqual(both, ["8 tokens.0.budget: give exactly one of tokens or cost"]);
  const unpriced = issuesOf(
    BASE + `tokens:
  - { name: t, token: "0123456789abcdefXYZ", models: ["*"], budget: { cost: 5, period: month } }
`,
  );
  assert.equal(unpriced.length, 1);
  assert.match(unpriced[0], /tokens\.0\.budget\.cost: a cost budget needs a price .*"chat-a"/);
  const priced = issuesOf(
    BASE.replace("model: echo }", "model: echo, price: { input: 0.15, output: 0.6 } }") +
      `tokens:
  - { name: t, token: "0123456789abcdefXYZ", models: ["*"], budget: { cost: 5, period: month } }
`,
  );
  assert.deepEqual(priced, []);
});

Deno.test("policy config: limits, budgets, endpoints and content rules resolve", () => {
  const result = parseConfigText(
    BASE + `    limits: { rpm: 100 }
    content_rules:
      - { name: ssn, pattern: "\\\\b\\\\d{3}-\\\\d{2}-\\\\d{4}\\\\b", action: redact }
tokens:
  - name: t
    token: "0123456789abcdefXYZ"
    models: ["*"]
    limits: { rpm: 10, tpm: 1000, concurrent: 2 }
    budget: { tokens: 5000, period: day }
    endpoints: [chat]
    max_tokens: 256
`,
    { source: "test.yaml", env: {} },
  );
  assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
  const model = result.config.models.get("chat-a")!;
  assert.deepEqual(model.limits, { rpm: 100 });
  assert.equal(model.contentRules[0].regex.flags, "gi");
  assert.equal("my 123-45-6789 ok".replace(model.contentRules[0].regex, "[X]"), "my [X] ok");
  const token = [...result.config.tokens.values()][0];
  assert.deepEqual(token.limits, { rpm: 10, tpm: 1000, concurrent: 2 });
  assert.deepEqual(token.budget, { tokens: 5000, period: "day" });
  assert.deepEqual([...token.endpoints!], ["chat"]);
  assert.equal(token.maxTokens, 256);
  assert.equal(result.config.usage.sqlite, "data/usage.sqlite");
});

Deno.test("policy config: budget.stop_streams is a boolean, off unless given", () => {
  const withStop = (value: string) =>
    BASE + `tokens:
  - { name: t, token: "0123456789abcdefXYZ", models: ["*"], budget: { tokens: 10, period: day${value} } }
`;
  const on = parseConfigText(withStop(", stop_streams: true"), { source: "test.yaml", env: {} });
  assert.ok(on.ok, JSON.stringify(!on.ok && on.issues));
  assert.equal([...on.config.tokens.values()][0].budget?.stop_streams, true);
  const off = parseConfigText(withStop(""), { source: "test.yaml", env: {} });
  assert.ok(off.ok);
  assert.notEqual([...off.config.tokens.values()][0].budget?.stop_streams, true);
  const bad = issuesOf(withStop(', stop_streams: "sometimes"'));
  assert.equal(bad.length, 1);
  assert.match(bad[0], /^8 tokens\.0\.budget\.stop_streams: /);
  const misspelt = issuesOf(withStop(", stop_stream: true"));
  assert.equal(misspelt.length, 1);
  assert.match(misspelt[0], /tokens\.0\.budget/);
});

Deno.test("policy checks: with pricing.catalog, money is held to the operator's catalog, which then prices", async () => {
  const dir = await Deno.makeTempDir();
  const catalog = `${dir}/prices.yaml`;
  await Deno.writeTextFile(
    catalog,
    `date: 2026-12-01
currency: USD
unit: per_million_tokens
models:
  - { provider: openai, model: my-inhouse-model, source: "https://example.test/contract", checked: 2026-12-01, input: 1, output: 2 }
`,
  );
  const config = (model: string, price = "") =>
    `pricing: { catalog: "${catalog}" }
providers:
  up: { type: openai, base_url: "http://127.0.0.1:9/v1" }
models:
  chat-a: { type: chat, targets: [{ provider: up, model: ${model}${price} }] }
tokens:
  - { name: t, token: "0123456789abcdefXYZ", models: ["*"], budget: { cost: 5, period: day } }
`;
  const load = async (text: string) => {
    await Deno.writeTextFile(`${dir}/gateway.yaml`, text);
    return await loadConfigFile(`${dir}/gateway.yaml`, {});
  };
  // Only the operator's catalog prices this model: valid, and charged at the operator's price.
  for (const price of ["", ", price: catalog"]) {
    const own = await load(config("my-inhouse-model", price));
    if (!own.ok) assert.fail(formatIssues("gateway.yaml", own.issues));
    assert.deepEqual(own.config.models.get("chat-a")!.targets[0].price, { input: 1, output: 2 });
  }
  // Only the built-in catalog prices this one: the operator's has no price, so the budget could never be spent.
  const builtinOnly = await load(config("gpt-4o-mini"));
  assert.equal(builtinOnly.ok, false);
  if (builtinOnly.ok) return;
  assert.deepEqual(builtinOnly.issues.map((i) => `${i.line} ${i.path}`), ["7 tokens.0.budget.cost"]);
  assert.match(
    builtinOnly.issues[0].message,
    new RegExp(`price catalog ${catalog} of 2026-12-01 .*"chat-a"`),
  );
  const priceCatalog = await load(config("gpt-4o-mini", ", price: catalog").replace(/tokens:\n.*\n/, ""));
  assert.equal(priceCatalog.ok, false);
  if (!priceCatalog.ok) {
    assert.match(priceCatalog.issues[0].message, /of 2026-12-01 has no price for openai model "gpt-4o-mini"/);
  }
  await Deno.remove(dir, { recursive: true });
});

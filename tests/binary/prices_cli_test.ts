/**
 * `gateway prices` as operators run it, a real process: the catalog's date and every entry, one model's
 * rates and source, and an alias's targets with the price each is charged at.
 */
import assert from "node:assert/strict";
import { run, tempConfig as tempFile } from "./cli_helpers.ts";

Deno.test("cli: prices prints the catalog's date and every entry", async () => {
  const { code, stdout, stderr } = await run(["prices"]);
  assert.equal(code, 0, stderr);
  const [first] = stdout.split("\n");
  assert.match(first, /^price catalog of \d{4}-\d{2}-\d{2} \((\d+) entries, USD per million tokens\)$/);
  const entries = Number(/\((\d+) entries/.exec(first)![1]);
  // The heading line, the column header, then one line per entry.
  assert.equal(stdout.trimEnd().split("\n").length, entries + 2);
  for (const provider of ["openai", "azure", "anthropic", "gemini", "bedrock"]) {
    assert.match(stdout, new RegExp(`^${provider} `, "m"));
  }
});

Deno.test("cli: prices --model prints that model's rates and source; an unknown model exits 1", async () => {
  const { code, stdout } = await run(["prices", "--model", "gpt-4o-mini"]);
  assert.equal(code, 0);
  assert.match(stdout, /^price catalog of \d{4}-\d{2}-\d{2}/);
  assert.match(stdout, /^openai\s+gpt-4o-mini\*\s+0\.15\s+0\.6\s+0\.075\s/m);
  assert.match(stdout, /^azure\s+gpt-4o-mini\*\s+0\.15\s/m);
  assert.match(stdout, /openai gpt-4o-mini\*: https:\/\/\S+ \(checked \d{4}-\d{2}-\d{2}\)/);
  const unknown = await run(["prices", "--model", "no-such-model"]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /No price for model no-such-model/);
});

Deno.test("cli: prices --config --model ALIAS shows each target's price: its own, the catalog's, or none", async () => {
  const config = await tempFile(`providers:
  up: { type: openai, base_url: "http://127.0.0.1:1/v1" }
  local: { type: builtin }
models:
  chat-a:
    type: chat
    targets:
      - { provider: up, model: gpt-4o-mini-2024-07-18 }
      - { provider: up, model: my-finetune, price: { input: 1.5, output: 6 } }
      - { provider: local, model: echo }
`);
  const { code, stdout, stderr } = await run(["prices", "--config", config, "--model", "chat-a"]);
  assert.equal(code, 0, stderr);
  assert.match(stdout, /alias chat-a: 3 targets/);
  assert.match(stdout, /^up\s+openai\s+gpt-4o-mini-2024-07-18\s+catalog gpt-4o-mini\*\s+0\.15\s+0\.6/m);
  assert.match(stdout, /^up\s+openai\s+my-finetune\s+own price\s+1\.5\s+6/m);
  assert.match(stdout, /^local\s+builtin\s+echo\s+no price/m);
  await Deno.remove(config);
});

Deno.test("cli: check refuses a config whose pricing.catalog is malformed, naming the catalog's line", async () => {
  const catalog = await tempFile(`date: 2026-11-29
currency: USD
unit: per_million_tokens
models:
  - provider: openai
    model: my-model
    source: https://example.test/prices
    checked: 2026-11-29
    input: -1
    output: 2
`);
  const config = await tempFile(`pricing: { catalog: "${catalog}" }
providers: { up: { type: openai, base_url: "http://127.0.0.1:1/v1" } }
models: { chat: { type: chat, targets: [{ provider: up, model: my-model }] } }
`);
  const bad = await run(["check", "--config", config]);
  assert.notEqual(bad.code, 0);
  assert.match(
    bad.stdout + bad.stderr,
    new RegExp(`pricing\\.catalog: ${catalog.replaceAll(".", "\\.")}:9: models\\.0\\.input`),
  );
  // Fixed, the same config is valid, and its target is priced from the operator's catalog.
  await Deno.writeTextFile(catalog, (await Deno.readTextFile(catalog)).replace("input: -1", "input: 1"));
  const good = await run(["check", "--config", config]);
  assert.equal(good.code, 0, good.stdout + good.stderr);
  const prices = await run(["prices", "--config", config, "--model", "chat"]);
  assert.match(prices.stdout, /catalog my-model/);
});

Deno.test("cli: prices reads the config named by $GATEWAY_CONFIG, as check and serve do: its catalog and aliases", async () => {
  const catalog = await tempFile(`date: 2026-12-01
currency: USD
unit: per_million_tokens
models:
  - { provider: openai, model: gpt-4o-mini, source: "https://example.test/contract", checked: 2026-12-01, input: 9, output: 99 }
`);
  const config = await tempFile(`pricing: { catalog: "${catalog}" }
providers: { oa: { type: openai, base_url: "http://127.0.0.1:1/v1" } }
models: { chat-a: { type: chat, targets: [{ provider: oa, model: gpt-4o-mini }] } }
`);
  const env = { GATEWAY_CONFIG: config };
  const all = await run(["prices"], env);
  assert.equal(all.code, 0, all.stderr);
  assert.match(all.stdout, /^price catalog of 2026-12-01 \(1 entries, USD per million tokens\)$/m);
  const alias = await run(["prices", "--model", "chat-a"], env);
  assert.equal(alias.code, 0, alias.stderr);
  assert.match(alias.stdout, /alias chat-a: 1 targets/);
  assert.match(alias.stdout, /^oa\s+openai\s+gpt-4o-mini\s+catalog gpt-4o-mini\s+9\s+99/m);
  await Deno.remove(config);
  await Deno.remove(catalog);
});

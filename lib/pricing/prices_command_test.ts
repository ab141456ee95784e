/**
 * The `check` step for an operator's catalog (`pricing.catalog`) and `prices` reading it, in-process with a
 * fake reader: a malformed catalog fails with `file:line: path: message`, a good one is used.
 */
import assert from "node:assert/strict";
import type { ResolvedConfig } from "../config/types.ts";
import { DEFAULT_CONFIG_TEXT, EMBEDDED_CONFIG_SOURCE } from "../config/default_config.ts";
import { checkConfiguredCatalog, configuredCatalogPath, runPricesCommand } from "./prices_command.ts";

function capture() {
  const out = { stdout: "", stderr: "" };
  return {
    out,
    runtime: {
      writeStdout: (text: string) => void (out.stdout += text),
      writeStderr: (text: string) => void (out.stderr += text),
    },
  };
}

/** A resolved config as it will look once `pricing:` is part of the schema; only the key matters here. */
const withCatalog = (catalog: unknown) => ({ pricing: { catalog } }) as unknown as ResolvedConfig;

const reader = (files: Record<string, string>) => (path: string) =>
  path in files
    ? Promise.resolve(files[path])
    : Promise.reject(Object.assign(new Error("no"), { code: "ENOENT" }));

Deno.test("prices command: check refuses a malformed catalog, naming file, line and path", async () => {
  const { out, runtime } = capture();
  const text = `date: 2026-11-29
currency: USD
unit: per_million_tokens
models:
  - provider: openai
    model: gpt-x
    source: https://example.com/p
    checked: 2026-11-01
    input: -2
    output: 8
`;
  const ok = await checkConfiguredCatalog(
    runtime,
    withCatalog("prices.yaml"),
    reader({ "prices.yaml": text }),
  );
  assert.equal(ok, false);
  assert.match(
    out.stderr,
    /^Invalid price catalog prices\.yaml:\nprices\.yaml:9: models\.0\.input: must be at least 0$/m,
  );
  assert.equal(out.stdout, "");
});

Deno.test("prices command: check accepts a valid catalog, and a config without one", async () => {
  const { out, runtime } = capture();
  const text = `date: 2026-11-29
currency: USD
unit: per_million_tokens
models:
  - { provider: openai, model: "gpt-x*", source: "https://example.com/p", checked: 2026-11-01, input: 2, output: 8 }
`;
  assert.ok(await checkConfiguredCatalog(runtime, withCatalog("p.yaml"), reader({ "p.yaml": text })));
  assert.match(out.stdout, /Price catalog p\.yaml is valid: 1 entries of 2026-11-29/);
  assert.ok(await checkConfiguredCatalog(runtime, {} as ResolvedConfig, reader({})));
  assert.ok(!(await checkConfiguredCatalog(runtime, withCatalog("gone.yaml"), reader({}))));
  assert.match(out.stderr, /gone\.yaml: \(document\): cannot read price catalog \(file not found\)/);
});

Deno.test("prices command: the catalog path is read from pricing.catalog, whatever else is there", () => {
  assert.equal(configuredCatalogPath(withCatalog("a.yaml")), "a.yaml");
  assert.equal(configuredCatalogPath(withCatalog("")), undefined);
  assert.equal(configuredCatalogPath(withCatalog(3)), undefined);
  assert.equal(configuredCatalogPath({ pricing: null } as unknown as ResolvedConfig), undefined);
  assert.equal(configuredCatalogPath({} as ResolvedConfig), undefined);
});

Deno.test("prices command: a config given as text (the binary's compiled-in default) has its aliases priced", async () => {
  const { out, runtime } = capture();
  const code = await runPricesCommand(runtime, {
    model: "chat-default",
    configPath: EMBEDDED_CONFIG_SOURCE,
    configText: DEFAULT_CONFIG_TEXT,
    env: {},
  });
  assert.equal(code, 0, out.stderr);
  assert.match(out.stdout, /^alias chat-default: 1 targets$/m);
  assert.match(out.stdout, /^local\s+builtin\s+echo\s+no price\s/m);
});

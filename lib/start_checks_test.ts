import assert from "node:assert/strict";
import { formatIssues, parseConfigText } from "./config/load.ts";
import type { ResolvedConfig } from "./config/types.ts";
import { startIssues } from "./start_checks.ts";

function config(text: string): ResolvedConfig {
  const loaded = parseConfigText(text, { source: "gateway.yaml", env: {} });
  assert.ok(loaded.ok, JSON.stringify(!loaded.ok && loaded.issues));
  return loaded.config;
}

const SERVABLE = `providers: { local: { type: builtin } }
models: { chat: { type: chat, targets: [ { provider: local, model: echo } ] } }
`;

Deno.test("start checks: a usage file's issue is at its key's line, as the loader's issues are; a key left out points at its section", async () => {
  // They had no line (`gateway.yaml: usage.spill: …`), where every other issue of the file has one.
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/afile`, "");
    const loaded = config(
      `${SERVABLE}usage:
  sqlite: "${dir}/u.sqlite"
  jsonl: "${dir}/s.jsonl"

  spill: "${dir}/s.jsonl"
`,
    );
    const issues = await startIssues(loaded, {});
    assert.deepEqual(issues, [{
      path: "usage.spill",
      line: 7,
      message:
        `usage.spill (${dir}/s.jsonl) and usage.jsonl (${dir}/s.jsonl) are one file: each usage file ` +
        "must be a file of its own",
    }]);
    assert.match(formatIssues("gateway.yaml", issues), /^gateway\.yaml:7: usage\.spill: /);
    // The spill file at its default place under a file: no `spill:` in the file, so the line of `usage:`.
    const defaulted = config(`${SERVABLE}\nusage: { sqlite: none, jsonl: "${dir}/afile/u.jsonl" }\n`);
    assert.deepEqual((await startIssues(defaulted, {})).map(({ path, line }) => ({ path, line })), [
      { path: "usage.jsonl", line: 4 },
    ]);
    // An environment variable's issue is at the section it belongs to, when the file has one.
    const telemetry = config(`${SERVABLE}telemetry:\n  service_name: gw\n`);
    assert.deepEqual(
      (await startIssues(telemetry, { OTEL_EXPORTER_OTLP_ENDPOINT: "ftp://collector" }, ["telemetry"]))
        .map(({ path, line }) => ({ path, line })),
      [{ path: "telemetry", line: 3 }],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * The command line in-process, with a runtime that records what it prints and never serves: words a command
 * does not take are refused before any config is read. `check my.yaml` used to check the default config (here
 * `$GATEWAY_CONFIG`'s) and say it was valid, and `serve my.yaml` to serve it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { runCli } from "./cli.ts";
import { denoRuntime } from "./runtime/deno.ts";
import type { Runtime } from "./runtime/types.ts";

/** A config `check` accepts, so a command that reads it instead of refusing the stray word says "valid". */
const VALID = `providers: { local: { type: builtin } }
models: { chat-a: { type: chat, targets: [ { provider: local, model: echo } ] } }
usage: { sqlite: none }
`;

async function cli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(file, VALID);
  let stdout = "";
  let stderr = "";
  const runtime: Runtime = {
    ...denoRuntime,
    env: () => ({ GATEWAY_CONFIG: file }),
    serve: () => Promise.reject(new Error("the test's runtime never serves")),
    onShutdownSignal: () => {},
    onReloadSignal: () => {},
    writeStdout: (text) => void (stdout += text),
    writeStderr: (text) => void (stderr += text),
  };
  try {
    return { code: await runCli(runtime, argv), stdout, stderr };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("cli: a config file given without --config is refused, exit 2, with the fix and the usage", async () => {
  for (
    const argv of [
      ["check", "my.yaml"],
      ["serve", "./gateway.yaml"],
      ["prices", "conf/gw.yml"],
      ["check", "--config", "a.yaml", "my.yaml"],
    ]
  ) {
    const word = argv[argv.length - 1];
    const { code, stdout, stderr } = await cli(argv);
    assert.equal(code, 2, argv.join(" "));
    assert.equal(stdout, "", argv.join(" "));
    assert.ok(
      stderr.startsWith(`Unexpected argument '${word}' (did you mean --config ${word}?)\nUsage: gateway`),
      `${argv.join(" ")}: ${stderr}`,
    );
  }
});

Deno.test("cli: every command refuses a word it does not take, naming it; no token is printed", async () => {
  for (
    const [argv, word] of [[["version", "extra"], "extra"], [["token", "new", "now"], "now"], [[
      "check",
      "all",
    ], "all"]]
  ) {
    const { code, stdout, stderr } = await cli(argv as string[]);
    assert.equal(code, 2, String(argv));
    assert.equal(stdout, "", String(argv));
    assert.ok(stderr.startsWith(`Unexpected argument '${word}'\nUsage: gateway`), stderr);
  }
});

Deno.test("cli: a config file where the command goes is an unknown command, with the fix", async () => {
  const { code, stderr } = await cli(["gateway.yaml"]);
  assert.equal(code, 2);
  assert.ok(
    stderr.startsWith("Unknown command: gateway.yaml (did you mean --config gateway.yaml?)\n"),
    stderr,
  );
});

Deno.test("cli: the commands' own words are still taken", async () => {
  const version = await cli(["version"]);
  assert.equal(version.code, 0);
  assert.match(version.stdout, /^gateway /);
  const token = await cli(["token", "new", "--name", "web"]);
  assert.equal(token.code, 0, token.stderr);
  assert.match(token.stdout, /name: "web"/);
  assert.equal((await cli(["--help", "stray"])).code, 0);
});

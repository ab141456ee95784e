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

async function cli(
  argv: string[],
  config = VALID,
): Promise<{ code: number; stdout: string; stderr: string; file: string }> {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(file, config);
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
    return { code: await runCli(runtime, argv), stdout, stderr, file };
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

Deno.test("cli: check takes --host and --workers as serve does: refused with serve's line (exit 1; serve's 2)", async () => {
  // check ignored both and said valid; serve refused them.
  for (
    const [flags, line] of [
      [["--host", "bad_host!"], /^Invalid --host: must be an IP address or a host name/],
      [["--workers", "0"], /^Invalid --workers: use a number from 1 to 256, or auto\.\n$/],
      [["--workers", "many"], /^Invalid --workers: use a number from 1 to 256, or auto\.\n$/],
      [["--port", "70000"], /^Invalid port "70000" \(--port\): use a number from 0 to 65535\.\n$/],
    ] as const
  ) {
    const checked = await cli(["check", ...flags]);
    assert.equal(checked.code, 1, flags.join(" "));
    assert.match(checked.stderr, line, flags.join(" "));
    assert.equal(checked.stdout, "", "not said valid");
    const served = await cli(["serve", ...flags]);
    assert.equal(served.code, 2, flags.join(" "));
    assert.equal(served.stderr, checked.stderr, flags.join(" "));
  }
  const valid = await cli(["check", "--host", "localhost", "--workers", "auto", "--port", "0"]);
  assert.equal(valid.code, 0, valid.stderr);
  assert.match(valid.stdout, /is valid/);
});

Deno.test("cli: check and serve refuse a usage.jsonl or usage.spill that cannot be written, before serving", async () => {
  // Neither was checked: check said valid, serve started, and every record meant for them was lost; a spill path
  // naming a directory had that directory renamed by the replay.
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/afile`, "");
    await Deno.mkdir(`${dir}/adir`);
    const config = VALID.replace(
      "usage: { sqlite: none }",
      `usage: { sqlite: ":memory:", jsonl: "${dir}/afile/u.jsonl", spill: "${dir}/adir" }`,
    );
    const checked = await cli(["check"], config);
    assert.equal(checked.code, 1);
    assert.match(checked.stderr, /: usage\.jsonl: .*afile is a file, not a directory: the JSONL copy/);
    assert.match(checked.stderr, /: usage\.spill: .*adir is a directory, not a spill file/);
    // serve says the same and stops there (the test's runtime would refuse to listen: it is never asked).
    const served = await cli(["serve", "--port", "0"], config);
    assert.equal(served.code, 1);
    assert.equal(
      served.stderr.replaceAll(served.file, "FILE"),
      checked.stderr.replaceAll(checked.file, "FILE"),
    );
    assert.deepEqual(
      [...Deno.readDirSync(dir)].map((e) => e.name).sort(),
      ["adir", "afile"],
      "nothing renamed",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

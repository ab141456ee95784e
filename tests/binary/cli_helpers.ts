/**
 * Running `main.ts` as operators do, for the command-line tests: the command under chosen Deno permissions, a
 * config in a temporary file, and `deno task start`'s own permission flags.
 *
 * @module
 */
import assert from "node:assert/strict";

/** The entry point, run from source. */
export const MAIN = new URL("../../main.ts", import.meta.url).pathname;
/** What most tests run with: no write access, as a validator in CI may run `check`. */
export const PERMISSIONS = ["--allow-net", "--allow-env", "--allow-read"];

/** `main.ts ARGS` as a process under `permissions`; its exit code and output. */
export async function run(args: string[], env: Record<string, string> = {}, permissions = PERMISSIONS) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...permissions, MAIN, ...args],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return { code: output.code, stdout: decoder.decode(output.stdout), stderr: decoder.decode(output.stderr) };
}

/** A temporary config file holding `yaml`. */
export async function tempConfig(yaml: string): Promise<string> {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(file, yaml);
  return file;
}

/** The smallest config that serves: the builtin echo model behind `chat-default`. */
export const SERVABLE = `providers: { local: { type: builtin } }
models: { chat-default: { type: chat, targets: [ { provider: local, model: echo } ] } }
`;

/** The repository root. */
export const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");

/**
 * `deno task start`'s own flags, with its relative paths (resolved from the repo root when the task runs) made
 * absolute, except `data`, which goes to `dir` so the test leaves the checkout alone. (`--allow-sys` names
 * calls, not paths.)
 */
export async function startTaskFlags(dir: string): Promise<string[]> {
  const tasks = JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`)).tasks as Record<string, string>;
  const flags = tasks.start.split(/\s+/).filter((f) => f.startsWith("--allow")).map((flag) => {
    const [name, list] = flag.split("=");
    if (list === undefined || name === "--allow-sys") return flag;
    const paths = list.split(",").map((p) => (p === "data" ? `${dir}/data` : `${ROOT}/${p}`));
    return `${name}=${paths.join(",")}`;
  });
  assert.ok(flags.some((f) => f.startsWith("--allow-read=")), `unexpected start task: ${tasks.start}`);
  return flags;
}

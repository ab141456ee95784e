/**
 * Running a command to completion: shared by the main bench (`bench/run.ts`) and the cross-gateway bench, and
 * free of import side effects (no flags parsed, no temp dir made), so either can import it.
 *
 * @module
 */

const decoder = new TextDecoder();

/** Output of a finished command. */
export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `argv` to completion; a command that cannot start or times out yields code -1 and the reason. */
export async function run(
  argv: string[],
  options: { timeoutMs?: number; cwd?: string; env?: Record<string, string> } = {},
): Promise<CommandResult> {
  try {
    const out = await new Deno.Command(argv[0], {
      args: argv.slice(1),
      cwd: options.cwd,
      env: options.env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(options.timeoutMs ?? 600_000),
    }).output();
    return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
  } catch (err) {
    return { code: -1, stdout: "", stderr: err instanceof Error ? err.message : String(err) };
  }
}

/** Ends `child`: SIGTERM, and SIGKILL if it is still there after `graceMs`; resolves once it has exited. */
export async function stopChild(child: Deno.ChildProcess, graceMs = 5_000): Promise<void> {
  try {
    child.kill("SIGTERM");
  } catch { /* gone */ }
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
  }, graceMs);
  await child.status.catch(() => {});
  clearTimeout(timer);
}

/**
 * Runs a browser script in a Deno process of its own and reports its steps as steps of the calling test.
 *
 * Why a separate process: `playwright-core` probes the machine when it loads (the home directory, the OS
 * release, and `/proc/sys/fs/binfmt_misc/WSLInterop` to detect WSL). Deno grants reading that `/proc` file only
 * with `--allow-all`, which the suite's `deno task test` (rightly) does not have. The browser script gets
 * `--allow-all` in its own process; the test process keeps the suite's permissions and imports nothing of
 * playwright. It stays Deno (not Node), so the script resolves `playwright-core` and `openai` through deno.json
 * and deno.lock like every other test, without a `node_modules` directory.
 *
 * @module
 */

/** Where Debian installs the browser (`apt-get install chromium`); `.ci/run` installs it when missing. */
export const CHROMIUM_PATH = "/usr/bin/chromium";

/** Whether the browser is installed here. */
export function hasChromium(): boolean {
  try {
    return Deno.statSync(CHROMIUM_PATH).isFile;
  } catch {
    return false;
  }
}

/**
 * Whether a browser test should be skipped: only off CI and only when the browser is missing. In CI (`CI=true`)
 * the test runs and fails without the browser, so a broken install is never reported as a pass.
 */
export function skipBrowserTests(): boolean {
  return !hasChromium() && Deno.env.get("CI") !== "true";
}

/** Where the screenshots of a browser test go (`test-results/console/` for the console; gitignored). */
export function screenshotDir(name: string): string {
  return new URL(`../../test-results/${name}/`, import.meta.url).pathname;
}

/** One step of a browser script, as the script reports it. */
export interface StepReport {
  name: string;
  ok: boolean;
  error?: string;
}

/** Starts a step report on the script's stdout; other output passes through as it is. */
const MARK = "@@browser-step ";

/** For the browser script: reports a step's outcome to the test that runs it. */
export function reportStep(report: StepReport): void {
  console.log(MARK + JSON.stringify(report));
}

/**
 * Runs `script` (a module URL) with `env` added to the environment, replaying each step it reports as a step
 * of `t`; fails when the script fails outside a step, reports no step, or runs past `timeoutMs` (it is then
 * sent SIGTERM, on which playwright closes the browser).
 */
export async function runBrowserScript(
  t: Deno.TestContext,
  script: URL,
  env: Record<string, string>,
  timeoutMs = 90_000,
): Promise<void> {
  const config = new URL("../../deno.json", import.meta.url).pathname;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", "--config", config, script.pathname],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  // Killing a process that has just exited throws; there is nothing left to stop then.
  const stop = () => {
    try {
      child.kill("SIGTERM");
    } catch { /* already gone */ }
  };
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stop();
  }, timeoutMs);
  let steps = 0;
  // Step reports are JSON the script wrote; anything else it prints passes through.
  const readSteps = async () => {
    let buffered = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buffered += chunk;
      let nl;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (!line.startsWith(MARK)) {
          if (line.trim()) console.log(line);
          continue;
        }
        const report: StepReport = JSON.parse(line.slice(MARK.length));
        steps++;
        await t.step(report.name, () => {
          if (report.ok) return;
          // The script's own error and stack say where it failed; this process's stack would only add noise.
          const failure = new Error(report.error ?? "failed");
          failure.stack = report.error ?? "failed";
          throw failure;
        });
      }
    }
  };
  const read = await readSteps().then(() => null, (err: unknown) => err);
  if (read !== null) stop();
  const status = await child.status;
  clearTimeout(timer);
  if (read !== null) throw read;
  if (timedOut) throw new Error(`the browser script ran past ${timeoutMs} ms and was stopped`);
  if (!status.success) throw new Error(`the browser script exited with ${status.code} after ${steps} steps`);
  if (steps === 0) throw new Error("the browser script reported no step");
}

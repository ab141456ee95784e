/**
 * Cold-start phase: process spawn to the first 200 of a real chat request, for the Bun binary (the target)
 * and `deno run main.ts` (for reference).
 *
 * @module
 */
import { freePort, log, sleep, TMP } from "../harness/process.ts";
import { chatInit } from "../harness/servers.ts";
import { BENCH_DIR, BINARY, ROOT, state, TOKEN } from "../harness/settings.ts";

/** Cold start: spawn to the first 200 of a real chat request. */
export async function coldStart(argv: string[], env: Record<string, string>, port: number): Promise<number> {
  const started = performance.now();
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    cwd: ROOT,
    env,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let exited = false;
  child.status.then(() => exited = true);
  try {
    while (performance.now() - started < 15_000) {
      if (exited) throw new Error(`exited: ${(await stderr).trim().slice(0, 300)}`);
      try {
        const response = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, chatInit());
        await response.body?.cancel();
        if (response.status === 200) return performance.now() - started;
      } catch { /* not listening yet */ }
      await sleep(1);
    }
    throw new Error("no 200 within 15 s");
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
    await child.status;
    await stderr.catch(() => "");
  }
}

/** Cold starts of each runtime's gateway, `runs` times; `binaryProblem` says why the Bun binary cannot run. */
export async function measureColdStart(
  runs: number,
  binaryProblem: string | undefined,
): Promise<Record<string, { runsMs: number[]; error?: string }>> {
  const cold: Record<string, { runsMs: number[]; error?: string }> = {};
  const coldTargets: [string, (port: number, dataDir: string) => string[], string | undefined][] = [
    [
      "gw-bun",
      (p) => [BINARY, "serve", "--config", `${BENCH_DIR}/config.yaml`, "--port", String(p)],
      binaryProblem,
    ],
    [
      "gw-deno",
      (
        p,
      ) => [
        "deno",
        "run",
        "-A",
        "main.ts",
        "serve",
        "--config",
        `${BENCH_DIR}/config.yaml`,
        "--port",
        String(p),
      ],
      undefined,
    ],
  ];
  for (const [key, argv, problem] of coldTargets) {
    cold[key] = { runsMs: [] };
    if (problem) {
      cold[key].error = problem;
      continue;
    }
    log(`cold start: ${key}`);
    for (let i = 0; i < runs; i++) {
      const port = freePort();
      const dataDir = `${TMP}/cold-${key}-${i}`;
      await Deno.mkdir(dataDir, { recursive: true });
      try {
        cold[key].runsMs.push(
          await coldStart(argv(port, dataDir), {
            BENCH_UPSTREAM_URL: state.upstreamUrl,
            BENCH_DATA_DIR: dataDir,
            BENCH_TOKEN: TOKEN,
          }, port),
        );
      } catch (err) {
        cold[key].error = err instanceof Error ? err.message : String(err);
        break;
      }
    }
  }
  return cold;
}

/**
 * What the bench needs before it can measure: wrk, h2load and taskset (installed by bench/install_tools.sh
 * when missing), Bun (through npx), and a Bun build of `dist/gateway` no older than the sources.
 *
 * @module
 */
import { log, run, which } from "./process.ts";
import { BENCH_DIR, BINARY, BUN_VERSION, flags, PIN, ROOT, state } from "./settings.ts";

export async function ensureTools(): Promise<void> {
  const missing = [];
  for (const tool of ["wrk", "h2load", ...(PIN ? ["taskset"] : [])]) {
    if (!await which(tool)) missing.push(tool);
  }
  if (missing.length > 0) {
    if (flags["no-install"]) {
      throw new Error(`missing tools: ${missing.join(", ")} (run bench/install_tools.sh)`);
    }
    log(`installing ${missing.join(", ")} with bench/install_tools.sh`);
    const out = await run(["sh", `${BENCH_DIR}/install_tools.sh`], { timeoutMs: 600_000 });
    if (out.code !== 0) throw new Error(`install_tools.sh failed: ${out.stderr.slice(-500)}`);
  }
}

export async function findBun(): Promise<string | undefined> {
  if (flags["skip-bun"]) return undefined;
  const out = await run(["npx", "-y", `bun@${BUN_VERSION}`, "-e", "console.log(process.execPath)"], {
    timeoutMs: 180_000,
  });
  const path = out.stdout.trim().split("\n").pop() ?? "";
  return out.code === 0 && path.startsWith("/") ? path : undefined;
}

/** Newest modification time of main.ts and everything under lib/. */
export async function sourcesMtime(): Promise<number> {
  let newest = 0;
  const visit = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) await visit(path);
      else newest = Math.max(newest, (await Deno.stat(path)).mtime?.getTime() ?? 0);
    }
  };
  await visit(`${ROOT}/lib`);
  return Math.max(newest, (await Deno.stat(`${ROOT}/main.ts`)).mtime?.getTime() ?? 0);
}

/** What `dist/gateway version` says it runs on ("bun", "deno"), or undefined when it does not run. */
export async function binaryRuntime(): Promise<string | undefined> {
  const out = await run([BINARY, "version"], { timeoutMs: 10_000 });
  return out.code === 0 ? /\((\w+)/.exec(out.stdout)?.[1] : undefined;
}

/**
 * Builds `dist/gateway` with Bun when it is missing, not a Bun build (`deno task compile` writes the same
 * path) or older than the sources: with the repo's `compile:bun` task when deno.json has one, else plain
 * `bun build --compile`. Returns why there is no usable binary, if there is none.
 */
export async function ensureBinary(): Promise<string | undefined> {
  if (state.bun === undefined) {
    return flags["skip-bun"] ? "skipped (--skip-bun)" : `Bun ${BUN_VERSION} unavailable via npx`;
  }
  let binaryMtime = 0;
  try {
    binaryMtime = (await Deno.stat(BINARY)).mtime?.getTime() ?? 0;
  } catch { /* missing */ }
  if (binaryMtime > await sourcesMtime() && await binaryRuntime() === "bun") return undefined;
  const tasks =
    (JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`)) as { tasks?: Record<string, string> })
      .tasks ?? {};
  const argv = tasks["compile:bun"] !== undefined
    ? ["deno", "task", "compile:bun"]
    : [state.bun, "build", "--compile", "main.ts", "--outfile", "dist/gateway"];
  log(`building dist/gateway: ${argv.join(" ")}`);
  const out = await run(argv, { cwd: ROOT, timeoutMs: 300_000 });
  if (out.code !== 0) {
    const lines = (out.stderr + out.stdout).trim().split("\n");
    const why = lines.filter((l) => /error/i.test(l)).slice(0, 3).join("; ") || lines.slice(-2).join("; ");
    return `${argv.slice(0, 3).join(" ")} failed: ${why.slice(0, 300)}`;
  }
  const runtime = await binaryRuntime();
  return runtime === "bun"
    ? undefined
    : `dist/gateway built but \`dist/gateway version\` reports ${runtime ?? "nothing"}`;
}

/**
 * The usage database's worker thread runs at a lower scheduling priority than the thread serving requests
 * (lib/runtime/thread_priority.ts), in the gateway as it is started: `deno run` with the start task's
 * permissions, and the single binary when `GATEWAY_BIN` is set. Without Deno's `--allow-sys=setPriority` the
 * gateway serves as before, every thread at the default priority. Reads `/proc`: Linux only.
 *
 * @module
 */
import assert from "node:assert/strict";
import { resolve } from "node:path";
import { countRows } from "../helpers/usage.ts";
import { BACKGROUND_NICE } from "../../lib/runtime/thread_priority.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const BIN = Deno.env.get("GATEWAY_BIN");
const LINUX = Deno.build.os === "linux";
const TOKEN = "gw-test-token-priority-0123456789";

/**
 * Each thread of process `pid`: its name and nice value (`/proc/<pid>/task/<tid>/stat`, field 19). Read by `sh`:
 * Deno lets only `--allow-all` read `/proc` itself.
 */
async function threads(pid: number): Promise<{ tid: number; name: string; nice: number }[]> {
  const out = await new Deno.Command("sh", {
    args: ["-c", `for f in /proc/${pid}/task/*/stat; do cat "$f"; echo; done`],
    stdout: "piped",
  }).output();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.trim()).map((stat) => {
    // The name is in parentheses and may hold spaces; the fields after it are space-separated.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return {
      tid: Number(stat.slice(0, stat.indexOf(" "))),
      name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")),
      nice: Number(fields[16]),
    };
  });
}

/** Starts `cmd args… serve` on a config with a SQLite usage database in `dir`; resolves once it listens. */
async function serve(cmd: string, args: string[], dir: string) {
  await Deno.writeTextFile(
    `${dir}/gateway.yaml`,
    `providers: { local: { type: builtin } }
models: { m: { type: chat, targets: [ { provider: local, model: echo } ] } }
tokens: [ { name: t, environment: e, token: "${TOKEN}", models: ["*"] } ]
usage: { sqlite: "${dir}/usage.sqlite", spill: "${dir}/spill.jsonl" }
`,
  );
  const child = new Deno.Command(cmd, {
    args: [...args, "serve", "--config", `${dir}/gateway.yaml`, "--port", "0"],
    cwd: dir,
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const deadline = setTimeout(() => child.kill("SIGKILL"), 20_000);
  while (!buffered.includes('"msg":"listening"')) {
    const { done, value } = await lines.read();
    if (done) throw new Error(`${cmd} exited before listening: ${buffered}`);
    buffered += value;
  }
  clearTimeout(deadline);
  const url = String(JSON.parse(buffered.split("\n").find((l) => l.includes('"msg":"listening"'))!).url);
  const drain = (async () => {
    while (!(await lines.read()).done) { /* the access log */ }
  })();
  return {
    url,
    pid: child.pid,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
      await drain;
    },
  };
}

async function chat(url: string): Promise<void> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(res.status, 200);
  await res.body?.cancel();
}

const DENO_START = ["run", "--no-prompt", "--allow-net", "--allow-env", "--allow-read", "--allow-write"];

const cases: { name: string; cmd: string; args: string[]; lowered: boolean; ignore?: boolean }[] = [
  {
    name: "deno run with the start task's --allow-sys=setPriority",
    cmd: Deno.execPath(),
    args: [...DENO_START, "--allow-sys=setPriority", resolve(ROOT, "main.ts")],
    lowered: true,
  },
  {
    name: "deno run without --allow-sys",
    cmd: Deno.execPath(),
    args: [...DENO_START, resolve(ROOT, "main.ts")],
    lowered: false,
  },
  { name: "the single binary", cmd: BIN ? resolve(BIN) : "", args: [], lowered: true, ignore: !BIN },
];

for (const c of cases) {
  Deno.test({
    name: `thread priority: ${c.name}: the usage worker at nice ${
      c.lowered ? BACKGROUND_NICE : 0
    }, requests at 0`,
    ignore: !LINUX || c.ignore,
    async fn() {
      const dir = await Deno.makeTempDir({ prefix: "thread-priority-" });
      try {
        const before = await serve(c.cmd, c.args, dir);
        await chat(before.url);
        const seen = await threads(before.pid);
        await before.stop();
        const main = seen.find((t) => t.tid === before.pid);
        assert.equal(main?.nice, 0, "the thread serving requests keeps the default priority");
        const lowered = seen.filter((t) => t.nice === BACKGROUND_NICE);
        if (c.lowered) {
          // One background thread: the usage database's worker (the config check's worker has ended by now).
          assert.equal(lowered.length, 1, JSON.stringify(seen));
        } else {
          assert.deepEqual(lowered, [], "without the permission nothing changes");
        }
        assert.ok(seen.every((t) => t.nice === 0 || t.nice === BACKGROUND_NICE), JSON.stringify(seen));
        // Either way the worker stored the request's record.
        assert.equal(countRows(`${dir}/usage.sqlite`).rows, 1);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}

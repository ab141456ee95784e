/**
 * A PostgreSQL server of the test's own (initdb into a temp dir, `pg_ctl` on a free port, trust auth), so a
 * test can stop and restart it without disturbing the shared one on 5432. As an ordinary user the tools run
 * directly (no root needed). PostgreSQL refuses to run as root: as root the data directory is given to the
 * `postgres` user and the tools run as it (`runuser`), so that user must exist.
 *
 * @module
 */

/** A running private server; `url` reaches its `postgres` database as the `postgres` user. */
export interface PrivatePostgres {
  port: number;
  url: string;
  /** Stops the server: `immediate` is a crash (no checkpoint, connections cut), `fast` a clean shutdown. */
  stop(mode?: "fast" | "immediate"): Promise<void>;
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  destroy(): Promise<void>;
}

/** Where the PostgreSQL server tools are: `PG_BIN`, else Debian's newest, else the PATH. */
function binDir(): string {
  const fromEnv = Deno.env.get("PG_BIN");
  if (fromEnv) return fromEnv;
  try {
    const versions = [...Deno.readDirSync("/usr/lib/postgresql")].map((e) => Number(e.name))
      .filter((v) => Number.isFinite(v)).sort((a, b) => b - a);
    if (versions.length > 0) return `/usr/lib/postgresql/${versions[0]}/bin`;
  } catch {
    // not Debian's layout: the PATH
  }
  return "";
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** Whether this process runs as root (`id -u`: the suite runs without `--allow-sys=uid`). */
let rootCache: boolean | undefined;
function isRoot(): boolean {
  if (rootCache === undefined) {
    const out = new Deno.Command("id", { args: ["-u"], stdout: "piped" }).outputSync();
    rootCache = new TextDecoder().decode(out.stdout).trim() === "0";
  }
  return rootCache;
}

/** Runs a PostgreSQL tool (as `postgres` when we are root); throws with its output when it fails. */
async function tool(name: string, args: string[]): Promise<void> {
  const dir = binDir();
  const path = dir ? `${dir}/${name}` : name;
  const [cmd, cmdArgs] = isRoot() ? ["runuser", ["-u", "postgres", "--", path, ...args]] : [path, args];
  const out = await new Deno.Command(cmd, { args: cmdArgs, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    const text = new TextDecoder().decode(out.stderr) + new TextDecoder().decode(out.stdout);
    throw new Error(`${name} ${args.join(" ")} failed: ${text.trim()}`);
  }
}

/** Creates and starts a private server on a free port. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = await Deno.makeTempDir({ prefix: "gw-pg-" });
  const data = `${dir}/data`;
  if (isRoot()) {
    const chown = await new Deno.Command("chown", { args: ["-R", "postgres:postgres", dir], stderr: "piped" })
      .output();
    if (!chown.success) {
      const why = new TextDecoder().decode(chown.stderr).trim();
      throw new Error(
        `chown ${dir} to postgres failed (${why}): as root, the private PostgreSQL server runs as the ` +
          "'postgres' user, which must exist (Debian's postgresql package creates it); or run the tests as " +
          "an ordinary user",
      );
    }
  }
  await tool("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]);
  const port = freePort();
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off -c max_connections=100`;
  const start = () => tool("pg_ctl", ["-D", data, "-o", options, "-l", `${dir}/server.log`, "-w", "start"]);
  const stop = (mode: "fast" | "immediate" = "fast") =>
    tool("pg_ctl", ["-D", data, "-m", mode, "-w", "stop"]);
  await start();
  let running = true;
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop(mode) {
      await stop(mode);
      running = false;
    },
    async start() {
      await start();
      running = true;
    },
    async destroy() {
      if (running) await stop("immediate").catch(() => {});
      running = false;
      await Deno.remove(dir, { recursive: true });
    },
  };
}

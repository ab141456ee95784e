/**
 * A gateway process of its own for multi-replica tests: `deno run main.ts serve`, or the single binary when
 * `GATEWAY_BIN` is set, on an ephemeral port, with every stdout/stderr line kept (the JSON log).
 *
 * @module
 */

/** A running replica: its base URL, its log lines so far, and a graceful stop (SIGTERM). */
export interface Replica {
  url: string;
  logs: string[];
  /** SIGTERM, then waits for the exit; resolves to the exit code. */
  stop(): Promise<number>;
}

/** Starts a replica serving `configFile`; resolves once it logs `listening` (at most 30 s). */
export async function spawnReplica(configFile: string, extraArgs: string[] = []): Promise<Replica> {
  const bin = Deno.env.get("GATEWAY_BIN");
  const [cmd, pre] = bin ? [bin, []] : [Deno.execPath(), ["run", "--allow-all", "main.ts"]];
  const child = new Deno.Command(cmd, {
    args: [...pre, "serve", "--config", configFile, "--port", "0", "--host", "127.0.0.1", ...extraArgs],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const logs: string[] = [];
  let url: string | undefined;
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    let buffered = "";
    for await (const chunk of stream) {
      buffered += decoder.decode(chunk, { stream: true });
      let nl;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        logs.push(line);
        if (line.includes('"msg":"listening"')) url = String(JSON.parse(line).url);
      }
    }
    if (buffered) logs.push(buffered);
  };
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const deadline = Date.now() + 30_000;
  let exited = false;
  child.status.then(() => exited = true);
  while (url === undefined) {
    if (Date.now() > deadline || exited) {
      try {
        child.kill("SIGKILL");
      } catch {
        // It has exited already: its log says why.
      }
      await child.status;
      await pumps;
      throw new Error(`replica did not start: ${logs.join("\n")}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    url,
    logs,
    async stop() {
      child.kill("SIGTERM");
      const status = await child.status;
      await pumps;
      return status.code;
    },
  };
}

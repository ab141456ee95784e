/**
 * A `redis-server` of the test's own on a free port of 127.0.0.1, without persistence (a restart starts it
 * empty), so a test can stop it, restart it or make it a cluster node without disturbing the shared Redis
 * on 6379.
 *
 * @module
 */

/** A free TCP port of 127.0.0.1 (free when asked; the caller binds it soon after). */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** Starts `redis-server` on `port` (with `extra` arguments); resolves once it accepts connections. */
export async function startRedis(port: number, extra: string[] = []): Promise<Deno.ChildProcess> {
  const child = new Deno.Command("redis-server", {
    args: [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      ...extra,
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  const deadline = performance.now() + 5_000;
  while (performance.now() < deadline) {
    try {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      conn.close();
      return child;
    } catch {
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  child.kill("SIGKILL");
  throw new Error("redis-server did not start");
}

/** Kills a server started by {@linkcode startRedis} and waits for it to be gone. */
export async function stopRedis(child: Deno.ChildProcess): Promise<void> {
  child.kill("SIGKILL");
  await child.status;
}

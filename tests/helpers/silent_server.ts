/**
 * A TCP port standing for a database that is down, then hung. At first nothing listens on it: a client's
 * connection is refused and it fails at once. After {@linkcode SilentServer.hang} it accepts each connection,
 * keeps it open and never sends a byte: a client waits out its own timeout, so a test that sets that timeout
 * to minutes can tell a request that waits on the server (held) from one that does not (answered).
 *
 * @module
 */

/** A port of 127.0.0.1 that refuses connections until it hangs. */
export interface SilentServer {
  readonly port: number;
  /** How many connections it has taken and held since {@linkcode SilentServer.hang}. */
  readonly held: number;
  /** Listens from now on, holding each connection silent. */
  hang(): void;
  /** Stops listening and closes every held connection (their clients then fail). */
  close(): Promise<void>;
}

/** A free port that refuses connections until told to hang. */
export function startSilentServer(): SilentServer {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const conns: Deno.Conn[] = [];
  let listener: Deno.Listener | undefined;
  let accepting: Promise<void> = Promise.resolve();
  return {
    port,
    get held() {
      return conns.length;
    },
    hang() {
      if (listener !== undefined) return;
      const silent = listener = Deno.listen({ hostname: "127.0.0.1", port });
      accepting = (async () => {
        try {
          for await (const conn of silent) conns.push(conn);
        } catch {
          // the listener was closed
        }
      })();
    },
    async close() {
      listener?.close();
      await accepting;
      for (const conn of conns) {
        try {
          conn.close();
        } catch {
          // its client closed it
        }
      }
    },
  };
}

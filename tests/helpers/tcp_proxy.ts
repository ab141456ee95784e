/**
 * A TCP proxy in front of a server the test does not own (the shared Redis of the development and CI
 * machines), for faults that must not disturb anyone else: cut every connection and refuse new ones (a blip,
 * a failover), hold back the server's replies (a slow or paused server whose work still happens), or hold them
 * until released (a stalled server), counting what the clients sent meanwhile (how often it was tried).
 *
 * @module
 */

/** A running proxy; `port` forwards to the target. */
export interface TcpProxy {
  readonly port: number;
  /** Connections cut at their first bytes by {@linkcode ProxyOptions.cutAtFirst}. */
  readonly cutAtFirst: number;
  /** Cuts every open connection and refuses new ones, until {@linkcode TcpProxy.up}. */
  down(): void;
  /** Accepts connections again. */
  up(): void;
  /** Holds each reply from the server back this long (in order); 0 passes them at once. */
  delayMs: number;
  /**
   * Holds every reply from the server (the requests still reach it) until {@linkcode TcpProxy.release}, and
   * starts {@linkcode TcpProxy.sentWhileStalled} afresh.
   */
  stall(): void;
  /** Passes the replies held by {@linkcode TcpProxy.stall}, and every later one, at once. */
  release(): void;
  /** Each read a client sent since the last `stall()` (copies, in order): the calls that tried the server. */
  readonly sentWhileStalled: readonly Uint8Array[];
  /** Stops listening and cuts every connection; resolves once every copy loop has ended. */
  close(): Promise<void>;
}

/** Options of {@linkcode startTcpProxy}. */
export interface ProxyOptions {
  /**
   * Cuts a connection whose client's first bytes (the first read: a protocol's opening message, such as
   * PostgreSQL's startup message naming its `application_name`) this holds for, before they reach the server.
   */
  cutAtFirst?: (first: Uint8Array) => boolean;
  /**
   * The port to listen on (default: a free one). A client given it before the proxy starts finds it refusing
   * connections as a server that is down does (`down()` accepts and cuts them instead).
   */
  port?: number;
}

/** Starts a proxy on a free port of 127.0.0.1 (or `options.port`) to `targetPort` on `targetHost`. */
export function startTcpProxy(
  targetPort: number,
  targetHost = "127.0.0.1",
  options: ProxyOptions = {},
): TcpProxy {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: options.port ?? 0 });
  const conns = new Set<Deno.Conn>();
  const loops = new Set<Promise<void>>();
  let refusing = false;
  let cutCount = 0;
  let stalled: PromiseWithResolvers<void> | null = null;
  let sentWhileStalled: Uint8Array[] = [];

  const closeQuietly = (conn: Deno.Conn) => {
    conns.delete(conn);
    try {
      conn.close();
    } catch {
      // already closed
    }
  };
  const cutAll = () => {
    for (const conn of [...conns]) closeQuietly(conn);
  };

  const copy = async (
    from: Deno.Conn,
    to: Deno.Conn,
    delayed: boolean,
    cut?: (first: Uint8Array) => boolean,
  ) => {
    const buf = new Uint8Array(65_536);
    let first = true;
    try {
      while (true) {
        const n = await from.read(buf);
        if (n === null) break;
        const data = buf.slice(0, n);
        if (first && cut?.(data)) {
          cutCount++;
          break;
        }
        first = false;
        if (!delayed && stalled !== null) sentWhileStalled.push(data);
        while (delayed && stalled !== null) await stalled.promise;
        if (delayed && proxy.delayMs > 0) await new Promise((r) => setTimeout(r, proxy.delayMs));
        for (let off = 0; off < data.length;) off += await to.write(data.subarray(off));
      }
    } catch {
      // cut
    }
    closeQuietly(from);
    closeQuietly(to);
  };
  const track = (p: Promise<void>) => {
    loops.add(p);
    p.finally(() => loops.delete(p));
  };

  const accept = async () => {
    try {
      for await (const client of listener) {
        if (refusing) {
          client.close();
          continue;
        }
        let server: Deno.Conn;
        try {
          server = await Deno.connect({ hostname: targetHost, port: targetPort });
        } catch {
          client.close();
          continue;
        }
        conns.add(client);
        conns.add(server);
        track(copy(client, server, false, options.cutAtFirst));
        track(copy(server, client, true));
      }
    } catch {
      // the listener was closed
    }
  };
  const accepting = accept();

  const proxy: TcpProxy = {
    port: (listener.addr as Deno.NetAddr).port,
    get cutAtFirst() {
      return cutCount;
    },
    delayMs: 0,
    stall() {
      stalled ??= Promise.withResolvers<void>();
      sentWhileStalled = [];
    },
    release() {
      stalled?.resolve();
      stalled = null;
    },
    get sentWhileStalled() {
      return sentWhileStalled;
    },
    down() {
      refusing = true;
      cutAll();
    },
    up() {
      refusing = false;
    },
    async close() {
      proxy.release();
      listener.close();
      cutAll();
      await accepting;
      await Promise.all([...loops]);
    },
  };
  return proxy;
}

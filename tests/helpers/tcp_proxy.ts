/**
 * A TCP proxy in front of a server the test does not own (the shared Redis and PostgreSQL of the development
 * and CI machines), for faults that must not disturb anyone else: cut every connection and refuse new ones (a
 * blip, a failover), hold back the server's replies (a slow or paused server whose work still happens), or
 * stall: accept and forward, but answer nothing until told (a hung server; its client waits out its own
 * timeout, which a test sets to minutes so that a client waiting on the server is told from one that is not).
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
  /** Accepts connections again, passes on what a stall held, and stops {@linkcode ProxyOptions.stallWhen}. */
  up(): void;
  /** Holds each reply from the server back this long (in order); 0 passes them at once. */
  delayMs: number;
  /**
   * Stalls: every connection, open or new, is accepted and what its client sends reaches the server (the work
   * happens: an INSERT commits), but no reply is passed on until {@linkcode TcpProxy.release},
   * {@linkcode TcpProxy.up} or close; starts {@linkcode TcpProxy.sentWhileStalled} afresh.
   */
  stall(): void;
  /** Ends every stall: the replies held, and every later one, pass at once. */
  release(): void;
  /** Each read a client sent since the last `stall()` (copies, in order): the calls that tried the server. */
  readonly sentWhileStalled: readonly Uint8Array[];
  /** Reads of a client that {@linkcode ProxyOptions.stallWhen} held for (each stalled its connection). */
  readonly stalledWhen: number;
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
   * Stalls a connection (as {@linkcode TcpProxy.stall} does, for it alone) once a read of its client holds for
   * this (a statement's text), until {@linkcode TcpProxy.up} or close: a server that hangs on one query. Once
   * up, no connection is stalled by it again.
   */
  stallWhen?: (data: Uint8Array) => boolean;
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
  let stalled = false;
  let sentWhileStalled: Uint8Array[] = [];
  let stalledWhenCount = 0;
  let stallWhen = options.stallWhen;
  /** Clients whose connection {@linkcode ProxyOptions.stallWhen} stalled. */
  const stalledConns = new Set<Deno.Conn>();
  let release: () => void = () => {};
  let released = new Promise<void>((resolve) => release = resolve);
  /** Ends every stall: what was held goes on (or, at close, finds its connection gone). */
  const unstall = () => {
    stalled = false;
    stalledConns.clear();
    release();
    released = new Promise<void>((resolve) => release = resolve);
  };

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
    client: Deno.Conn = delayed ? to : from,
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
        if (!delayed && stalled) sentWhileStalled.push(data);
        if (!delayed && stallWhen?.(data)) {
          stalledWhenCount++;
          stalledConns.add(client);
        }
        while (delayed && (stalled || stalledConns.has(client)) && conns.has(client)) await released;
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
    get stalledWhen() {
      return stalledWhenCount;
    },
    delayMs: 0,
    stall() {
      stalled = true;
      sentWhileStalled = [];
    },
    release() {
      unstall();
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
      stallWhen = undefined;
      unstall();
    },
    async close() {
      listener.close();
      cutAll();
      unstall();
      await accepting;
      await Promise.all([...loops]);
    },
  };
  return proxy;
}

/** Whether `text`'s UTF-8 bytes occur in `bytes` (a statement's text, a value of a query's parameters). */
export function bytesInclude(bytes: Uint8Array, text: string): boolean {
  const part = new TextEncoder().encode(text);
  outer: for (let i = 0; i + part.length <= bytes.length; i++) {
    for (let j = 0; j < part.length; j++) if (bytes[i + j] !== part[j]) continue outer;
    return true;
  }
  return false;
}

/**
 * An OpenAI-compatible fake whose every answer follows a script, for routing tests: status codes with
 * headers, delays before the headers, connections reset before any byte or after the first chunk, and slow
 * streams. Without a script step it answers normally.
 *
 * @module
 */

/** What the fake does with one request. */
export interface FaultStep {
  /** Answer with this status and an OpenAI error body. */
  status?: number;
  headers?: Record<string, string>;
  /** Wait before sending headers. */
  delayMs?: number;
  /**
   * Send nothing until the test calls {@linkcode FaultUpstream.release} (or stops the fake): a slow upstream whose
   * slowness does not run out while a loaded machine is slow too.
   */
  hold?: boolean;
  /** Drop the connection without answering (raw socket closed). */
  resetBeforeHeaders?: boolean;
  /** For streams: send this many content chunks, then tear the connection down. */
  cutAfterChunks?: number;
  /** For streams: pause between chunks. */
  chunkIntervalMs?: number;
}

/** A running scripted upstream. */
export interface FaultUpstream {
  /** Base URL including `/v1`. */
  baseURL: string;
  name: string;
  /** Steps consumed one per request, in order. */
  script: FaultStep[];
  /** Requests received (including those reset). */
  hits: number;
  /** Lets every request held by a `hold` step answer. */
  release(): void;
  stop(): Promise<void>;
}

const encoder = new TextEncoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function chunk(name: string, delta: Record<string, unknown>, finish: string | null) {
  return `data: ${
    JSON.stringify({
      id: `chatcmpl-${name}`,
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model: name,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    })
  }\n\n`;
}

/**
 * Starts the fake. Requests go through a raw TCP proxy in front of a `Deno.serve` server, so that a step can
 * close the connection before any byte of an answer, as a crashed upstream would.
 */
export function startFaultUpstream(name: string): FaultUpstream {
  let gate = Promise.withResolvers<void>();
  const fake: FaultUpstream = {
    baseURL: "",
    name,
    script: [],
    hits: 0,
    release: () => {
      gate.resolve();
      gate = Promise.withResolvers<void>();
    },
    stop: async () => {},
  };
  const inner = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const step = (request.headers.get("x-fault-step") ?? "") === ""
      ? {}
      : JSON.parse(request.headers.get("x-fault-step")!);
    const body = await request.json().catch(() => ({}));
    if (step.delayMs) await sleep(step.delayMs);
    if (step.hold) await gate.promise;
    if (step.status) {
      return Response.json(
        {
          error: {
            message: `scripted ${step.status} from ${name}`,
            type: "server_error",
            param: null,
            code: null,
          },
        },
        { status: step.status, headers: step.headers },
      );
    }
    if (new URL(request.url).pathname.endsWith("/embeddings")) {
      return Response.json({
        object: "list",
        data: [{ object: "embedding", index: 0, embedding: [1, 0] }],
        model: name,
        usage: { prompt_tokens: 1, total_tokens: 1 },
      });
    }
    if (body.stream !== true) {
      return Response.json({
        id: `chatcmpl-${name}`,
        object: "chat.completion",
        created: 1_700_000_000,
        model: name,
        choices: [{
          index: 0,
          message: { role: "assistant", content: `answer from ${name}` },
          logprobs: null,
          finish_reason: "stop",
        }],
        usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 },
      });
    }
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(encoder.encode(chunk(name, { role: "assistant", content: "" }, null)));
        const words = ["answer ", "from ", name];
        for (let i = 0; i < words.length; i++) {
          if (step.cutAfterChunks !== undefined && i >= step.cutAfterChunks) {
            await sleep(50); // let what was sent reach the client before the connection dies
            controller.error(new Error("scripted cut"));
            return;
          }
          if (step.chunkIntervalMs) await sleep(step.chunkIntervalMs);
          controller.enqueue(encoder.encode(chunk(name, { content: words[i] }, null)));
        }
        controller.enqueue(encoder.encode(chunk(name, {}, "stop")));
        controller.enqueue(encoder.encode("data: [DONE]\n\n"));
        controller.close();
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream" } });
  });

  // The proxy reads the request head, takes the next script step, and either closes the socket or passes the
  // request on with the step in a header.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const innerPort = inner.addr.port;
  const conns = new Set<Deno.Conn>();
  (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      handle(conn).catch(() => {}).finally(() => {
        conns.delete(conn);
        try {
          conn.close();
        } catch { /* already closed */ }
      });
    }
  })().catch(() => {});

  async function handle(conn: Deno.Conn) {
    const buffer = new Uint8Array(64 * 1024);
    let used = 0;
    let headEnd = -1;
    while (headEnd < 0) {
      const n = await conn.read(buffer.subarray(used));
      if (n === null) return;
      used += n;
      headEnd = new TextDecoder().decode(buffer.subarray(0, used)).indexOf("\r\n\r\n");
    }
    fake.hits++;
    const step = fake.script.shift() ?? {};
    if (step.resetBeforeHeaders) return;
    const head = new TextDecoder().decode(buffer.subarray(0, headEnd));
    const rest = buffer.subarray(headEnd + 4, used);
    const upstream = await Deno.connect({ hostname: "127.0.0.1", port: innerPort });
    conns.add(upstream);
    const rewritten = head.replace(/\r\nconnection:[^\r]*/i, "") +
      `\r\nx-fault-step: ${JSON.stringify(step)}\r\nconnection: close\r\n\r\n`;
    await upstream.write(encoder.encode(rewritten));
    await upstream.write(rest);
    const toUpstream = (async () => {
      const chunkBuf = new Uint8Array(64 * 1024);
      while (true) {
        const n = await conn.read(chunkBuf).catch(() => null);
        if (n === null) break;
        await upstream.write(chunkBuf.subarray(0, n));
      }
    })();
    try {
      await upstream.readable.pipeTo(conn.writable, { preventClose: false });
    } finally {
      conns.delete(upstream);
      try {
        upstream.close();
      } catch { /* closed */ }
    }
    await toUpstream.catch(() => {});
  }

  fake.baseURL = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/v1`;
  fake.stop = async () => {
    fake.release();
    listener.close();
    for (const conn of conns) {
      try {
        conn.close();
      } catch { /* closed */ }
    }
    await inner.shutdown();
  };
  return fake;
}

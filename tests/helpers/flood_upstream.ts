/**
 * An OpenAI-compatible upstream whose streams never end: chunks of about 4 KB, each as soon as the gateway
 * takes the last one. What a client that stops reading backs up into the gateway, as fast as it can.
 *
 * @module
 */

/** A running flood upstream. */
export interface FloodUpstream {
  /** `http://127.0.0.1:<port>` (the API is under `/v1`). */
  url: string;
  /** Resolves when a stream was cancelled (the gateway gave it up). */
  cancelled: PromiseWithResolvers<void>;
  stop(): Promise<void>;
}

/** Starts a flood upstream on a free port. */
export function startFloodUpstream(): FloodUpstream {
  const encoder = new TextEncoder();
  const chunk = encoder.encode(`data: ${
    JSON.stringify({
      id: "c",
      object: "chat.completion.chunk",
      created: 1,
      model: "flood",
      choices: [{ index: 0, delta: { content: "y".repeat(4_000) }, finish_reason: null }],
    })
  }\n\n`);
  const cancelled = Promise.withResolvers<void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    await req.text();
    return new Response(
      new ReadableStream<Uint8Array>({ pull: (c) => c.enqueue(chunk), cancel: () => cancelled.resolve() }, {
        highWaterMark: 0,
      }),
      { headers: { "content-type": "text/event-stream" } },
    );
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, cancelled, stop: () => server.shutdown() };
}

/**
 * An OpenAI-compatible upstream that holds every answer until the test releases it, so that the admission of a
 * burst of concurrent requests is decided before any of them settles: counts of admitted requests are exact,
 * not probable. Shared by the fleet and team tests.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { TestGateway } from "./gateway.ts";

/**
 * An OpenAI-compatible upstream that holds every answer until {@linkcode Gated.release}, and reports the
 * usage the test sets (so real usage can equal the gateway's estimate).
 */
export interface Gated {
  baseURL: string;
  arrived: number;
  usage: { prompt: number; completion: number };
  release(): void;
  /** Closes the gate again for the next round. */
  reset(): void;
  stop(): Promise<void>;
}

export function startGated(): Gated {
  let open = Promise.withResolvers<void>();
  const gated: Gated = {
    baseURL: "",
    arrived: 0,
    usage: { prompt: 3, completion: 2 },
    release: () => open.resolve(),
    reset: () => open = Promise.withResolvers<void>(),
    stop: () => server.shutdown(),
  };
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const body = await request.json();
    gated.arrived++;
    await open.promise;
    const { prompt, completion } = gated.usage;
    const usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
    const base = { id: "chatcmpl-gated", created: 1, model: body.model };
    if (body.stream !== true) {
      return Response.json({
        ...base,
        object: "chat.completion",
        choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
        usage,
      });
    }
    const events = [
      {
        ...base,
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta: { role: "assistant", content: "ok" } }],
      },
      { ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
      { ...base, object: "chat.completion.chunk", choices: [], usage },
    ];
    const text = events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + "data: [DONE]\n\n";
    return new Response(text, { headers: { "content-type": "text/event-stream" } });
  });
  gated.baseURL = `http://127.0.0.1:${server.addr.port}/v1`;
  return gated;
}

export interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

export function send(
  gw: TestGateway,
  token: string,
  stream = false,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<Answer> {
  return fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({
      model: "chat-gated",
      messages: [{ role: "user", content: "hello there" }],
      max_tokens: 20,
      stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
      ...extra,
    }),
  }).then(async (r) => ({ status: r.status, headers: r.headers, body: await r.text() }));
}

/**
 * Sends 3N requests at once (N = `n`), round robin over the gateways and over the tokens; releases the upstream once N have reached it
 * and the other 2N have been answered, so no admitted request settles while others are being decided.
 */
export async function burst(
  gws: TestGateway[],
  up: Gated,
  token: string | readonly string[],
  stream = false,
  n = 5,
): Promise<Answer[]> {
  up.arrived = 0;
  let answered = 0;
  const N = n;
  const tokens = typeof token === "string" ? [token] : token;
  const all = Array.from(
    { length: 3 * N },
    (_, i) =>
      send(gws[i % gws.length], tokens[i % tokens.length], stream).then((a) => {
        answered++;
        return a;
      }),
  );
  const deadline = performance.now() + 10_000;
  while (!(up.arrived >= N && answered >= 2 * N) && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 5));
  }
  // Past N, a request reaching the upstream would be an admission too many: give it a moment to show.
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(up.arrived, N, "exactly N requests reached the upstream");
  up.release();
  const answers = await Promise.all(all);
  up.reset();
  return answers;
}

/**
 * A fake OpenAI-compatible upstream that thinks slowly, for the connection tests. The upstream model name
 * picks the behaviour and its delay in milliseconds:
 *
 * - `slow-<ms>`: a non-stream completion after `<ms>`; a stream whose first chunk comes after `<ms>`.
 * - `pause-<ms>`: a stream that sends its first chunk at once, is silent for `<ms>`, then finishes.
 * - `hold-0`: a non-stream completion once the test calls `release()`: a call in progress for as long as the
 *   test needs, however slow a loaded machine makes the rest of it.
 *
 * It runs on `node:http` so it sees every request its client (the gateway) aborts, whatever the body size:
 * `Deno.serve` would miss some (the very defect under test at the gateway's edge).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import http from "node:http";
import type { AddressInfo } from "node:net";

/** A running slow upstream. */
export interface SlowUpstream {
  /** Base URL including `/v1`. */
  baseURL: string;
  /** `performance.now()` of each request the gateway aborted before its answer was complete. */
  aborts: number[];
  /** How many requests arrived. */
  received(): number;
  /** Answers every `hold-0` call held so far. */
  release(): void;
  stop(): Promise<void>;
}

function chunk(delta: Record<string, unknown>, finish: string | null): string {
  return `data: ${
    JSON.stringify({
      id: "chatcmpl-slow",
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model: "slow",
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    })
  }\n\n`;
}

const COMPLETION = JSON.stringify({
  id: "chatcmpl-slow",
  object: "chat.completion",
  created: 1_700_000_000,
  model: "slow",
  choices: [{
    index: 0,
    message: { role: "assistant", content: "thought about it" },
    logprobs: null,
    finish_reason: "stop",
  }],
  usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
});

/** Starts a slow upstream on a free port. */
export async function startSlowUpstream(): Promise<SlowUpstream> {
  const aborts: number[] = [];
  let received = 0;
  const held: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    received++;
    const parts: Uint8Array[] = [];
    req.on("data", (c: Uint8Array) => parts.push(c));
    req.on("end", () => {
      const body = JSON.parse(new TextDecoder().decode(Buffer.concat(parts)));
      const [mode, ms] = String(body.model).split("-");
      const delay = Number(ms);
      const timers: ReturnType<typeof setTimeout>[] = [];
      res.on("close", () => {
        timers.forEach(clearTimeout);
        if (!res.writableFinished) aborts.push(performance.now());
      });
      if (!body.stream) {
        const answer = () => {
          if (res.writableEnded || res.destroyed) return;
          res.writeHead(200, { "content-type": "application/json" });
          res.end(COMPLETION);
        };
        if (mode === "hold") held.push(answer);
        else timers.push(setTimeout(answer, delay));
        return;
      }
      const finish = () => {
        res.write(chunk({ content: " and done" }, null));
        res.write(chunk({}, "stop"));
        res.end("data: [DONE]\n\n");
      };
      const start = () => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write(chunk({ role: "assistant", content: "thinking" }, null));
      };
      if (mode === "pause") {
        start();
        timers.push(setTimeout(finish, delay));
      } else {
        timers.push(setTimeout(() => {
          start();
          finish();
        }, delay));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    aborts,
    received: () => received,
    release: () => held.splice(0).forEach((answer) => answer()),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

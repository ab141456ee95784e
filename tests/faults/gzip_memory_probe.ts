/**
 * Run by gzip_bomb_test.ts in a process of its own with `--v8-flags=--expose-gc`: an in-process gateway reads a
 * gzip answer that the upstream holds after {@linkcode HELD_MIB} MiB (decompressed), and the probe prints, as
 * JSON, the most memory held in ArrayBuffers (after a full collection) while the gateway waits for the rest,
 * then what the client got once the upstream sends on, past the limit. ArrayBuffers are what a body read holds:
 * on Deno, keeping the 4 KiB chunks `fetch` decompresses kept the 64 KiB buffer each was read into.
 */
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { BOMB_UNIT_BYTES, gzipBomb } from "../helpers/gzip_bomb.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --v8-flags=--expose-gc");

/** Decompressed MiB the upstream sends before it holds the answer; the limit is 8 MiB. */
export const HELD_MIB = 6;
const MIB = 2 ** 20;

function arrayBuffers(): number {
  gc!();
  gc!();
  return Deno.memoryUsage().external;
}

const raw = startRawUpstream();
const gw = await startGateway(`
server:
  timeouts: { first_byte: 10s, idle: 60s, total: 5m }
  upstream_limits: { max_body_size: 8MiB }
providers:
  oai: { type: openai, base_url: "${raw.url}/v1", api_key: "sk-up" }
models:
  chat-oai: { type: chat, targets: [{ provider: oai, model: g, retries: 0 }] }
${TEST_TOKENS_YAML}`);
const out: Record<string, unknown> = {};
try {
  const bomb = await gzipBomb("", " ");
  const units = HELD_MIB - bomb.headBytes / BOMB_UNIT_BYTES;
  const open = Promise.withResolvers<void>();
  raw.next = {
    headers: { "content-type": "application/json", "content-encoding": "gzip" },
    chunks: [bomb.head, ...Array.from({ length: units + 64 }, () => bomb.unit)],
    hold: { at: 1 + units, open: open.promise },
  };
  const base = arrayBuffers();
  const answer = fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat-oai", messages: [{ role: "user", content: "hi" }] }),
  });
  // Until the gateway holds at least 90% of what it was given, then until what it holds stops changing.
  let most = 0;
  let last = -1;
  const deadline = performance.now() + 20_000;
  while (performance.now() < deadline) {
    const held = arrayBuffers() - base;
    most = Math.max(most, held);
    if (most >= 0.9 * HELD_MIB * MIB && Math.abs(held - last) < 64 * 1024) break;
    last = held;
    await new Promise((r) => setTimeout(r, 50));
  }
  out.heldMiB = HELD_MIB;
  out.mostMiB = most / MIB;
  open.resolve();
  const res = await answer;
  out.status = res.status;
  out.code = (await res.json()).error?.code;
} finally {
  await gw.stop();
  await raw.stop();
}
console.log(JSON.stringify(out));

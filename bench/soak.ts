/**
 * A soak run, bounded in time: mixed traffic against a gateway process, with client aborts, upstream faults and
 * config reloads, while the gateway's resident memory and open file descriptors are sampled from /proc. At the
 * end the gateway is stopped with SIGTERM and its usage records are counted against the API requests sent.
 *
 * `deno run -A bench/soak.ts [--seconds 120] [--concurrency 32] [--bin dist/gateway]`
 *
 * Traffic, drawn at random per request: non-stream and stream chat (read to the end), streams abandoned after
 * the first chunk, non-stream calls abandoned after 30 ms, embeddings, client mistakes (bad JSON, unknown
 * model), and requests the fake upstream answers with 429/500/503, a cut stream, or a 300 ms delay. Every
 * 5 s the config file is rewritten (a reload through the file watch) and `POST /admin/reload` is called.
 *
 * Prints one JSON line per sample and a summary; "flat" means the last quarter's memory stays within 15% (and
 * 8 MB) of the sample a quarter in, and open descriptors, once traffic stops, within 8 of that sample's (the
 * keep-alive pools of the client and of the gateway towards the upstream hold sockets by design).
 *
 * @module
 */
import { hashToken } from "../lib/auth/authenticate.ts";

const args = Deno.args;
function flag(name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
}
const SECONDS = Number(flag("seconds", "120"));
const CONCURRENCY = Number(flag("concurrency", "32"));
const BIN = flag("bin", "");

const TOKEN = "gw-soak-token-0123456789abcdef";
const ADMIN = "gw-soak-admin-0123456789abcdef";
const encoder = new TextEncoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The fake upstream: what it does is chosen by the `fault` field the soak client puts in the request. */
function startUpstream() {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    encoder.encode(`data: ${
      JSON.stringify({
        id: "chatcmpl-soak",
        object: "chat.completion.chunk",
        created: 1_700_000_000,
        model: "soak",
        choices: [{ index: 0, delta, finish_reason: finish }],
      })
    }\n\n`);
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const body = await request.json().catch(() => ({}));
    const fault = String(body.fault ?? "");
    if (fault === "delay") await sleep(300);
    if (fault === "429" || fault === "500" || fault === "503") {
      return Response.json({ error: { message: `soak ${fault}`, type: "server_error" } }, {
        status: Number(fault),
      });
    }
    if (new URL(request.url).pathname.endsWith("/embeddings")) {
      return Response.json({
        object: "list",
        data: [{ object: "embedding", index: 0, embedding: [0.1, 0.2, 0.3] }],
        usage: { prompt_tokens: 2, total_tokens: 2 },
      });
    }
    if (body.stream !== true) {
      return Response.json({
        id: "chatcmpl-soak",
        object: "chat.completion",
        created: 1_700_000_000,
        model: "soak",
        choices: [{
          index: 0,
          message: { role: "assistant", content: "soak answer" },
          finish_reason: "stop",
        }],
        usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
      });
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(chunk({ role: "assistant", content: "" }));
        for (let i = 0; i < 8; i++) {
          await new Promise((r) => timer = setTimeout(r, 15));
          // Ends without a finish reason or [DONE]: the gateway reports a cut stream to its client.
          if (fault === "cut" && i === 3) return controller.close();
          controller.enqueue(chunk({ content: `w${i} ` }));
        }
        controller.enqueue(chunk({}, "stop"));
        controller.enqueue(encoder.encode("data: [DONE]\n\n"));
        controller.close();
      },
      cancel: () => clearTimeout(timer),
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream" } });
  });
}

function configText(upstreamPort: number, dir: string, generation: number): string {
  return `# generation ${generation}
server: { shutdown_timeout: 5s, timeouts: { first_byte: 5s, idle: 5s, total: 30s } }
routing: { eject_after: 1000000 }
providers:
  soak: { type: openai, base_url: "http://127.0.0.1:${upstreamPort}/v1", api_key: sk-soak-upstream-key-0123456789 }
models:
  chat-soak: { type: chat, targets: [{ provider: soak, model: soak, weight: ${
    1 + (generation % 3)
  }, retries: 0 }] }
  embed-soak: { type: embedding, targets: [{ provider: soak, model: soak-embed }] }
tokens:
  - { name: soak, environment: soak, sha256: ${hashToken(TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: soak-admin, environment: soak, sha256: ${hashToken(ADMIN)} }
usage: { sqlite: "${dir}/usage.sqlite", jsonl: "${dir}/usage.jsonl", spill: "${dir}/spill.jsonl" }
`;
}

/** One request of a random kind; resolves when the client is done with it (however it ended). */
async function oneRequest(base: string): Promise<string> {
  const roll = Math.random();
  const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
  const chat = (extra: Record<string, unknown>) =>
    JSON.stringify({ model: "chat-soak", messages: [{ role: "user", content: "soak" }], ...extra });
  const controller = new AbortController();
  try {
    if (roll < 0.25) {
      const r = await fetch(`${base}/v1/chat/completions`, { method: "POST", headers, body: chat({}) });
      await r.arrayBuffer();
      return "chat";
    }
    if (roll < 0.45) {
      const r = await fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers,
        body: chat({ stream: true }),
      });
      await r.arrayBuffer();
      return "stream";
    }
    if (roll < 0.55) {
      const r = await fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers,
        body: chat({ stream: true }),
        signal: controller.signal,
      });
      const reader = r.body!.getReader();
      await reader.read();
      controller.abort();
      return "stream_abandoned";
    }
    if (roll < 0.62) {
      const pending = fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers,
        body: chat({ fault: "delay" }),
        signal: controller.signal,
      });
      await sleep(30);
      controller.abort();
      await pending.catch(() => {});
      return "call_abandoned";
    }
    if (roll < 0.72) {
      const r = await fetch(`${base}/v1/embeddings`, {
        method: "POST",
        headers,
        body: JSON.stringify({ model: "embed-soak", input: "soak" }),
      });
      await r.arrayBuffer();
      return "embeddings";
    }
    if (roll < 0.8) {
      const body = Math.random() < 0.5 ? "{not json" : JSON.stringify({ model: "nope", messages: [] });
      const r = await fetch(`${base}/v1/chat/completions`, { method: "POST", headers, body });
      await r.arrayBuffer();
      return "client_mistake";
    }
    const faults = ["429", "500", "503", "cut", "delay"];
    const fault = faults[Math.floor(Math.random() * faults.length)];
    const r = await fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers,
      body: chat({ fault, stream: fault === "cut" }),
    });
    await r.arrayBuffer();
    return `fault_${fault}`;
  } catch {
    return "client_error";
  }
}

function sample(pid: number) {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  let fds = 0;
  for (const _ of Deno.readDirSync(`/proc/${pid}/fd`)) fds++;
  return { rss_mb: Math.round(rssKb / 102.4) / 10, fds };
}

async function main() {
  const upstream = startUpstream();
  const dir = await Deno.makeTempDir({ prefix: "soak-" });
  const configFile = `${dir}/gateway.yaml`;
  let generation = 0;
  await Deno.writeTextFile(configFile, configText(upstream.addr.port, dir, generation));
  const port = 18_000 + Math.floor(Math.random() * 2000);
  const cmd = BIN
    ? new Deno.Command(BIN, {
      args: ["serve", "--config", configFile, "--port", String(port)],
      stdout: "null",
    })
    : new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "main.ts", "serve", "--config", configFile, "--port", String(port)],
      stdout: "null",
    });
  const child = cmd.spawn();
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0;; i++) {
    if (await fetch(`${base}/healthz`).then((r) => r.ok, () => false)) break;
    if (i > 200) throw new Error("gateway did not start");
    await sleep(50);
  }

  const counts: Record<string, number> = {};
  let apiRequests = 0;
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  const samples: { t: number; rss_mb: number; fds: number; requests: number }[] = [];
  const record = () => {
    const s = {
      t: Math.round((performance.now() - started) / 1000),
      ...sample(child.pid),
      requests: apiRequests,
    };
    samples.push(s);
    console.log(JSON.stringify(s));
  };
  record();
  const sampler = setInterval(record, 5000);
  const reloader = setInterval(async () => {
    generation++;
    await Deno.writeTextFile(configFile, configText(upstream.addr.port, dir, generation));
    await fetch(`${base}/admin/reload`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}` } })
      .then((r) => r.arrayBuffer()).catch(() => {});
  }, 5000);
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (performance.now() < deadline) {
      const kind = await oneRequest(base);
      counts[kind] = (counts[kind] ?? 0) + 1;
      if (kind !== "client_error") apiRequests++;
    }
  }));
  clearInterval(reloader);
  clearInterval(sampler);
  await sleep(3000);
  record();
  child.kill("SIGTERM");
  const status = await child.status;
  await upstream.shutdown();
  const lines = (await Deno.readTextFile(`${dir}/usage.jsonl`).catch(() => "")).trim().split("\n");
  const records = lines.filter((l) => l.trim() !== "").map((l) => JSON.parse(l));
  const ids = new Set(records.map((r) => r.request_id));

  const quarter = (q: number) => samples[Math.min(samples.length - 1, Math.floor((samples.length - 1) * q))];
  const warm = quarter(0.25).rss_mb;
  const late = Math.max(...samples.slice(Math.floor(samples.length * 0.75)).map((s) => s.rss_mb));
  const summary = {
    runtime: BIN ? `binary ${BIN}` : "deno",
    seconds: SECONDS,
    concurrency: CONCURRENCY,
    api_requests: apiRequests,
    by_kind: counts,
    reloads: generation,
    rss_mb: { first: samples[0].rss_mb, warm, late_max: late, after_idle: samples.at(-1)!.rss_mb },
    fds: {
      first: samples[0].fds,
      warm: quarter(0.25).fds,
      max: Math.max(...samples.map((s) => s.fds)),
      after_idle: samples.at(-1)!.fds,
    },
    memory_flat: late <= Math.max(warm * 1.15, warm + 8),
    // Keep-alive pools (the soak client's and the gateway's own to the upstream) hold sockets by design.
    fds_flat: samples.at(-1)!.fds <= quarter(0.25).fds + 8,
    exit_code: status.code,
    usage_records: records.length,
    distinct_request_ids: ids.size,
  };
  console.log(JSON.stringify(summary, null, 2));
  await Deno.remove(dir, { recursive: true });
}

if (import.meta.main) await main();

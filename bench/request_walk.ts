/**
 * How many of the gateway's files one request runs through (docs/architecture.md, "Three requests, followed").
 *
 * The gateway and the test fakes run in a child process under the V8 inspector; this process sends each
 * request over a real socket after one warm-up request of the same kind, with V8's precise coverage (call
 * counts) reset just before it and taken once its answer has been read and its usage record queued. A file is
 * **visited** when a function defined in it ran (a module's top level, i.e. its imports and constants, does not
 * count). Only `lib/` counts, without the runtime edge (`lib/runtime/`); the usage pipeline's drain runs on a
 * timer set to an hour here, so it stays out of the window.
 *
 *     deno run -A bench/request_walk.ts            # the table, and each walk's files
 *
 * @module
 */
import { startFakeAnthropic } from "../tests/helpers/fake_anthropic.ts";
import { FAKE_KEY, startFakeOpenAI } from "../tests/helpers/fake_openai.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../tests/helpers/gateway.ts";
import { FAKE_ANTHROPIC_KEY } from "../tests/helpers/fake_anthropic.ts";

/** One request to follow. */
interface Walk {
  name: string;
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

const WALKS: Walk[] = [
  {
    name: "non-streamed `POST /v1/chat/completions` → Anthropic",
    path: "/v1/chat/completions",
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
    body: { model: "claude", messages: [{ role: "user", content: "Hi" }] },
  },
  {
    name: "streamed `POST /v1/responses` → OpenAI-compatible (translated)",
    path: "/v1/responses",
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
    body: { model: "gpt", input: "Hi", stream: true },
  },
  {
    name: "streamed `POST /v1/messages` → Anthropic (native passthrough)",
    path: "/v1/messages",
    headers: { "x-api-key": TEST_TOKEN, "anthropic-version": "2023-06-01" },
    body: { model: "claude", max_tokens: 100, messages: [{ role: "user", content: "Hi" }], stream: true },
  },
];

/** The child: fakes and an in-process gateway; prints the gateway's URL, then serves until killed. */
async function child(): Promise<void> {
  const openai = startFakeOpenAI();
  const anthropic = startFakeAnthropic();
  const dir = await Deno.makeTempDir();
  const gateway = await startGateway(`
server: { host: 127.0.0.1, port: 0 }
providers:
  oai: { type: openai, base_url: "${openai.baseURL}", api_key: "${FAKE_KEY}" }
  claude: { type: anthropic, base_url: "${anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
models:
  gpt: { type: chat, targets: [{ provider: oai, model: gpt-4o-mini }] }
  claude: { type: chat, targets: [{ provider: claude, model: claude-ok }] }
  chat-unused: { type: chat, targets: [{ provider: oai, model: gpt-4o-mini }] }
usage: { sqlite: "${dir}/usage.sqlite", spill: "${dir}/spill.jsonl", flush_interval: 1h }
${TEST_TOKENS_YAML}`);
  console.log(JSON.stringify({ url: gateway.url }));
  await new Promise(() => {});
}

/** A minimal Chrome DevTools Protocol client over the inspector's WebSocket. */
class Inspector {
  #next = 1;
  #waiting = new Map<number, (result: unknown) => void>();
  constructor(private socket: WebSocket) {
    socket.onmessage = (event) => {
      const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: unknown };
      if (message.id === undefined) return;
      const resolve = this.#waiting.get(message.id);
      this.#waiting.delete(message.id);
      resolve?.(message.error ? Promise.reject(new Error(JSON.stringify(message.error))) : message.result);
    };
  }
  static async open(url: string): Promise<Inspector> {
    const socket = new WebSocket(url);
    await new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = reject;
    });
    return new Inspector(socket);
  }
  send<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.#next++;
    this.socket.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve) => this.#waiting.set(id, resolve as (result: unknown) => void));
  }
  close() {
    this.socket.close();
  }
}

interface ScriptCoverage {
  url: string;
  functions: { functionName: string; ranges: { startOffset: number; endOffset: number; count: number }[] }[];
}

/** The `lib/` files (outside `lib/runtime/`) in which a function other than the module's top level ran. */
function visited(coverage: ScriptCoverage[], root: string): string[] {
  const files: string[] = [];
  for (const script of coverage) {
    if (!script.url.startsWith(`${root}/lib/`) || script.url.startsWith(`${root}/lib/runtime/`)) continue;
    const ran = script.functions.some((f) =>
      f.ranges[0].count > 0 && !(f.functionName === "" && f.ranges[0].startOffset === 0)
    );
    if (ran) files.push(script.url.slice(root.length + 5));
  }
  return files.sort();
}

async function parent(): Promise<void> {
  const root = new URL("..", import.meta.url).href.replace(/\/$/, "");
  const process = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--inspect=127.0.0.1:0", new URL(import.meta.url).pathname, "--child"],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const decoder = new TextDecoder();
  const stderr = process.stderr.getReader();
  let ws = "";
  while (!ws) {
    const { value, done } = await stderr.read();
    if (done) throw new Error("the child ended before its inspector opened");
    ws = /ws:\/\/\S+/.exec(decoder.decode(value))?.[0] ?? "";
  }
  const inspector = await Inspector.open(ws);
  await inspector.send("Profiler.enable");
  await inspector.send("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
  const stdout = process.stdout.getReader();
  let line = "";
  while (!line.includes("\n")) line += decoder.decode((await stdout.read()).value);
  const { url } = JSON.parse(line.slice(0, line.indexOf("\n"))) as { url: string };

  const send = async (walk: Walk) => {
    const response = await fetch(`${url}${walk.path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...walk.headers },
      body: JSON.stringify(walk.body),
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${walk.name}: ${response.status} ${text}`);
    // The usage record is queued once the body has ended (a stream's after its token count): give it a moment.
    await new Promise((resolve) => setTimeout(resolve, 300));
  };
  const rows: string[] = [];
  for (const walk of WALKS) {
    await send(walk);
    await inspector.send("Profiler.takePreciseCoverage"); // resets the counts
    await send(walk);
    const { result } = await inspector.send<{ result: ScriptCoverage[] }>("Profiler.takePreciseCoverage");
    const files = visited(result, root);
    const folders = new Set(files.map((f) => f.includes("/") ? f.slice(0, f.lastIndexOf("/")) : "."));
    rows.push(`| ${walk.name} | ${files.length} | ${folders.size} |`);
    console.log(`\n${walk.name}: ${files.length} files in ${folders.size} folders\n  ${files.join("\n  ")}`);
  }
  console.log("\n| request | files visited | folders |\n|---|---|---|");
  for (const row of rows) console.log(row);
  inspector.close();
  process.kill();
  await process.status;
}

if (Deno.args.includes("--child")) await child();
else await parent();

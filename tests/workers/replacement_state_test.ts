/**
 * A worker that replaces a dead one serves in exactly the state of its siblings. The keys taken only at start
 * (`config/start_only.ts`) keep what the gateway started with until a restart, on every worker: a reload that
 * changes one is named in `restart_required` and changes nothing. A replacement started after such a reload takes
 * them from the gateway's start too, and the keys a reload does change from the latest reload, as its siblings did.
 *
 * @module
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startPool, until, workerOf } from "../helpers/worker_pool.ts";

const SECRET = "gw-replaced-free-0123456789abcdef";
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A held keep-alive connection's first answer: its status and which worker gave it. */
interface Held {
  conn: Deno.TcpConn;
  status: number;
  worker: string;
}

/** Opens a connection, asks `GET /healthz` on it and reads the answer's head, leaving the connection open. */
async function hold(port: number): Promise<Held> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(encoder.encode("GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"));
  let head = "";
  const buf = new Uint8Array(4096);
  while (!head.includes("\r\n\r\n")) {
    const n = await conn.read(buf);
    if (n === null) break;
    head += decoder.decode(buf.subarray(0, n));
  }
  const id = /\r\nx-request-id: *([^\r]+)/i.exec(head)?.[1] ?? "";
  return { conn, status: Number(head.slice(9, 12)), worker: workerOf(id) };
}

/** A chat request on a connection of its own: its status and which worker answered. */
async function chat(url: string, model: string): Promise<{ status: number; worker: string }> {
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${SECRET}`, "content-type": "application/json", connection: "close" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });
  await r.body?.cancel();
  return { status: r.status, worker: workerOf(r.headers.get("x-request-id") ?? "") };
}

Deno.test("workers: a replacement worker keeps the start-only keys the gateway started with, and serves the latest reload", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/gateway.yaml`;
  const yaml = (maxConnections: number, extraModel: string) => `
usage: { sqlite: none }
server: { connections: { max_connections: ${maxConnections} } }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
${extraModel}
tokens:
  - { name: free, sha256: ${hashToken(SECRET)}, models: ["*"] }
`;
  await Deno.writeTextFile(file, yaml(200, ""));
  const { gw, logs, url } = await startPool(file);
  const held: Deno.TcpConn[] = [];
  try {
    // Both workers' request-id prefixes, to tell the replacement by its new one.
    const before = new Set<string>();
    for (let i = 0; i < 64 && before.size < 2; i++) before.add((await chat(url, "chat-echo")).worker);
    assert.equal(before.size, 2, "both workers answered");

    // A start-only key (one connection per worker, if it took) and a reloadable one (a new alias) change.
    await Deno.writeTextFile(
      file,
      yaml(2, "  chat-new: { type: chat, targets: [ { provider: local, model: echo } ] }"),
    );
    const status = await gw.reloader.reload("admin");
    assert.ok(status.ok, JSON.stringify(status.issues));
    assert.deepEqual(status.restart_required, ["server.connections.max_connections"]);

    gw.kill(1);
    await until(() => logs.some((l) => l.msg === "worker_restarted"), "the replacement");

    // Connections held open one more at a time, until the replacement holds three at once: with the gateway's
    // start's 200 (100 a worker) it takes them all; with the reload's 2 (one a worker) it would refuse the second.
    let replacement = 0;
    for (let i = 0; i < 64 && replacement < 3; i++) {
      const answer = await hold(gw.server.port);
      held.push(answer.conn);
      assert.equal(answer.status, 200, `connection ${i + 1} refused (${replacement} on the replacement)`);
      if (!before.has(answer.worker)) replacement++;
    }
    assert.equal(replacement, 3, "the replacement held three connections at once");

    // The key a reload changes did change on the replacement: the new alias is served whichever worker answers.
    const answers: { status: number; worker: string }[] = [];
    for (let i = 0; i < 64 && answers.filter((a) => !before.has(a.worker)).length < 2; i++) {
      answers.push(await chat(url, "chat-new"));
    }
    assert.ok(answers.some((a) => !before.has(a.worker)), "the replacement answered");
    assert.deepEqual(answers.map((a) => a.status), answers.map(() => 200));
  } finally {
    for (const conn of held) conn.close();
    await gw.stop(1_000);
    await Deno.remove(dir, { recursive: true });
  }
});

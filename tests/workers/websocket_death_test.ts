/**
 * Every message of a Responses WebSocket is a request with one usage record, however its connection ends, also
 * with `serve --workers N`: a worker that dies with a connection open records the message it was answering and
 * the messages waiting behind it as failed (500 `worker_failed`), each once; a connection the client closes, or
 * the gateway's shutdown, records each once too, as a single process does.
 *
 * @module
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { type Gated, startGated } from "../helpers/gated_upstream.ts";
import { gatedConfig, startPool, until } from "../helpers/worker_pool.ts";

const SECRET = "gw-wsdeath-free-0123456789abcdef";

/** A pool on a gated upstream, usage in SQLite in a fresh directory. */
async function gatedPool(up: Gated) {
  const { dir, file } = await gatedConfig(up.baseURL, { name: "free", secret: SECRET });
  return { dir, ...await startPool(file) };
}

/**
 * A WebSocket with three `response.create` messages sent at once: the first held upstream, two waiting behind it,
 * once the primary knows all three open in one worker. Resolves with the socket, its messages' request-id prefix
 * and that worker's number.
 */
async function busySocket(url: string, up: Gated, open: (index: number) => number) {
  const id = `ws-${crypto.randomUUID().slice(0, 8)}`;
  // Deno's WebSocket takes handshake headers as an extension of the standard constructor.
  const headers = { authorization: `Bearer ${SECRET}`, "x-request-id": id };
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}/v1/responses`, { headers } as unknown as string[]);
  const closed = new Promise<void>((r) => ws.addEventListener("close", () => r(), { once: true }));
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error("handshake failed"));
  });
  const arrived = up.arrived;
  for (let i = 0; i < 3; i++) {
    ws.send(JSON.stringify({ type: "response.create", model: "chat-gated", input: "hi" }));
  }
  await until(() => up.arrived === arrived + 1, "the first message held upstream");
  await until(() => open(0) + open(1) === 3, "the primary to know the three messages open");
  return { ws, closed, id, worker: open(0) > 0 ? 0 : 1 };
}

/** The records of the messages of the connection `id`, as `<n> <status> <error_code>`, by message number. */
function records(dir: string, id: string): string[] {
  const db = new DatabaseSync(`${dir}/usage.sqlite`, { readOnly: true });
  try {
    const rows = db.prepare("SELECT request_id, status, error_code FROM usage WHERE request_id LIKE ?")
      .all(`${id}.%`) as { request_id: string; status: number; error_code: string | null }[];
    return rows.map((r) => `${r.request_id.slice(id.length + 1)} ${r.status} ${r.error_code}`).sort();
  } finally {
    db.close();
  }
}

Deno.test("workers: a worker dying with a WebSocket open records its message in progress and those waiting, once each", async () => {
  const up = startGated();
  const { dir, gw, logs, url } = await gatedPool(up);
  try {
    const { closed, id, worker } = await busySocket(url, up, gw.open);
    gw.kill(worker);
    await closed;
    await until(() => logs.some((l) => l.msg === "worker_restarted"), "the replacement");
    const died = logs.find((l) => l.msg === "worker_died")!;
    assert.equal(died.open_requests, 3);
    assert.equal(died.recorded, 3);
    up.release();
    await gw.stop(5_000);
    assert.deepEqual(records(dir, id), ["1 500 worker_failed", "2 500 worker_failed", "3 500 worker_failed"]);
  } finally {
    up.release();
    await gw.stop(1_000);
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("workers: a WebSocket the client closes, or the shutdown ends, leaves one record a message", async () => {
  const up = startGated();
  const { dir, gw, url } = await gatedPool(up);
  try {
    // The client leaves: every message is over once the primary knows none open.
    const left = await busySocket(url, up, gw.open);
    left.ws.close();
    await left.closed;
    await until(() => gw.open(0) + gw.open(1) === 0, "the three messages to be over");

    // The gateway shuts down with the next connection busy: the message held upstream is cut past the grace.
    up.release();
    up.reset();
    const ended = await busySocket(url, up, gw.open);
    await gw.stop(200);
    await ended.closed;
    up.release();

    const gone = [
      "1 499 client_closed_request",
      "2 499 client_closed_request",
      "3 499 client_closed_request",
    ];
    assert.deepEqual(records(dir, left.id), gone);
    const cut = ["1 503 server_shutdown", "2 503 server_shutdown", "3 503 server_shutdown"];
    assert.deepEqual(records(dir, ended.id), cut);
  } finally {
    up.release();
    await gw.stop(1_000);
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

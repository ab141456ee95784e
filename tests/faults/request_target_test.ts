/**
 * The request line decides which endpoint serves a request, whatever the Host header says: a Host holding `/`,
 * `?`, `#`, `@` or a space neither moves the request to another endpoint nor breaks it, and a request target
 * in absolute form (RFC 9112 §3.2.2: a server must accept it) is served as its path. Over raw sockets, in-process
 * (the `node:http` edge on Deno) or as the single binary when `GATEWAY_BIN` is set (Bun's edge).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { connect, rawExchange, readResponse, send } from "../helpers/raw_http.ts";

const TOKEN = "gw-request-target-0123456789abcdef";

const CONFIG = `
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
  - { name: target, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`;

const encoder = new TextEncoder();

/** One POST of `body` with `target` on its request line and `host` as its Host header, over a fresh socket. */
async function post(
  gw: TestGateway,
  target: string,
  host: string,
  body: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const json = JSON.stringify(body);
  const conn = await connect(gw.url);
  try {
    await send(
      conn,
      `POST ${target} HTTP/1.1\r\nhost: ${host}\r\nauthorization: Bearer ${TOKEN}\r\nx-api-key: ${TOKEN}\r\n` +
        `anthropic-version: 2023-06-01\r\ncontent-type: application/json\r\n` +
        `content-length: ${encoder.encode(json).byteLength}\r\nconnection: close\r\n\r\n${json}`,
    );
    const answer = await readResponse(conn);
    return { status: answer.status, body: JSON.parse(answer.body) };
  } finally {
    try {
      conn.close();
    } catch {
      // closed by the server
    }
  }
}

const CHAT = { model: "chat-echo", messages: [{ role: "user", content: "hello" }] };
const MESSAGES = { model: "chat-echo", max_tokens: 20, messages: [{ role: "user", content: "hello" }] };
const GEMINI = { contents: [{ role: "user", parts: [{ text: "hello" }] }] };

/** Host headers that name no host, each one a way to splice a path into a URL built from it. */
const HOSTILE_HOSTS = [
  "h/v1/messages?",
  "h/v1/embeddings#",
  "h/admin/reload#",
  "user@elsewhere",
  "a b",
  "h\\v1",
];

Deno.test("request target: the request line's path is served, whatever the Host header holds", async () => {
  const gw = await startGateway(CONFIG);
  try {
    for (const host of HOSTILE_HOSTS) {
      const chat = await post(gw, "/v1/chat/completions", host, CHAT);
      assert.equal(chat.status, 200, `chat, Host ${host}: ${JSON.stringify(chat.body)}`);
      assert.equal(chat.body.object, "chat.completion", `chat, Host ${host}`);
      const messages = await post(gw, "/v1/messages", host, MESSAGES);
      assert.equal(messages.status, 200, `messages, Host ${host}: ${JSON.stringify(messages.body)}`);
      assert.equal(messages.body.type, "message", `messages, Host ${host}`);
      // Gemini's route reads its query (alt=sse), so its URL must parse too.
      const gemini = await post(gw, "/v1beta/models/chat-echo:generateContent", host, GEMINI);
      assert.equal(gemini.status, 200, `gemini, Host ${host}: ${JSON.stringify(gemini.body)}`);
      assert.ok(Array.isArray(gemini.body.candidates), `gemini, Host ${host}`);
    }
    const logged = gw.logs.filter((l) => l.msg === "request").map((l) => l.path);
    assert.ok(!logged.some((p) => typeof p === "string" && /embeddings|admin/.test(p)), String(logged));
  } finally {
    await gw.stop();
  }
});

Deno.test("request target: the absolute form is served as its path", async () => {
  const gw = await startGateway(CONFIG);
  try {
    const chat = await post(gw, `${gw.url}/v1/chat/completions`, "127.0.0.1", CHAT);
    assert.equal(chat.status, 200, JSON.stringify(chat.body));
    assert.equal(chat.body.object, "chat.completion");
    // Its own authority is not the gateway's concern either: the path is what is served.
    const elsewhere = await post(gw, "http://elsewhere.example/v1/messages", "127.0.0.1", MESSAGES);
    assert.equal(elsewhere.status, 200, JSON.stringify(elsewhere.body));
    assert.equal(elsewhere.body.type, "message");
  } finally {
    await gw.stop();
  }
});

/** Sends `request` whole on a fresh socket: the answer's status, headers (names lowercased) and body. */
async function exchange(
  gw: TestGateway,
  request: string,
): Promise<{ status: number; headers: Map<string, string>; body: string }> {
  const text = await rawExchange(Number(new URL(gw.url).port), request, new Uint8Array(), 5_000);
  const end = text.indexOf("\r\n\r\n");
  const [statusLine, ...lines] = text.slice(0, end < 0 ? text.length : end).split("\r\n");
  const headers = new Map(
    lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
  );
  return { status: Number(statusLine.split(" ")[1]), headers, body: end < 0 ? "" : text.slice(end + 4) };
}

Deno.test("request target: an expectation other than 100-continue is ignored and the request served", async () => {
  const gw = await startGateway(CONFIG);
  try {
    const json = JSON.stringify(CHAT);
    const answer = await exchange(
      gw,
      `POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${TOKEN}\r\n` +
        `content-type: application/json\r\ncontent-length: ${json.length}\r\nexpect: foo\r\n` +
        `x-request-id: expects-foo\r\nconnection: close\r\n\r\n${json}`,
    );
    assert.equal(answer.status, 200, answer.body);
    assert.equal(JSON.parse(answer.body).object, "chat.completion");
    await waitForLog(gw, (l) => l.msg === "request" && l.request_id === "expects-foo" && l.status === 200);

    // 100-continue keeps its meaning: the body is asked for, then the request is served.
    const conn = await connect(gw.url);
    try {
      await send(
        conn,
        `POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${TOKEN}\r\n` +
          `content-type: application/json\r\ncontent-length: ${json.length}\r\nexpect: 100-continue\r\n\r\n`,
      );
      const buf = new Uint8Array(1024);
      const interim = new TextDecoder().decode(buf.subarray(0, await conn.read(buf) ?? 0));
      assert.match(interim, /^HTTP\/1\.1 100 /, interim);
      await send(conn, json);
      const served = await readResponse(conn);
      assert.equal(served.status, 200, served.body);
    } finally {
      conn.close();
    }
  } finally {
    await gw.stop();
  }
});

Deno.test("request target: TRACE and CONNECT get the 405 of their path, in OpenAI's shape", async () => {
  const gw = await startGateway(CONFIG);
  try {
    const trace = await exchange(
      gw,
      `TRACE /v1/models HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${TOKEN}\r\nconnection: close\r\n\r\n`,
    );
    assert.equal(trace.status, 405, trace.body);
    assert.equal(trace.headers.get("allow"), "GET, HEAD");
    assert.equal(JSON.parse(trace.body).error.code, "method_not_allowed");

    const connectPath = await exchange(gw, `CONNECT /v1/chat/completions HTTP/1.1\r\nhost: gw\r\n\r\n`);
    assert.equal(connectPath.status, 405, connectPath.body);
    assert.equal(connectPath.headers.get("allow"), "POST");
    assert.equal(JSON.parse(connectPath.body).error.code, "method_not_allowed");

    // A tunnel to another host (authority form): no path of the gateway's, and the gateway is no proxy.
    const tunnel = await exchange(
      gw,
      `CONNECT elsewhere.example:443 HTTP/1.1\r\nhost: elsewhere.example:443\r\n\r\n`,
    );
    assert(tunnel.status >= 400 && tunnel.status < 500, `${tunnel.status} ${tunnel.body}`);
    assert.equal(typeof JSON.parse(tunnel.body).error.message, "string");
  } finally {
    await gw.stop();
  }
});

Deno.test("request target: a 405 names the path cut to 100 characters, not the whole of a long one", async () => {
  const gw = await startGateway(CONFIG);
  try {
    const long = "A".repeat(12_000);
    for (const [method, path] of [["PUT", `/v1/models/${long}`], ["DELETE", `/v1beta/models/${long}`]]) {
      const answer = await exchange(
        gw,
        `${method} ${path} HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${TOKEN}\r\nconnection: close\r\n\r\n`,
      );
      assert.equal(answer.status, 405, answer.body.slice(0, 200));
      assert.ok(answer.body.length < 1_000, `${method}: a ${answer.body.length}-byte answer echoes the path`);
    }
  } finally {
    await gw.stop();
  }
});

Deno.test("request target: a WebSocket handshake whose target is no path is the 400 of the same request without Upgrade", async () => {
  const gw = await startGateway(CONFIG);
  try {
    for (const target of ["*", "ftp://elsewhere.example/v1/responses"]) {
      const head = (upgrade: boolean) =>
        `GET ${target} HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${TOKEN}\r\n` +
        (upgrade
          ? "upgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-version: 13\r\n" +
            "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
          : "connection: close\r\n") +
        "\r\n";
      const plain = await exchange(gw, head(false));
      const upgrade = await exchange(gw, head(true));
      assert.ok(plain.status >= 400 && plain.status < 500, `${target} plain: ${plain.status} ${plain.body}`);
      // The very answer: on Deno the edge's JSON 400, on Bun its HTTP parser's bare 400.
      assert.deepEqual([upgrade.status, upgrade.body], [plain.status, plain.body], `${target} upgrade`);
    }
  } finally {
    await gw.stop();
  }
});

const ADMIN = "gw-request-target-admin-0123456789";

/**
 * Targets whose raw path has a dot segment, each in a spelling the URL parser resolves: served as they resolve,
 * a proxy allowing `/v1/*` and blocking `/admin/*` by the path it saw would be walked past.
 */
const DOTTED = [
  "/v1/%2e%2e/admin/tokens",
  "/v1/%2E%2e/admin/tokens",
  "/v1/.%2e/admin/tokens",
  "/v1/%2e./admin/tokens",
  "/v1/../admin/tokens",
  "/v1/./../admin/tokens",
  "/v1/%2e/../admin/tokens",
  "/v1\\..\\admin\\tokens",
  "/v1/x\\%2e%2e/../admin/tokens",
  "/x//../../admin/tokens",
  "/v1/chat/%2e%2e/embeddings",
  "/admin/%2e%2e/v1/models",
  "http://elsewhere.example/v1/%2e%2e/admin/tokens",
  // Ending in `/` (the console's page is `/console/`), with or without an empty segment before.
  "/v1/%2e%2e/console/",
  "/v1/../console/",
  "/console/./",
  "/x//../../console/",
];

Deno.test("request target: a raw path with a dot segment in any spelling is refused, not served as it resolves", async () => {
  const gw = await startGateway(`${CONFIG}admin_tokens:\n  - { name: ops, sha256: ${hashToken(ADMIN)} }\n`);
  try {
    const get = (target: string, token = ADMIN, extra = "") =>
      exchange(
        gw,
        `GET ${target} HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${token}\r\n${extra}connection: close\r\n\r\n`,
      );
    // The admin API answers its own path; what follows is refused on both edges, admin token or not.
    const direct = await get("/admin/tokens");
    assert.equal(direct.status, 200, direct.body);
    for (const target of DOTTED) {
      const answer = await get(target);
      assert.equal(answer.status, 400, `${target}: ${answer.status} ${answer.body}`);
      assert.equal(JSON.parse(answer.body).error.code, "invalid_path", target);
      assert.equal(answer.headers.get("cache-control"), "no-store", target);
      assert.equal(answer.headers.get("content-type"), "application/json", target);
    }
    // A WebSocket handshake (the Responses API's) is refused alike, before it is upgraded.
    const upgrade = await get(
      "/v1/%2e%2e/v1/responses",
      TOKEN,
      "upgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-version: 13\r\n" +
        "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
    );
    assert.equal(upgrade.status, 400, upgrade.body);
    assert.equal(JSON.parse(upgrade.body).error.code, "invalid_path");

    // Dots that are no segment, or not in the path, are a path like any other.
    const models = await get("/v1/models/...", TOKEN);
    assert.notEqual(JSON.parse(models.body).error?.code, "invalid_path", models.body);
    const hidden = await get("/v1/models/.hidden", TOKEN);
    assert.notEqual(JSON.parse(hidden.body).error?.code, "invalid_path", hidden.body);
    const chat = await post(gw, "/v1/chat/completions?next=/../admin", "gw", CHAT);
    assert.equal(chat.status, 200, JSON.stringify(chat.body));
    // An empty segment is no dot segment: the path is served (here: no route), not refused.
    const empty = await get("/v1//models", TOKEN);
    assert.notEqual(JSON.parse(empty.body).error?.code, "invalid_path", empty.body);
    const page = await get("/console/", TOKEN);
    assert.equal(page.status, 200, "the console's page, asked for as it is");
  } finally {
    await gw.stop();
  }
});

/**
 * Issue 15's token lifecycle over a real socket, with the openai SDK as the client (and the usage database's
 * SQLite token store, as a single node runs it):
 * - a token issued through `/admin/tokens` works at once; disabled, it is refused with `token_disabled`;
 *   revoked, the SDK's next call fails with 401;
 * - acceptance 4: after a rotation with a grace period both secrets work, after it only the new one;
 * - acceptance 3: without an admin token configured every `/admin` route answers 401, and a client token is
 *   refused on every one of them when there is one;
 * - `/readyz` reports the token store;
 * - issue 20: 20 rotations of one token at once all take effect, leaving what the same rotations one after
 *   another leave (checked by authenticating with every secret handed out); 12 creates of one name at once give
 *   one 201 and eleven 409 `token_name_taken`.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { adminCall, checkOneCreate, checkSerialRotations, race } from "../helpers/token_races.ts";
import { connect, readResponse, send } from "../helpers/raw_http.ts";

const ADMIN = "gw-lifecycle-admin-0123456789abcdef";
const CLIENT = "gw-lifecycle-client-0123456789abcdef";

function config(admin: boolean): string {
  return `
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  chat-other: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
  - { name: file-client, environment: test, sha256: ${hashToken(CLIENT)}, models: ["*"] }
${admin ? `admin_tokens:\n  - { name: ops, sha256: ${hashToken(ADMIN)} }\n` : ""}`;
}

function admin(
  gw: TestGateway,
  method: string,
  path: string,
  body?: unknown,
  token = ADMIN,
): Promise<Response> {
  return fetch(`${gw.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function adminJson(gw: TestGateway, method: string, path: string, body?: unknown) {
  const response = await admin(gw, method, path, body);
  const json = await response.json();
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

function client(gw: TestGateway, secret: string): OpenAI {
  return new OpenAI({ apiKey: secret, baseURL: gw.baseURL, maxRetries: 0 });
}

async function ask(sdk: OpenAI, model = "chat-echo"): Promise<string> {
  const answer = await sdk.chat.completions.create({ model, messages: [{ role: "user", content: "ping" }] });
  return answer.choices[0].message.content ?? "";
}

/** The SDK's error for a refused call: its status and code. */
async function refusal(sdk: OpenAI, model = "chat-echo"): Promise<{ status: number; code: unknown }> {
  try {
    await ask(sdk, model);
  } catch (err) {
    assert.ok(err instanceof OpenAI.APIError, String(err));
    return { status: err.status ?? 0, code: err.code };
  }
  assert.fail("the call was expected to be refused");
}

Deno.test("token lifecycle: issued, used with the SDK, disabled, revoked", async () => {
  const gw = await startGateway(config(true));
  try {
    const token = await adminJson(gw, "POST", "/admin/tokens", {
      name: "sdk-user",
      environment: "staging",
      models: ["chat-echo"],
      limits: { rpm: 100 },
    });
    const sdk = client(gw, token.token);
    assert.match(await ask(sdk), /ping/, "the new token works at once");
    assert.deepEqual(await refusal(sdk, "chat-other"), { status: 404, code: "model_not_found" }, "scoped");

    await adminJson(gw, "PATCH", `/admin/tokens/${token.id}`, { disabled: true });
    assert.deepEqual(await refusal(sdk), { status: 401, code: "token_disabled" });
    await adminJson(gw, "PATCH", `/admin/tokens/${token.id}`, { disabled: false });
    assert.match(await ask(sdk), /ping/);

    const revoked = await adminJson(gw, "DELETE", `/admin/tokens/${token.id}`);
    assert.equal(revoked.status, "revoked");
    const after = await refusal(sdk);
    assert.equal(after.status, 401, "the SDK's next call fails with 401");
    assert.equal(after.code, "invalid_api_key");

    const readyz = await (await fetch(`${gw.url}/readyz`)).json();
    assert.equal(readyz.tokens.store, "sqlite");
    assert.equal(readyz.tokens.ok, true);
    assert.equal(readyz.tokens.count, 0, "the revoked token is not counted");
  } finally {
    await gw.stop();
  }
});

Deno.test("token rotation (acceptance 4): both secrets work during the grace period, then only the new one", async () => {
  const gw = await startGateway(config(true));
  try {
    const token = await adminJson(gw, "POST", "/admin/tokens", { name: "rotating", models: ["chat-*"] });
    assert.match(await ask(client(gw, token.token)), /ping/);
    // Judged against the gateway's own end of the grace period (previous_expires_at, the same clock): the old
    // secret's call answered before it was decided within the grace period and must work. A loaded machine that
    // answers it only after the end judged nothing; the rotation is then made again, with twice the grace (an
    // unloaded run judges the first).
    let previous = token.token;
    const graces: number[] = [];
    for (let grace = 1_500;; grace *= 2) {
      assert.ok(graces.length < 5, `no call within grace periods of ${graces.join(", ")} ms`);
      graces.push(grace);
      const rotated = await adminJson(gw, "POST", `/admin/tokens/${token.id}/rotate`, {
        grace: `${grace / 1000}s`,
      });
      const graceEnd = Date.parse(rotated.previous_expires_at);
      const old = client(gw, previous);
      const fresh = client(gw, rotated.token);
      assert.notEqual(rotated.token, previous);
      const oldAnswer = await ask(old).catch((err: unknown) => err);
      const answeredAt = Date.now();
      assert.match(await ask(fresh), /ping/, "the new secret works at once");
      previous = rotated.token;
      if (answeredAt >= graceEnd) continue;
      assert.match(String(oldAnswer), /ping/, "the old secret works in the grace period");
      // Sent after the end, so decided after it.
      await new Promise((r) => setTimeout(r, Math.max(0, graceEnd - Date.now()) + 100));
      assert.equal((await refusal(old)).status, 401, "after the grace period the old secret is refused");
      assert.match(await ask(fresh), /ping/, "the new one keeps working");
      break;
    }
    const audit = await adminJson(gw, "GET", `/admin/audit?token=${token.id}&action=rotate`);
    assert.equal(audit.data.length, graces.length);
    assert.ok(audit.data.every((e: { actor: string }) => e.actor === "ops"));
    assert.deepEqual(
      audit.data.map((e: { changes: { grace_ms: number } }) => e.changes.grace_ms).sort((
        x: number,
        y: number,
      ) => x - y),
      graces,
    );
  } finally {
    await gw.stop();
  }
});

Deno.test("token lifecycle: an issued token's budget spans a restart, seeded from the usage database", async () => {
  const dir = await Deno.makeTempDir();
  const usage =
    `usage: { sqlite: "${dir}/usage.sqlite", spill: "${dir}/spill.jsonl", flush_interval: 20ms }\n`;
  try {
    const first = await startGateway(config(true) + usage);
    let token;
    try {
      token = await adminJson(first, "POST", "/admin/tokens", {
        name: "budgeted",
        models: ["chat-echo"],
        budget: { tokens: 1_000_000, period: "day" },
      });
      assert.match(await ask(client(first, token.token)), /ping/);
      const used = (await adminJson(first, "GET", "/admin/usage?token=budgeted")).totals.total_tokens;
      assert.ok(used > 0, `the request counted tokens: ${used}`);
      // The budget is now exactly what was used: only a counter that remembers the usage refuses the next call.
      await adminJson(first, "PATCH", `/admin/tokens/${token.id}`, {
        budget: { tokens: used, period: "day" },
      });
    } finally {
      await first.stop();
    }
    const second = await startGateway(config(true) + usage);
    try {
      assert.deepEqual(await refusal(client(second, token.token)), {
        status: 429,
        code: "insufficient_quota",
      });
    } finally {
      await second.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("token rotation (issue 20): 20 rotations at once all take effect, ending as if made one after another", async () => {
  const gw = await startGateway(config(true));
  try {
    const token = await adminJson(gw, "POST", "/admin/tokens", { name: "raced", models: ["chat-echo"] });
    const answers = await race(
      [gw.url],
      20,
      (url) => adminCall(url, ADMIN, "POST", `/admin/tokens/${token.id}/rotate`, { grace: "60s" }),
    );
    const outcome = await checkSerialRotations({
      urls: [gw.url],
      admin: ADMIN,
      id: token.id,
      original: token.token,
      answers,
      allSucceed: true,
    });
    assert.equal(outcome.succeeded, 20);
  } finally {
    await gw.stop();
  }
});

Deno.test("token creation (issue 20): 12 creates of one name at once give one 201 and eleven 409 token_name_taken", async () => {
  const gw = await startGateway(config(true));
  try {
    const answers = await race(
      [gw.url],
      12,
      (url) => adminCall(url, ADMIN, "POST", "/admin/tokens", { name: "twelve", models: ["chat-echo"] }),
    );
    await checkOneCreate(gw.url, ADMIN, "twelve", answers);
  } finally {
    await gw.stop();
  }
});

Deno.test("token creation: a token issued into a team while that team is deleted never joins a deleted team", async () => {
  const gw = await startGateway(config(true));
  try {
    await adminJson(gw, "POST", "/admin/teams", { name: "doomed" });
    // The token's request starts (headers and part of its body) while the team exists; the team is deleted
    // (no members yet) before the rest of the body arrives and the token is written.
    const body = JSON.stringify({ name: "late-member", models: ["chat-echo"], team: "doomed" });
    const conn = await connect(gw.url);
    await send(
      conn,
      `POST /admin/tokens HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${ADMIN}\r\n` +
        `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    await adminJson(gw, "DELETE", "/admin/teams/doomed");
    await send(conn, body.slice(5));
    const answer = await readResponse(conn);
    conn.close();
    // Refused, whichever came first: the name no longer validates, or the store refuses the join.
    assert.equal(answer.status, 400, answer.body);
    assert.equal(JSON.parse(answer.body).error.param, "team");
    // A new team of the name starts with no members.
    const again = await adminJson(gw, "POST", "/admin/teams", { name: "doomed", limits: { rpm: 1 } });
    assert.deepEqual(again.members, []);
    const tokens = await adminJson(gw, "GET", "/admin/tokens");
    assert.equal(tokens.data.some((t: { name: string }) => t.name === "late-member"), false);
  } finally {
    await gw.stop();
  }
});

/** Every admin route, with a request an admin could make. */
const ADMIN_ROUTES: [string, string, unknown?][] = [
  ["GET", "/admin/tokens"],
  ["POST", "/admin/tokens", { name: "intruder", models: ["chat-echo"] }],
  ["GET", "/admin/tokens/cfg_file-client"],
  ["PATCH", "/admin/tokens/cfg_file-client", { disabled: true }],
  ["DELETE", "/admin/tokens/cfg_file-client"],
  ["POST", "/admin/tokens/cfg_file-client/rotate", { grace: "1s" }],
  ["GET", "/admin/audit"],
  ["GET", "/admin/explain?token=file-client&model=chat-echo"],
  ["GET", "/admin/usage"],
  ["GET", "/admin/requests"],
  ["GET", "/admin/targets"],
  ["GET", "/admin/config"],
  ["POST", "/admin/reload"],
];

Deno.test("admin access (acceptance 3): no admin token configured means 401 everywhere under /admin", async () => {
  const gw = await startGateway(config(false));
  try {
    for (const [method, path, body] of ADMIN_ROUTES) {
      for (const token of [ADMIN, CLIENT, "gw-made-up-0123456789abcdef"]) {
        const response = await admin(gw, method, path, body, token);
        assert.equal(response.status, 401, `${method} ${path}`);
        assert.equal(typeof (await response.json()).error.message, "string");
      }
    }
    assert.match(await ask(client(gw, CLIENT)), /ping/, "the client token still works where it belongs");
  } finally {
    await gw.stop();
  }
});

Deno.test("admin access (acceptance 3): a client token is refused everywhere under /admin", async () => {
  const gw = await startGateway(config(true));
  try {
    for (const [method, path, body] of ADMIN_ROUTES) {
      const response = await admin(gw, method, path, body, CLIENT);
      assert.equal(response.status, 401, `${method} ${path}`);
      await response.body?.cancel();
    }
    const list = await adminJson(gw, "GET", "/admin/tokens");
    assert.deepEqual(list.data.map((t: { name: string }) => t.name), ["file-client"], "nothing was created");
    assert.equal((await adminJson(gw, "GET", "/admin/audit")).data.length, 0, "nothing was changed");
  } finally {
    await gw.stop();
  }
});

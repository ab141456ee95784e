/**
 * Issue 20: client-supplied ids and texts that a database may choke on (NUL, lone surrogates, 1 MB strings, SQL
 * metacharacters), on every route that reaches the store, against two gateways on real sockets: one on SQLite,
 * one on PostgreSQL (the shared test database, a private schema dropped after). Every answer is a 4xx in the
 * route's error shape, or a 200 where the input is legitimate text (then it is read back and compared), never a
 * 5xx, and both stores give the same status and the same error fields.
 *
 * The gateways run in-process, or as the single binary when `GATEWAY_BIN` is set (CI's Bun run).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway, waitForLogCount } from "../helpers/gateway.ts";
import { dropSchema, randomSchema, TEST_DATABASE_URL } from "../helpers/postgres.ts";

const TOKEN = "gw-hostile-ids-0123456789abcdef";
const ADMIN = "gw-hostile-ids-admin-0123456789abcdef";
const MB = 1 << 20;

function config(database: string): string {
  return `
${database}
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
  - { name: hostile, environment: test, sha256: ${hashToken(TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`;
}

/** A gateway under test, with a stored response of its own to aim near. */
interface Subject {
  store: "sqlite" | "postgres";
  gw: TestGateway;
  /** A stored response's id and its one input item's id. */
  seed: { id: string; item: string };
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** One call over the socket; every answer of this suite is JSON. */
async function call(
  s: Subject,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(`${s.gw.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(
      `${s.store} ${method} ${path.slice(0, 80)}: ${res.status}, not JSON: ${text.slice(0, 200)}`,
    );
  }
  return { status: res.status, body: parsed };
}

/**
 * `id` as a path segment or query value: UTF-8 percent-encoded, and a lone surrogate as the three bytes a
 * WTF-8 client would send (`encodeURIComponent` refuses it).
 */
function encoded(id: string): string {
  let out = "";
  for (const ch of id) {
    const c = ch.codePointAt(0)!;
    if (c < 0xd800 || c > 0xdfff) out += encodeURIComponent(ch);
    else {
      out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63)]
        .map((b) => `%${b.toString(16).toUpperCase()}`).join("");
    }
  }
  return out;
}

/** Ids no stored response or item has; `body` ones also travel in JSON bodies, where 1 MB fits. */
const IDS: { name: string; id: (seed: Subject["seed"]) => string; bodyOnly?: boolean }[] = [
  { name: "NUL", id: () => "resp_\u0000" },
  { name: "only NUL", id: () => "\u0000" },
  { name: "real id + NUL", id: (seed) => `${seed.id}\u0000` },
  { name: "NUL + real id", id: (seed) => `\u0000${seed.id}` },
  { name: "real item id + NUL", id: (seed) => `${seed.item}\u0000` },
  { name: "lone high surrogate", id: () => "resp_\ud800" },
  { name: "lone low surrogate", id: (seed) => `${seed.id}\udc00` },
  { name: "8 KB", id: () => `resp_${"a".repeat(8192)}` },
  { name: "1 MB", id: () => `resp_${"a".repeat(MB)}`, bodyOnly: true },
  { name: "real id + 1 MB", id: (seed) => seed.id + "a".repeat(MB), bodyOnly: true },
  { name: "quote", id: (seed) => `${seed.id}'` },
  { name: "injection", id: () => "resp_'; DROP TABLE responses; --" },
  { name: "double quotes", id: () => 'resp_"x";' },
  { name: "LIKE wildcards", id: () => "resp_%" },
  { name: "LIKE underscore", id: (seed) => seed.id.slice(0, -1) + "_" },
  { name: "backslash", id: () => "resp_\\" },
  { name: "escaped NUL as text", id: () => "resp_\\u0000" },
];

/** The error fields both stores must agree on (the message may name each gateway's own ids). */
function errorFields(a: Answer, anthropic: boolean): unknown {
  if (anthropic) {
    assert.equal(a.body.type, "error");
    const error = a.body.error as Record<string, unknown>;
    assert.deepEqual(Object.keys(error).sort(), ["message", "type"]);
    return { type: error.type };
  }
  assert.deepEqual(Object.keys(a.body), ["error"]);
  const error = a.body.error as Record<string, unknown>;
  assert.deepEqual(Object.keys(error).sort(), ["code", "message", "param", "type"]);
  assert.ok(typeof error.message === "string" && error.message.length <= 400, "a short message");
  assert.ok(!(error.message as string).includes("\u0000"), "no NUL in the message");
  return { type: error.type, code: error.code, param: error.param };
}

/**
 * Runs `request` on both subjects and checks what the table requires: never a 5xx, the same status on both,
 * `expected` when given, and for an error the route's shape with the same type, code and param on both.
 */
async function both(
  subjects: readonly Subject[],
  label: string,
  request: (s: Subject) => Promise<Answer>,
  expected?: number | { status: number; type?: string; code?: string | null; param?: string | null },
  anthropic = false,
): Promise<Answer[]> {
  const answers = [];
  for (const s of subjects) answers.push(await request(s));
  const [a, b] = answers;
  const said = answers.map((x, i) =>
    `${subjects[i].store} ${x.status} ${JSON.stringify(x.body).slice(0, 200)}`
  )
    .join(" | ");
  for (const x of answers) assert.ok(x.status < 500, `${label}: a 5xx (${said})`);
  assert.equal(a.status, b.status, `${label}: both stores answer alike (${said})`);
  const want = typeof expected === "number" ? { status: expected } : expected;
  if (want !== undefined) assert.equal(a.status, want.status, `${label}: status (${said})`);
  if (a.status >= 400) {
    const fields = answers.map((x) => errorFields(x, anthropic));
    assert.deepEqual(fields[0], fields[1], `${label}: same error on both stores (${said})`);
    if (want !== undefined && !anthropic) {
      const error = a.body.error as Record<string, unknown>;
      for (const key of ["type", "code", "param"] as const) {
        if (want[key] !== undefined) assert.equal(error[key], want[key], `${label}: ${key} (${said})`);
      }
    }
  }
  return answers;
}

const NOT_FOUND = { status: 404, type: "invalid_request_error", code: null, param: null };
const PREVIOUS_NOT_FOUND = {
  status: 404,
  code: "previous_response_not_found",
  param: "previous_response_id",
};
const ITEM_NOT_FOUND = { status: 404, code: null, param: "input" };

/** The text of a Response object's first output message. */
function outputText(response: Record<string, unknown>): unknown {
  const output = response.output as { content?: { text?: unknown }[] }[];
  return output?.[0]?.content?.[0]?.text;
}

async function withSubjects(fn: (subjects: Subject[]) => Promise<void>): Promise<void> {
  const schema = randomSchema("hostile");
  const dir = await Deno.makeTempDir();
  const gateways: [Subject["store"], TestGateway][] = [];
  try {
    gateways.push(["sqlite", await startGateway(config(""))]);
    gateways.push([
      "postgres",
      await startGateway(config(`postgres: { url: "${TEST_DATABASE_URL}", schema: ${schema} }
usage: { spill: "${dir}/spill.jsonl", flush_interval: 20ms }`)),
    ]);
    const subjects: Subject[] = [];
    for (const [store, gw] of gateways) {
      const s: Subject = { store, gw, seed: { id: "", item: "" } };
      const made = await call(s, "POST", "/v1/responses", { model: "chat-echo", input: "seed" });
      assert.equal(made.status, 200, JSON.stringify(made.body));
      const items = await call(s, "GET", `/v1/responses/${made.body.id}/input_items`);
      s.seed = { id: String(made.body.id), item: String((items.body.data as { id: string }[])[0].id) };
      subjects.push(s);
    }
    await fn(subjects);
    // Every request above was recorded, alike on both stores, and nothing failed on the way.
    const counts = [];
    for (const [, gw] of gateways) {
      const res = await fetch(`${gw.url}/admin/usage`, { headers: { authorization: `Bearer ${ADMIN}` } });
      assert.equal(res.status, 200);
      counts.push((await res.json()).totals.requests);
    }
    assert.equal(counts[0], counts[1], "both stores recorded every request");
    for (const [store, gw] of gateways) {
      // No stored response failed to be put, no usage batch failed, nothing was left unhandled.
      await waitForLogCount(gw, (l) => l.msg === "request", 1); // the access log is read
      const failures = gw.logs.filter((l) =>
        typeof l.msg === "string" && /failed|error|invalid|skipped/.test(l.msg)
      );
      assert.deepEqual(failures, [], `${store}: failures in the log`);
    }
  } finally {
    for (const [, gw] of gateways) await gw.stop();
    await dropSchema(schema);
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("hostile ids: every stored-response route answers an impossible id as SQLite does, never a 5xx", async () => {
  await withSubjects(async (subjects) => {
    for (const { name, id, bodyOnly } of IDS) {
      const at = (s: Subject) => encoded(id(s.seed));
      if (!bodyOnly) {
        await both(subjects, `GET ${name}`, (s) => call(s, "GET", `/v1/responses/${at(s)}`), NOT_FOUND);
        await both(subjects, `DELETE ${name}`, (s) => call(s, "DELETE", `/v1/responses/${at(s)}`), NOT_FOUND);
        await both(
          subjects,
          `input_items ${name}`,
          (s) => call(s, "GET", `/v1/responses/${at(s)}/input_items`),
          NOT_FOUND,
        );
        for (const cursor of ["after", "before"]) {
          await both(
            subjects,
            `input_items ${cursor}=${name}`,
            (s) => call(s, "GET", `/v1/responses/${s.seed.id}/input_items?${cursor}=${at(s)}`),
            { status: 400, code: "invalid_value", param: cursor },
          );
        }
      }
      await both(
        subjects,
        `previous_response_id ${name}`,
        (s) =>
          call(s, "POST", "/v1/responses", {
            model: "chat-echo",
            input: "hi",
            previous_response_id: id(s.seed),
          }),
        PREVIOUS_NOT_FOUND,
      );
      await both(
        subjects,
        `input_tokens previous_response_id ${name}`,
        (s) =>
          call(s, "POST", "/v1/responses/input_tokens", {
            model: "chat-echo",
            input: "hi",
            previous_response_id: id(s.seed),
          }),
        PREVIOUS_NOT_FOUND,
      );
      await both(
        subjects,
        `item_reference ${name}`,
        (s) =>
          call(s, "POST", "/v1/responses", {
            model: "chat-echo",
            input: [{ type: "item_reference", id: id(s.seed) }],
          }),
        ITEM_NOT_FOUND,
      );
    }
    // The seeds themselves are still there, untouched by all of the above.
    await both(subjects, "seed", (s) => call(s, "GET", `/v1/responses/${s.seed.id}`), 200);
    await both(
      subjects,
      "seed item",
      (s) =>
        call(s, "POST", "/v1/responses", {
          model: "chat-echo",
          input: [{ type: "item_reference", id: s.seed.item }],
        }),
      200,
    );
  });
});

/** Legitimate texts a client may send: each is stored faithfully and read back as it was sent. */
const TEXTS: [string, string][] = [
  ["NUL", "a\u0000b"],
  ["only NUL", "\u0000"],
  ["lone high surrogate", "x\ud800y"],
  ["lone low surrogate", "\udc00"],
  ["reversed pair", "\udc00\ud800"],
  ["control characters", "\u0001\u001f\u007f"],
  ["1 MB", "z".repeat(MB)],
  ["injection", "'; DROP TABLE responses; --"],
  ["metacharacters", `"%_\\'`],
  ["escaped NUL as text", "\\u0000"],
];

Deno.test("hostile texts: stored faithfully on both stores, read back and referenced alike", async () => {
  await withSubjects(async (subjects) => {
    for (const [name, text] of TEXTS) {
      const made = await both(
        subjects,
        `create ${name}`,
        (s) => call(s, "POST", "/v1/responses", { model: "chat-echo", instructions: text, input: text }),
        200,
      );
      for (const [i, s] of subjects.entries()) {
        const response = made[i].body;
        assert.equal(outputText(response), text, `${s.store} ${name}: echoed`);
        assert.equal(response.instructions, text, `${s.store} ${name}: instructions`);
        const again = await call(s, "GET", `/v1/responses/${response.id}`);
        assert.equal(again.status, 200, `${s.store} ${name}: read back`);
        assert.deepEqual(again.body, response, `${s.store} ${name}: read back as answered`);
        const items = await call(s, "GET", `/v1/responses/${response.id}/input_items`);
        assert.equal(items.status, 200, `${s.store} ${name}: input items`);
        const [item] = items.body.data as { id: string; content: { text: string }[] }[];
        assert.equal(item.content[0].text, text, `${s.store} ${name}: input item as sent`);
        // A reference to an item of a response holding the text: the item is cut out of the stored JSON.
        const referenced = await call(s, "POST", "/v1/responses", {
          model: "chat-echo",
          input: [{ type: "item_reference", id: item.id }],
        });
        assert.equal(
          referenced.status,
          200,
          `${s.store} ${name}: item_reference (${JSON.stringify(referenced.body).slice(0, 200)})`,
        );
        assert.equal(outputText(referenced.body), text, `${s.store} ${name}: referenced item as sent`);
        const output = (response.output as { id: string }[])[0].id;
        const echoed = await call(s, "POST", "/v1/responses", {
          model: "chat-echo",
          input: [{ type: "item_reference", id: output }, { role: "user", content: "next" }],
        });
        assert.equal(echoed.status, 200, `${s.store} ${name}: output item_reference`);
        const continued = await call(s, "POST", "/v1/responses", {
          model: "chat-echo",
          input: "again",
          previous_response_id: response.id,
        });
        assert.equal(continued.status, 200, `${s.store} ${name}: previous_response_id`);
        const counted = await call(s, "POST", "/v1/responses/input_tokens", {
          model: "chat-echo",
          previous_response_id: response.id,
        });
        assert.equal(counted.status, 200, `${s.store} ${name}: input_tokens`);
      }
      const chat = await both(
        subjects,
        `chat ${name}`,
        (s) =>
          call(s, "POST", "/v1/chat/completions", {
            model: "chat-echo",
            user: text,
            messages: [{ role: "user", content: text }],
          }),
        200,
      );
      for (const answer of chat) {
        const choices = answer.body.choices as { message: { content: string } }[];
        assert.equal(choices[0].message.content, text, `chat ${name}: echoed`);
      }
      const anthropic = { "x-api-key": TOKEN, "anthropic-version": "2023-06-01" };
      const messages = { model: "chat-echo", messages: [{ role: "user", content: text }] };
      await both(
        subjects,
        `messages ${name}`,
        (s) =>
          call(
            s,
            "POST",
            "/v1/messages",
            { ...messages, max_tokens: 64, metadata: { user_id: text } },
            anthropic,
          ),
        200,
        true,
      );
      await both(
        subjects,
        `count_tokens ${name}`,
        (s) => call(s, "POST", "/v1/messages/count_tokens", messages, anthropic),
        200,
        true,
      );
    }
  });
});

Deno.test("hostile item ids: an input item's own id is kept as sent; only one that can be stored is referable", async () => {
  await withSubjects(async (subjects) => {
    const ids: [string, string, boolean][] = [
      ["NUL", "msg_\u0000", false],
      ["lone surrogate", "msg_\ud800", false],
      ["8 KB", `msg_${"b".repeat(8192)}`, false],
      ["injection", "msg_'; DROP TABLE response_items; --", true],
      ["metacharacters", `msg_"%_\\`, true],
    ];
    for (const [name, id, referable] of ids) {
      const made = await both(
        subjects,
        `create with item id ${name}`,
        (s) =>
          call(s, "POST", "/v1/responses", {
            model: "chat-echo",
            input: [{ type: "message", role: "user", id, content: `item ${name}` }],
          }),
        200,
      );
      for (const [i, s] of subjects.entries()) {
        const items = await call(s, "GET", `/v1/responses/${made[i].body.id}/input_items`);
        assert.equal(items.status, 200);
        assert.equal((items.body.data as { id: string }[])[0].id, id, `${s.store} ${name}: the id as sent`);
      }
      await both(
        subjects,
        `reference item id ${name}`,
        (s) =>
          call(s, "POST", "/v1/responses", { model: "chat-echo", input: [{ type: "item_reference", id }] }),
        referable ? 200 : ITEM_NOT_FOUND,
      );
    }
    // A client's own request id lands in the usage records only when it is sane; the request works either way.
    for (const requestId of ["a'; DROP TABLE usage; --", "%_\\", "x".repeat(4096)]) {
      await both(
        subjects,
        `x-request-id ${requestId.slice(0, 20)}`,
        (s) =>
          call(s, "POST", "/v1/chat/completions", {
            model: "chat-echo",
            messages: [{ role: "user", content: "hi" }],
          }, { "x-request-id": requestId }),
        200,
      );
    }
  });
});

/**
 * Races on the admin token API over real sockets, shared by the single-node (SQLite) and the two-replica
 * (PostgreSQL) suites: many rotations of one token at once, and many creates of one name at once, then a check
 * that the end state is the one the successful calls would have left had they run one after another.
 *
 * The end state is checked the only way that matters to a client: by authenticating with every secret that
 * was handed out, on every replica given.
 *
 * @module
 */
import assert from "node:assert/strict";
import { MAX_SECRETS_IN_GRACE as SECRETS_IN_GRACE } from "../../lib/api/admin/tokens.ts";

/** The fields of the admin API's answers that the races look at (a token, a list, an error). */
export interface RaceBody {
  id?: string;
  token?: string;
  updated_at?: string;
  data?: { id: string; time: string; action: string }[];
  error?: { code: string; message: string };
}

/** One answer of a race: its status and JSON body. */
export interface RaceAnswer {
  status: number;
  body: RaceBody;
}

/** Sends one admin call with `admin` as the bearer and answers its status and JSON body. */
export async function adminCall(
  url: string,
  admin: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<RaceAnswer> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/**
 * Fires `count` calls at once, the i-th to `urls[i % urls.length]`, and answers them in the order they were
 * sent. Every request is on the wire before any answer is awaited.
 */
export function race(
  urls: readonly string[],
  count: number,
  send: (url: string, i: number) => Promise<RaceAnswer>,
): Promise<RaceAnswer[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => send(urls[i % urls.length], i)));
}

/** The status of a chat completion made with `secret` against the replica at `url`. */
export async function chatStatus(url: string, secret: string): Promise<number> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content: "hi" }] }),
  });
  await response.body?.cancel();
  return response.status;
}

/** What {@linkcode checkSerialRotations} found: the secrets in the order they took effect. */
export interface RotationOutcome {
  /** The original secret, then each 200's secret in audit order. */
  secrets: string[];
  succeeded: number;
  conflicts: number;
}

/**
 * Checks the answers of concurrent rotations (each `{"grace":"60s"}`) of token `id`, first issued with
 * `original`:
 * - each is a 200 with a new secret or a 409 `token_changed_concurrently` (and `allSucceed`: all are 200s);
 * - on every replica in `urls`, exactly the current secret and {@linkcode SECRETS_IN_GRACE} in grace work;
 * - there is exactly one `rotate` audit entry per 200 (matched by its `updated_at`, which every write moves
 *   forward), and no other;
 * - on every replica, the secret of the last 200 in audit order works, so do the {@linkcode SECRETS_IN_GRACE}
 *   secrets before it (the original counting as the first), and every older one is refused with 401: the
 *   state the 200s leave when made one after another.
 */
export async function checkSerialRotations(options: {
  urls: readonly string[];
  admin: string;
  id: string;
  original: string;
  answers: readonly RaceAnswer[];
  allSucceed: boolean;
}): Promise<RotationOutcome> {
  const { urls, admin, id, original, answers } = options;
  const ok = answers.filter((a) => a.status === 200);
  const refused = answers.filter((a) => a.status !== 200);
  for (const answer of refused) {
    assert.equal(answer.status, 409, `a rotation is a 200 or a 409: ${JSON.stringify(answer.body)}`);
    assert.equal(answer.body.error?.code, "token_changed_concurrently");
    assert.equal(typeof answer.body.error?.message, "string");
  }
  if (options.allSucceed) assert.equal(refused.length, 0, "rotations on one replica all take effect");
  assert.ok(ok.length > 0, "at least one rotation takes effect");
  assert.equal(new Set(ok.map((a) => a.body.token)).size, ok.length, "every 200 has a secret of its own");

  // What each replica says of every secret handed out, the original first (the 200s' order does not matter).
  const handedOut = [original, ...ok.map((a) => String(a.body.token))];
  const statuses = new Map<string, Map<string, number>>();
  for (const url of urls) {
    const byUrl = new Map<string, number>();
    for (const secret of handedOut) byUrl.set(secret, await chatStatus(url, secret));
    statuses.set(url, byUrl);
    const working = [...byUrl.values()].filter((status) => status === 200).length;
    assert.equal(
      working,
      Math.min(handedOut.length, SECRETS_IN_GRACE + 1),
      `${url}: the current secret and ${SECRETS_IN_GRACE} in grace work (a rotation lost to a race drops some)`,
    );
  }

  const audit = await adminCall(urls[0], admin, "GET", `/admin/audit?token=${id}&action=rotate&limit=1000`);
  assert.equal(audit.status, 200);
  const entries = [...audit.body.data ?? []].reverse(); // oldest first
  assert.equal(entries.length, ok.length, "one audit entry per rotation that took effect, and no other");
  const byTime = new Map(ok.map((a) => [a.body.updated_at, a]));
  assert.equal(byTime.size, ok.length, "every 200 has an updated_at of its own");
  const inOrder = entries.map((entry) => {
    const answer = byTime.get(entry.time);
    assert.ok(answer !== undefined, `the audit entry at ${entry.time} matches a 200`);
    return answer;
  });

  const secrets = [original, ...inOrder.map((a) => String(a.body.token))];
  const live = new Set(secrets.slice(-(SECRETS_IN_GRACE + 1)));
  for (const url of urls) {
    const token = await adminCall(url, admin, "GET", `/admin/tokens/${id}`);
    assert.equal(token.body.updated_at, inOrder.at(-1)!.body.updated_at, `${url} holds the last rotation`);
    for (const [i, secret] of secrets.entries()) {
      const expected = live.has(secret) ? 200 : 401;
      assert.equal(
        statuses.get(url)?.get(secret),
        expected,
        `${url}: secret ${i} of ${secrets.length - 1} (0 = the original) should answer ${expected}`,
      );
    }
  }
  return { secrets, succeeded: ok.length, conflicts: refused.length };
}

/**
 * Checks the answers of concurrent creates of one `name`: one 201, every other a 409 `token_name_taken`; the
 * list holds that one token, and the audit trail one `create` for the name.
 */
export async function checkOneCreate(
  url: string,
  admin: string,
  name: string,
  answers: readonly RaceAnswer[],
): Promise<void> {
  const statuses = answers.map((a) => a.status).sort();
  assert.deepEqual(
    statuses,
    [201, ...Array(answers.length - 1).fill(409)],
    `one 201, the rest 409: ${JSON.stringify(answers.filter((a) => a.status !== 201 && a.status !== 409))}`,
  );
  for (const answer of answers.filter((a) => a.status === 409)) {
    assert.equal(answer.body.error?.code, "token_name_taken");
  }
  const created = answers.find((a) => a.status === 201)!.body;
  const list = await adminCall(url, admin, "GET", `/admin/tokens?q=${encodeURIComponent(name)}&source=api`);
  assert.deepEqual(list.body.data?.map((t) => t.id), [created.id], "one token of that name");
  const audit = await adminCall(url, admin, "GET", `/admin/audit?token=${encodeURIComponent(name)}`);
  assert.deepEqual(audit.body.data?.map((e) => e.action), ["create"], "one create audited");
}

/**
 * `/admin/tokens` with guardrails, in-process through the real handler chain over the memory token store: an
 * issued token names guardrails of the config (an unknown one is a 400 on `guardrails.<i>`), its requests are
 * judged by them on an alias that has none (a card number is refused as `content_policy_violation`, and passes
 * once they are cleared by null), they are shown for issued and config tokens alike, and audited.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../auth/authenticate.ts";
import { CONFIG, errorOf, type Json, setup } from "./tokens_test_helpers.ts";

const GUARDED_FILE_TOKEN = "gw-guarded-file-token-0123456789abcdef";
const CARD = "my card is 4111 1111 1111 1111, charge it";

/** The helpers' config (whose aliases have no guardrails) with a PII guardrail and a config token using it. */
const GUARDRAILS_CONFIG = `${CONFIG}
guardrails:
  no-cards: { type: pii, entities: [CREDIT_CARD] }
  no-mail: { type: pii, entities: [EMAIL], action: mask }
`.replace(
  "admin_tokens:",
  `  - { name: guarded-file, sha256: ${
    hashToken(GUARDED_FILE_TOKEN)
  }, models: ["chat-*"], guardrails: [no-cards] }
admin_tokens:`,
);

Deno.test("admin tokens: guardrails are set, judge the token's requests, are shown, cleared by null and audited", async () => {
  const gw = setup(true, GUARDRAILS_CONFIG);
  try {
    const created = await gw.admin("POST", "/admin/tokens", {
      name: "guarded",
      models: ["chat-*"],
      guardrails: ["no-cards"],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body.guardrails, ["no-cards"]);
    const id = String(created.body.id);
    const secret = String(created.body.token);
    assert.deepEqual((await gw.admin("GET", `/admin/tokens/${id}`)).body.guardrails, ["no-cards"]);
    const listed = ((await gw.admin("GET", "/admin/tokens")).body.data as Json[]).find((t) => t.id === id)!;
    assert.deepEqual(listed.guardrails, ["no-cards"]);

    // chat-a has no guardrails of its own: the token's refuses the card number, and lets the rest through.
    assert.deepEqual(await gw.chat(secret, "chat-a", CARD), {
      status: 400,
      code: "content_policy_violation",
    });
    assert.equal((await gw.chat(secret, "chat-a")).status, 200);
    // Another token, without guardrails, sends the same text through.
    const plain = await gw.admin("POST", "/admin/tokens", { name: "plain", models: ["chat-*"] });
    assert.equal(plain.body.guardrails, null, "null when not set");
    assert.equal((await gw.chat(String(plain.body.token), "chat-a", CARD)).status, 200);

    const added = await gw.admin("PATCH", `/admin/tokens/${id}`, { guardrails: ["no-cards", "no-mail"] });
    assert.equal(added.status, 200, JSON.stringify(added.body));
    assert.deepEqual(added.body.guardrails, ["no-cards", "no-mail"]);
    assert.equal((await gw.chat(secret, "chat-b", CARD)).code, "content_policy_violation");
    const cleared = await gw.admin("PATCH", `/admin/tokens/${id}`, { guardrails: null });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.body.guardrails, null);
    assert.equal((await gw.chat(secret, "chat-a", CARD)).status, 200, "passes once they are cleared");
    const same = await gw.admin("PATCH", `/admin/tokens/${id}`, { guardrails: null }); // no change: no entry
    assert.equal(same.status, 200);

    const entries = (await gw.admin("GET", `/admin/audit?token=${id}`)).body.data as Json[];
    assert.deepEqual(entries.map((e) => [e.action, e.changes]).slice(0, 2), [
      ["update", { guardrails: { from: ["no-cards", "no-mail"], to: null } }],
      ["update", { guardrails: { from: ["no-cards"], to: ["no-cards", "no-mail"] } }],
    ]);
    assert.deepEqual((entries[2].changes as Json).guardrails, ["no-cards"], "the create entry has them");
  } finally {
    await gw.close();
  }
});

Deno.test("admin tokens: an unknown guardrail is a 400 on its index, naming the known ones", async () => {
  const gw = setup(true, GUARDRAILS_CONFIG);
  try {
    const unknown = await gw.admin("POST", "/admin/tokens", {
      name: "x",
      models: ["chat-a"],
      guardrails: ["no-cards", "no-ssn"],
    });
    assert.equal(unknown.status, 400);
    assert.equal(errorOf(unknown.body).param, "guardrails.1");
    assert.match(String(errorOf(unknown.body).message), /"no-cards", "no-mail"/);

    const created = await gw.admin("POST", "/admin/tokens", { name: "x", models: ["chat-a"] });
    const id = String(created.body.id);
    const patched = await gw.admin("PATCH", `/admin/tokens/${id}`, { guardrails: ["no-ssn"] });
    assert.equal(patched.status, 400);
    assert.equal(errorOf(patched.body).param, "guardrails.0");
    assert.equal((await gw.admin("GET", `/admin/tokens/${id}`)).body.guardrails, null, "nothing was changed");
  } finally {
    await gw.close();
  }
});

Deno.test("admin tokens: a config token shows its guardrails", async () => {
  const gw = setup(true, GUARDRAILS_CONFIG);
  try {
    assert.deepEqual((await gw.admin("GET", "/admin/tokens/cfg_guarded-file")).body.guardrails, ["no-cards"]);
    assert.equal((await gw.admin("GET", "/admin/tokens/cfg_from-file")).body.guardrails, null);
    assert.equal((await gw.chat(GUARDED_FILE_TOKEN, "chat-a", CARD)).code, "content_policy_violation");
  } finally {
    await gw.close();
  }
});

/**
 * Google's model methods on the Gemini API, in-process: `GET` and `HEAD` of `/v1beta/models/{alias}` answer
 * alike (the server routes a HEAD as a GET and names it in `Allow`).
 */
import assert from "node:assert/strict";
import { NARROW_TOKEN, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { type InProcessGateway, inProcessGateway } from "../helpers/in_process.ts";

const CONFIG = `
server: { host: 127.0.0.1, port: 0 }
providers:
  local: { type: builtin }
models:
  chat-a: { type: chat, targets: [ { provider: local, model: echo } ] }
  chat-b: { type: chat, targets: [ { provider: local, model: echo } ] }
  emb: { type: embedding, targets: [ { provider: local, model: hash } ] }
  "llama3:8b": { type: chat, targets: [ { provider: local, model: echo } ] }
${TEST_TOKENS_YAML}`;

const KEY = { "x-goog-api-key": TEST_TOKEN };

Deno.test("gemini models: HEAD of a model answers as its GET does (200, 404)", async () => {
  const gw = inProcessGateway(CONFIG);
  for (
    const [path, status] of [
      ["/v1beta/models/chat-a", 200],
      ["/v1beta/models/llama3:8b", 200],
      ["/v1beta/models/emb", 200],
      ["/v1beta/models/nope", 404],
      ["/v1beta/models/chat-a:generateContent", 404],
    ] as const
  ) {
    const got = await gw.fetch(path, { headers: KEY });
    const head = await gw.fetch(path, { method: "HEAD", headers: KEY });
    await got.body?.cancel();
    await head.body?.cancel();
    assert.equal(got.status, status, `GET ${path}`);
    assert.equal(head.status, status, `HEAD ${path}`);
    assert.equal(head.headers.get("content-type"), got.headers.get("content-type"), `HEAD ${path}`);
  }
});

/** A page of `GET /v1beta/models`, as Google's `ListModelsResponse`. */
interface ModelPage {
  models: { name: string }[];
  nextPageToken?: string;
}

async function listPage(gw: InProcessGateway, query: string, key = TEST_TOKEN): Promise<ModelPage> {
  const response = await gw.fetch(`/v1beta/models${query}`, { headers: { "x-goog-api-key": key } });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return JSON.parse(text);
}

Deno.test("gemini models: the list is paged by pageSize and pageToken, nextPageToken while more follow", async () => {
  const gw = inProcessGateway(CONFIG);
  const all = await listPage(gw, "");
  const names = all.models.map((m) => m.name);
  assert.deepEqual(names, ["models/chat-a", "models/chat-b", "models/emb", "models/llama3:8b"]);
  assert.equal(all.nextPageToken, undefined, "one page holds them all: no token");
  const first = await listPage(gw, "?pageSize=2");
  assert.deepEqual(first.models.map((m) => m.name), names.slice(0, 2));
  assert.equal(typeof first.nextPageToken, "string");
  const second = await listPage(gw, `?pageSize=2&pageToken=${first.nextPageToken}`);
  assert.deepEqual(second.models.map((m) => m.name), names.slice(2));
  assert.equal(second.nextPageToken, undefined, "the last page has no token");
  // One at a time, the pages walk the whole list once, in its order.
  const walked: string[] = [];
  let token: string | undefined = "";
  while (token !== undefined) {
    const page: ModelPage = await listPage(gw, `?pageSize=1&pageToken=${token}`);
    walked.push(...page.models.map((m) => m.name));
    token = page.nextPageToken;
  }
  assert.deepEqual(walked, names);
  // More than Google's maximum is its maximum (as Google documents), not a refusal; 0 is proto3's unset.
  assert.deepEqual((await listPage(gw, "?pageSize=5000")).models.map((m) => m.name), names);
  assert.deepEqual((await listPage(gw, "?page_size=0")).models.map((m) => m.name), names);
});

Deno.test("gemini models: a token of no page answers an empty page, whether made up or of an alias the key may not use", async () => {
  const gw = inProcessGateway(CONFIG);
  assert.deepEqual(await listPage(gw, "?pageToken=bogus"), { models: [] });
  // The narrow key (chat-* only) may not use `emb`: the token after it is no page of its list.
  const afterB = (await listPage(gw, "?pageSize=2")).nextPageToken;
  const afterEmb = (await listPage(gw, `?pageSize=1&pageToken=${afterB}`)).nextPageToken;
  assert.deepEqual(await listPage(gw, `?pageToken=${afterEmb}`, NARROW_TOKEN), { models: [] });
  // After `chat-b`, its last alias, nothing follows.
  assert.deepEqual(await listPage(gw, `?pageToken=${afterB}`, NARROW_TOKEN), { models: [] });
  const narrow = await listPage(gw, "?pageSize=1", NARROW_TOKEN);
  assert.deepEqual(narrow.models.map((m) => m.name), ["models/chat-a"]);
  const rest = await listPage(gw, `?pageToken=${narrow.nextPageToken}`, NARROW_TOKEN);
  assert.deepEqual(rest, { models: [{ ...rest.models[0], name: "models/chat-b" }] });
});

Deno.test("gemini models: 50 to a page unless asked; a pageSize that is no count is Google's 400", async () => {
  const many = Array.from(
    { length: 60 },
    (_, i) =>
      `  chat-${String(i).padStart(2, "0")}: { type: chat, targets: [ { provider: local, model: echo } ] }`,
  );
  const gw = inProcessGateway(CONFIG.replace("models:\n", `models:\n${many.join("\n")}\n`));
  const first = await listPage(gw, "");
  assert.equal(first.models.length, 50);
  const second = await listPage(gw, `?pageToken=${first.nextPageToken}`);
  assert.equal(second.models.length, 64 - 50);
  assert.equal(second.nextPageToken, undefined);
  for (const size of ["abc", "-1", "2.5", "1e3"]) {
    const response = await gw.fetch(`/v1beta/models?pageSize=${size}`, { headers: KEY });
    const body = await response.json();
    assert.equal(response.status, 400, `pageSize=${size}`);
    assert.equal(body.error.status, "INVALID_ARGUMENT", `pageSize=${size}`);
    assert.match(body.error.message, /page_size/, `pageSize=${size}`);
  }
});

/**
 * Zero-downtime reload under load from the official openai SDK: the config file is rewritten while requests
 * and streams run, moving an alias between two upstreams; an invalid file is rejected without a hiccup.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { type FaultUpstream, startFaultUpstream } from "../helpers/fault_upstream.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";

function configFor(a: FaultUpstream, b: FaultUpstream, target: "a" | "b"): string {
  return `
providers:
  a: { type: openai, base_url: "${a.baseURL}" }
  b: { type: openai, base_url: "${b.baseURL}" }
models:
  chat-moving: { type: chat, targets: [ { provider: ${target}, model: ${target}-model } ] }
${TEST_TOKENS_YAML}`;
}

/** Replaces the file the way deploy tools do: write a sibling, then rename it over the original. */
async function replaceFile(path: string, text: string) {
  const temp = `${path}.tmp-${crypto.randomUUID()}`;
  await Deno.writeTextFile(temp, text);
  await Deno.rename(temp, path);
}

async function waitFor(what: string, condition: () => boolean, ms = 5_000) {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

interface LoadResult {
  ok: number;
  failed: string[];
  byProvider: Record<string, number>;
}

/**
 * Runs `total` requests from `workers` concurrent SDK clients, one in four streamed; every request must
 * succeed, and every stream must end cleanly with its full content.
 */
async function load(
  gw: TestGateway,
  total: number,
  workers: number,
  progress: { done: number },
): Promise<LoadResult> {
  const client = new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0 });
  const result: LoadResult = { ok: 0, failed: [], byProvider: {} };
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const n = next++;
      try {
        const messages = [{ role: "user" as const, content: `request ${n}` }];
        let provider: string | null;
        let content = "";
        if (n % 4 === 0) {
          const { data: stream, response } = await client.chat.completions
            .create({ model: "chat-moving", messages, stream: true })
            .withResponse();
          provider = response.headers.get("x-gateway-provider");
          for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? "";
        } else {
          const { data, response } = await client.chat.completions
            .create({ model: "chat-moving", messages })
            .withResponse();
          provider = response.headers.get("x-gateway-provider");
          content = data.choices[0].message.content ?? "";
        }
        if (content !== `answer from ${provider}`) {
          throw new Error(`request ${n}: unexpected content "${content}"`);
        }
        result.byProvider[provider ?? "?"] = (result.byProvider[provider ?? "?"] ?? 0) + 1;
        result.ok++;
      } catch (err) {
        result.failed.push(err instanceof Error ? err.message : String(err));
      } finally {
        progress.done++;
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  return result;
}

const reloadsOf = (gw: TestGateway, msg: string) => gw.logs.filter((l) => l.msg === msg).length;

Deno.test("reload: ten reloads under 2,000+ requests move traffic between upstreams with zero failures", async () => {
  const a = startFaultUpstream("a");
  const b = startFaultUpstream("b");
  const gw = await startGateway(configFor(a, b, "a"));
  try {
    const total = 2_200;
    const progress = { done: 0 };
    const running = load(gw, total, 16, progress);
    const seenAfterReload: string[] = [];
    for (let i = 1; i <= 10; i++) {
      await waitFor(`progress ${i}`, () => progress.done >= i * 180, 60_000);
      const target = i % 2 === 1 ? "b" : "a";
      await replaceFile(gw.configFile, configFor(a, b, target));
      await waitFor(`reload ${i}`, () => reloadsOf(gw, "config_reloaded") >= i);
      seenAfterReload.push(target);
    }
    const result = await running;
    assert.deepEqual(result.failed, [], "no request failed");
    assert.equal(result.ok, total);
    assert.ok(result.byProvider.a > 100 && result.byProvider.b > 100, JSON.stringify(result.byProvider));
    assert.equal(reloadsOf(gw, "config_reload_failed"), 0);

    // After the last reload (to "a"), every new request goes there.
    const after = await load(gw, 20, 4, { done: 0 });
    assert.deepEqual(after.byProvider, { a: 20 });
    assert.deepEqual(seenAfterReload.slice(-1), ["a"]);
  } finally {
    await gw.stop();
    await a.stop();
    await b.stop();
  }
});

Deno.test("reload: an invalid config written during load is rejected; the old one keeps serving", async () => {
  const a = startFaultUpstream("a");
  const b = startFaultUpstream("b");
  const gw = await startGateway(configFor(a, b, "a"));
  try {
    const progress = { done: 0 };
    const running = load(gw, 600, 8, progress);
    await waitFor("load under way", () => progress.done >= 100, 30_000);
    // A dangling provider reference and a type error: both must be reported, nothing swapped in.
    await replaceFile(
      gw.configFile,
      configFor(a, b, "b").replace("provider: b,", "provider: nowhere,").replace("type: openai", "type: 42"),
    );
    await waitFor("the failed reload", () => reloadsOf(gw, "config_reload_failed") >= 1);
    const failure = gw.logs.find((l) => l.msg === "config_reload_failed")!;
    const issues = failure.issues as { path: string; line: number }[];
    assert.ok(issues.some((i) => i.path === "providers.a.type" && i.line === 3), JSON.stringify(issues));
    assert.ok(issues.some((i) => i.path === "models.chat-moving.targets.0.provider"), JSON.stringify(issues));

    const ready = await (await fetch(`${gw.url}/readyz`)).json();
    assert.equal(ready.status, "ready");
    assert.equal(ready.reload.ok, false);
    assert.ok(ready.reload.errors >= 2);

    const result = await running;
    assert.deepEqual(result.failed, []);
    assert.deepEqual(result.byProvider, { a: 600 }, "the old config kept serving every request");

    await replaceFile(gw.configFile, configFor(a, b, "b"));
    await waitFor("the recovery reload", () => reloadsOf(gw, "config_reloaded") >= 1);
    assert.equal((await (await fetch(`${gw.url}/readyz`)).json()).reload.ok, true);
    const after = await load(gw, 8, 2, { done: 0 });
    assert.deepEqual(after.byProvider, { b: 8 });
  } finally {
    await gw.stop();
    await a.stop();
    await b.stop();
  }
});

Deno.test("reload: a guardrail that cannot be set up (no AWS region) fails the reload at guardrails.<name>; the old config serves", async () => {
  const a = startFaultUpstream("a");
  const b = startFaultUpstream("b");
  const adminToken = "gw-reload-admin-0123456789abcdef";
  const admins = `admin_tokens:\n  - { name: ops, token: "${adminToken}" }\n`;
  // No AWS_REGION, AWS_DEFAULT_REGION or credentials in the gateway's environment.
  const gw = await startGateway(configFor(a, b, "a") + admins, {});
  try {
    const withGuardrail = configFor(a, b, "b")
      .replace(
        "providers:",
        "guardrails:\n  bg: { type: bedrock, guardrail_identifier: abc123, guardrail_version: DRAFT }\nproviders:",
      )
      .replace("chat-moving: { type: chat,", "chat-moving: { type: chat, guardrails: [bg],");
    await replaceFile(gw.configFile, withGuardrail + admins);
    const answer = await fetch(`${gw.url}/admin/reload`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}` },
    });
    const status = await answer.json();
    assert.equal(answer.status, 422, JSON.stringify(status));
    assert.equal(status.ok, false);
    assert.deepEqual(status.issues.map((i: { path: string }) => i.path), ["guardrails.bg"]);
    assert.match(status.issues[0].message, /no AWS region/);

    const ready = await (await fetch(`${gw.url}/readyz`)).json();
    assert.equal(ready.reload.ok, false);
    const failure = gw.logs.findLast((l) => l.msg === "config_reload_failed")!;
    assert.equal((failure.issues as { path: string }[])[0].path, "guardrails.bg");
    const after = await load(gw, 4, 1, { done: 0 });
    assert.deepEqual(after.byProvider, { a: 4 }, "the old config kept serving");
  } finally {
    await gw.stop();
    await a.stop();
    await b.stop();
  }
});

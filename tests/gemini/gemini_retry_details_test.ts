/**
 * What Google's clients decide a retry by, end to end with `@google/genai`: Gemini CLI (`classifyGoogleError`)
 * reads a 429's `error.details` (a `RetryInfo`'s `retryDelay`, a `QuotaFailure` whose `quotaId` names a day) and,
 * with none, retries every 429 up to ten times on its own backoff. So the gateway's rate limit says its wait, a
 * spent budget (nothing passes before its period ends) says its period and its reset, and an upstream's wait is
 * passed on: a Gemini upstream's own RetryInfo as sent, another's `retry-after` as one.
 */
import assert from "node:assert/strict";
import { ApiError, GoogleGenAI } from "@google/genai";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { FAKE_GEMINI_KEY, type FakeGemini, startFakeGemini } from "../helpers/fake_gemini.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { type Fakes as FakeSet, startFakes } from "../helpers/fakes.ts";

const RPM = "gw-rpm-one-0123456789abcdef";
const BUDGET = "gw-budget-one-0123456789abcdef";
type Fakes = FakeSet<{ openai: FakeUpstream; gemini: FakeGemini }>;
const startAll = (): Fakes => startFakes({ openai: startFakeOpenAI, gemini: startFakeGemini });
const configFor = (f: Fakes) => `
server: { host: 127.0.0.1, port: 0 }
providers:
  oa: { type: openai, base_url: "${f.openai.baseURL}", api_key: "${FAKE_KEY}" }
  gem: { type: gemini, base_url: "${f.gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
models:
  chat-ok: { type: chat, targets: [ { provider: oa, model: gpt-ok } ] }
  chat-429: { type: chat, targets: [ { provider: oa, model: gpt-429, retries: 0 } ] }
  gem-429: { type: chat, targets: [ { provider: gem, model: gem-429, retries: 0 } ] }
${TEST_TOKENS_YAML}
  - { name: rpm-one, sha256: ${hashToken(RPM)}, models: ["*"], limits: { rpm: 1 } }
  - { name: budget-one, sha256: ${hashToken(BUDGET)}, models: ["*"], budget: { tokens: 1, period: day } }
`;

const RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo";
const QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure";

interface Detail {
  "@type": string;
  retryDelay?: string;
  violations?: { quotaId: string }[];
}

/** Seconds of a `retryDelay` ("59.966s"). */
const seconds = (delay: string | undefined) => Number(/^(\d+(?:\.\d+)?)s$/.exec(delay ?? "")?.[1] ?? NaN);

Deno.test({
  name: "gemini 429s carry the details Google's clients decide a retry by",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await withFakeGateway(startAll, configFor, async (gw) => {
      const ai = (key: string) =>
        new GoogleGenAI({ apiKey: key, apiVersion: "v1beta", httpOptions: { baseUrl: gw.url } });
      const detailsOf = async (key: string, model: string): Promise<Detail[]> => {
        const err = await ai(key).models.generateContent({ model, contents: "Hi" }).then(
          () => null,
          (e) => e,
        );
        assert.ok(err instanceof ApiError, String(err));
        assert.equal(err.status, 429, err.message);
        const error = JSON.parse(err.message).error;
        assert.equal(error.status, "RESOURCE_EXHAUSTED");
        return error.details ?? [];
      };
      const find = (details: Detail[], type: string) => details.find((d) => d["@type"] === type);

      // The gateway's rate limit: its wait, within the minute.
      await ai(RPM).models.generateContent({ model: "chat-ok", contents: "Hi" });
      const rate = await detailsOf(RPM, "chat-ok");
      const wait = seconds(find(rate, RETRY_INFO)?.retryDelay);
      assert.ok(wait > 0 && wait <= 60, JSON.stringify(rate));
      assert.equal(find(rate, QUOTA_FAILURE), undefined);

      // A spent daily budget: a QuotaFailure of a day (the CLI's "stop retrying"), and the wait until its reset.
      await ai(BUDGET).models.generateContent({ model: "chat-ok", contents: "Hi" });
      const budget = await detailsOf(BUDGET, "chat-ok");
      assert.deepEqual(find(budget, QUOTA_FAILURE)?.violations?.map((v) => v.quotaId), ["TokenBudgetPerDay"]);
      const reset = seconds(find(budget, RETRY_INFO)?.retryDelay);
      assert.ok(reset > 0 && reset <= 86_400, JSON.stringify(budget));

      // A Gemini upstream's own RetryInfo as it sent it; another's retry-after as one.
      assert.deepEqual(await detailsOf(TEST_TOKEN, "gem-429"), [{ "@type": RETRY_INFO, retryDelay: "7s" }]);
      assert.deepEqual(await detailsOf(TEST_TOKEN, "chat-429"), [{ "@type": RETRY_INFO, retryDelay: "7s" }]);
    });
  },
});

Deno.test({
  name: "gemini: a spent budget keeps x-should-retry: false, and a client mistake gets no details",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await withFakeGateway(startAll, configFor, async (gw) => {
      const post = (key: string, body: unknown) =>
        fetch(`${gw.url}/v1beta/models/chat-ok:generateContent`, {
          method: "POST",
          headers: { "x-goog-api-key": key, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      const hi = { contents: [{ role: "user", parts: [{ text: "Hi" }] }] };
      await (await post(BUDGET, hi)).body?.cancel();
      const denied = await post(BUDGET, hi);
      assert.equal(denied.status, 429);
      assert.equal(denied.headers.get("x-should-retry"), "false");
      await denied.body?.cancel();
      const bad = await post(TEST_TOKEN, { contents: [] });
      assert.equal(bad.status, 400);
      assert.deepEqual(Object.keys((await bad.json()).error).sort(), ["code", "message", "status"]);
    });
  },
});

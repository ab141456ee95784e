/**
 * An answer its vendor says is not finished is cut off on every client API and path, not only where it passes
 * through natively (docs/caching.md): Anthropic's `pause_turn` (its server-side tool loop paused; the client is
 * to send the turn back to continue it) and Gemini's finish reasons other than `STOP` and `MAX_TOKENS` (`OTHER`,
 * the safety and recitation filters, …). Over real sockets, to the repo's fake Anthropic and Gemini, through
 * chat completions, Responses, Messages and the Gemini API, JSON and streamed, each asked twice: without
 * `cache_incomplete` the second goes upstream again (`MISS,MISS`), with it the second is a hit; and what the
 * client is told, fresh and from the cache, says the answer did not end (chat `length` / `content_filter`, a
 * Response `incomplete`, Messages `max_tokens` / `refusal`, Gemini `MAX_TOKENS` / `SAFETY`; the vendor's own
 * reason on its native path).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { FAKE_GEMINI_KEY, startFakeGemini } from "../helpers/fake_gemini.ts";
import { startFakes } from "../helpers/fakes.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";

type Api = "chat" | "responses" | "messages" | "gemini";
const APIS: Api[] = ["chat", "responses", "messages", "gemini"];

/** What a client of each API is told of how the answer ended (a Response: its status and incomplete reason). */
type Told = Record<Api, string>;

const OPT_INS = { none: {}, incomplete: { cache_incomplete: true } } as const;
type OptIn = keyof typeof OPT_INS;

/** The cases: the fake's model, and what each client API must be told of its answer. */
interface Case {
  provider: "claude" | "gem";
  model: string;
  told: Told;
}

const PAUSED: Case = {
  provider: "claude",
  model: "claude-pause",
  told: {
    chat: "length",
    responses: "incomplete max_output_tokens",
    messages: "pause_turn",
    gemini: "MAX_TOKENS",
  },
};

/** A Gemini candidate that ended with `reason`: the filter's words on every translated path. */
function gemini(reason: string): Case {
  return {
    provider: "gem",
    model: `gem-finish-${reason}`,
    told: {
      chat: "content_filter",
      responses: "incomplete content_filter",
      messages: "refusal",
      gemini: reason,
    },
  };
}

/**
 * Gemini's finish reasons that end a candidate with an answer but not a whole one: the filters, `OTHER` (an
 * unknown reason), the default value, image reasons, and one Google may add tomorrow.
 */
const GEMINI_REASONS = [
  "OTHER",
  "FINISH_REASON_UNSPECIFIED",
  "SAFETY",
  "RECITATION",
  "LANGUAGE",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION",
  "IMAGE_OTHER",
  "NO_IMAGE",
  "SOMETHING_NEW",
];

const CASES: Case[] = [PAUSED, ...GEMINI_REASONS.map(gemini)];

function alias(c: Case, optIn: OptIn): string {
  return `${c.model.toLowerCase()}-${optIn}`;
}

function config(claude: string, gem: string): string {
  const models = CASES.flatMap((c) =>
    (Object.keys(OPT_INS) as OptIn[]).map((optIn) =>
      `  ${
        alias(c, optIn)
      }: { type: chat, targets: [{ provider: ${c.provider}, model: ${c.model} }], cache: ${
        JSON.stringify(OPT_INS[optIn])
      } }`
    )
  );
  return `
providers:
  claude: { type: anthropic, base_url: "${claude}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  gem: { type: gemini, base_url: "${gem}", api_key: "${FAKE_GEMINI_KEY}" }
models:
${models.join("\n")}
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`;
}

/** One request of `api` to `model`, asking `prompt`. */
function request(
  gw: TestGateway,
  api: Api,
  model: string,
  prompt: string,
  stream: boolean,
): Promise<Response> {
  const post = (path: string, headers: Record<string, string>, body: unknown) =>
    fetch(`${gw.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
  const bearer = { authorization: `Bearer ${TEST_TOKEN}` };
  const user = [{ role: "user", content: prompt }];
  if (api === "chat") return post("/v1/chat/completions", bearer, { model, messages: user, stream });
  if (api === "responses") {
    return post("/v1/responses", bearer, { model, input: prompt, stream, store: false });
  }
  if (api === "messages") {
    const headers = { "x-api-key": TEST_TOKEN, "anthropic-version": "2023-06-01" };
    return post("/v1/messages", headers, { model, max_tokens: 100, messages: user, stream });
  }
  const method = stream ? "streamGenerateContent?alt=sse" : "generateContent";
  return post(`/v1beta/models/${model}:${method}`, { "x-goog-api-key": TEST_TOKEN }, {
    contents: [{ role: "user", parts: [{ text: prompt }] }],
  });
}

type Json = Record<string, unknown>;

/** The `data:` payloads of an event stream that are JSON objects. */
function events(text: string): Json[] {
  return text.split(/\r?\n/).filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice("data: ".length)) as Json);
}

/** What an answer of `api` tells its client of how it ended, from its body (JSON or an event stream). */
function told(api: Api, text: string, stream: boolean): string {
  const values = stream ? events(text) : [JSON.parse(text) as Json];
  const last = <T>(pick: (value: Json) => T | undefined) => values.map(pick).findLast((v) => v != null);
  if (api === "chat") {
    return String(last((v) => (v.choices as { finish_reason?: string }[] | undefined)?.[0]?.finish_reason));
  }
  if (api === "responses") {
    const response = stream ? last((v) => v.response as Json | undefined) : values[0];
    const details = response?.incomplete_details as { reason?: string } | null | undefined;
    return [response?.status, details?.reason].filter((v) => v != null).join(" ");
  }
  if (api === "messages") {
    return String(
      last((v) =>
        (v.delta as Json | undefined)?.stop_reason as string | undefined ?? v.stop_reason as string
      ),
    );
  }
  return String(last((v) => (v.candidates as { finishReason?: string }[] | undefined)?.[0]?.finishReason));
}

/** How many requests the fakes got so far. */
type Calls = () => number;

/**
 * Asks every case twice through `api` under each opt-in, JSON and streamed; returns, by case, the two answers'
 * `x-cache`, what each told the client, and how many of them went upstream.
 */
async function ask(gw: TestGateway, api: Api, calls: Calls): Promise<Record<string, string>> {
  const seen: Record<string, string> = {};
  for (const c of CASES) {
    for (const optIn of Object.keys(OPT_INS) as OptIn[]) {
      for (const stream of [false, true]) {
        const name = `${api} ${stream ? "stream" : "JSON"} ${c.model} ${optIn}`;
        const before = calls();
        const got: string[] = [];
        for (let i = 0; i < 2; i++) {
          const res = await request(gw, api, alias(c, optIn), name, stream);
          const text = await res.text();
          assert.equal(res.status, 200, `${name}: ${text.slice(0, 300)}`);
          got.push(`${res.headers.get("x-cache")} ${told(api, text, stream)}`);
        }
        seen[name] = `${got.join(", ")}; upstream ${calls() - before}`;
      }
    }
  }
  return seen;
}

/** What {@linkcode ask} must see: kept only under `cache_incomplete`, and told it did not end, fresh or hit. */
function rule(api: Api): Record<string, string> {
  const expected: Record<string, string> = {};
  for (const c of CASES) {
    for (const optIn of Object.keys(OPT_INS) as OptIn[]) {
      for (const stream of [false, true]) {
        const name = `${api} ${stream ? "stream" : "JSON"} ${c.model} ${optIn}`;
        const said = c.told[api];
        expected[name] = optIn === "incomplete"
          ? `MISS ${said}, HIT ${said}; upstream 1`
          : `MISS ${said}, MISS ${said}; upstream 2`;
      }
    }
  }
  return expected;
}

for (const api of APIS) {
  Deno.test(`cache cut reasons: ${api} keeps a paused or filtered answer only under cache_incomplete`, async () => {
    const fakes = startFakes({ claude: startFakeAnthropic, gemini: startFakeGemini });
    const gw = await startGateway(config(fakes.claude.baseURL, fakes.gemini.baseURL));
    try {
      const calls = () => fakes.claude.requests.length + fakes.gemini.requests.length;
      assert.deepEqual(await ask(gw, api, calls), rule(api));
    } finally {
      await gw.stop();
      await fakes.stop();
    }
  });
}

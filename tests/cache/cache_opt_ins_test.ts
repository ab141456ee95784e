/**
 * The cache's opt-ins are one rule for every client API and path (docs/caching.md): an answer that hands the
 * client a tool call to run is kept only under `cache_tool_calls`, one cut off (by its output limit) only under
 * `cache_incomplete`, one that is both only under both, and one with several choices only under `cache_n`.
 * Chat completions, Responses, Messages and Gemini's generateContent, each on a translated target (an
 * OpenAI-compatible upstream) and, where the API has one, on a native one (a `native_responses` target, Claude,
 * Gemini), JSON and streamed, each answer asked twice under each opt-in: `MISS,HIT` when it was kept,
 * `MISS,MISS` when it was not.
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { type RawRequest, type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";
import { chatAnswer, type Ending, geminiAnswer, messagesAnswer, responsesAnswer } from "./opt_in_answers.ts";

type Api = "chat" | "responses" | "messages" | "gemini";
type Target = "compat" | "native" | "claude" | "gem";

const ENDINGS: Ending[] = ["calls", "cut", "both", "two"];

/** Each opt-in set an alias is configured with, by name. */
const OPT_INS = {
  none: {},
  tool_calls: { cache_tool_calls: true },
  incomplete: { cache_incomplete: true },
  both: { cache_tool_calls: true, cache_incomplete: true },
  n: { cache_n: true },
} as const;
type OptIn = keyof typeof OPT_INS;

/** The intended rule: every opt-in the answer needs is on. */
function kept(ending: Ending, optIn: OptIn): boolean {
  const on: Record<string, boolean> = OPT_INS[optIn];
  const calls = ending === "calls" || ending === "both";
  const cut = ending === "cut" || ending === "both";
  return (!calls || on.cache_tool_calls === true) && (!cut || on.cache_incomplete === true) &&
    (ending !== "two" || on.cache_n === true);
}

/** The upstream's answer to a request the gateway sent: the target's wire format, the ending its model names. */
function stepFor(request: RawRequest): RawStep {
  const body = JSON.parse(request.body || "{}") as Record<string, unknown>;
  const stream = body.stream === true;
  if (request.path.startsWith("/oai/")) return chatAnswer(body.model as Ending, stream);
  if (request.path.startsWith("/resp/")) return responsesAnswer(body.model as Ending, stream);
  if (request.path.startsWith("/v1/messages")) return messagesAnswer(body.model as Ending, stream);
  const gemini = request.path.match(/^\/v1beta\/models\/([a-z]+):(\w+)/);
  if (gemini) return geminiAnswer(gemini[1] as Ending, gemini[2] === "streamGenerateContent");
  return { status: 404, chunks: [] };
}

function alias(target: Target, ending: Ending, optIn: OptIn): string {
  return `chat-${target}-${ending}-${optIn}`;
}

function config(url: string): string {
  const models: string[] = [];
  for (const target of ["compat", "native", "claude", "gem"] as Target[]) {
    for (const ending of ENDINGS) {
      for (const [optIn, settings] of Object.entries(OPT_INS)) {
        models.push(
          `  ${
            alias(target, ending, optIn as OptIn)
          }: { type: chat, targets: [{ provider: ${target}, model: ${ending} }], cache: ${
            JSON.stringify(settings)
          } }`,
        );
      }
    }
  }
  return `
providers:
  compat: { type: openai, base_url: "${url}/oai/v1", api_key: "sk-compat-0123456789" }
  native: { type: openai, base_url: "${url}/resp/v1", api_key: "sk-native-0123456789", native_responses: true }
  claude: { type: anthropic, base_url: "${url}", api_key: "sk-ant-0123456789" }
  gem: { type: gemini, base_url: "${url}/v1beta", api_key: "gem-key-0123456789" }
models:
${models.join("\n")}
${TEST_TOKENS_YAML}`;
}

const PARAMETERS = { type: "object", properties: { q: { type: "string" } } };

/** One request of `api` to `model`, its question `prompt`; `n` asks chat completions for several choices. */
function request(base: string, api: Api, model: string, prompt: string, stream: boolean, n: number): Request {
  const post = (path: string, headers: Record<string, string>, body: unknown) =>
    new Request(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
  const bearer = { authorization: `Bearer ${TEST_TOKEN}` };
  if (api === "chat") {
    return post("/v1/chat/completions", bearer, {
      model,
      messages: [{ role: "user", content: prompt }],
      tools: [{ type: "function", function: { name: "lookup", parameters: PARAMETERS } }],
      stream,
      ...(n > 1 ? { n } : {}),
    });
  }
  if (api === "responses") {
    return post("/v1/responses", bearer, {
      model,
      input: prompt,
      tools: [{ type: "function", name: "lookup", parameters: PARAMETERS }],
      stream,
      store: false,
    });
  }
  if (api === "messages") {
    return post("/v1/messages", { "x-api-key": TEST_TOKEN, "anthropic-version": "2023-06-01" }, {
      model,
      max_tokens: 50,
      messages: [{ role: "user", content: prompt }],
      tools: [{ name: "lookup", input_schema: PARAMETERS }],
      stream,
    });
  }
  const method = stream ? "streamGenerateContent?alt=sse" : "generateContent";
  return post(`/v1beta/models/${model}:${method}`, { "x-goog-api-key": TEST_TOKEN }, {
    contents: [{ role: "user", parts: [{ text: prompt }] }],
    tools: [{ functionDeclarations: [{ name: "lookup", parameters: PARAMETERS }] }],
  });
}

/**
 * Asks every ending twice under every opt-in, through `api` on each of `targets`, JSON and streamed; returns
 * what was seen and what the rule says, by case.
 */
async function statuses(
  api: Api,
  targets: Target[],
  endings: Ending[],
  also?: (url: string) => Promise<void>,
): Promise<{ seen: Record<string, string>; rule: Record<string, string> }> {
  const up = startRawUpstream();
  up.stepFor = stepFor;
  const gw = await startGateway(config(up.url));
  const seen: Record<string, string> = {};
  const rule: Record<string, string> = {};
  try {
    for (const target of targets) {
      for (const ending of endings) {
        for (const optIn of Object.keys(OPT_INS) as OptIn[]) {
          for (const stream of [false, true]) {
            const name = `${api} on ${target}: ${ending} under ${optIn}${stream ? ", streamed" : ""}`;
            // Its own question per shape: a translated entry is keyed without `stream`.
            const prompt = `${name}?`;
            const got: string[] = [];
            for (let i = 0; i < 2; i++) {
              const model = alias(target, ending, optIn);
              const res = await fetch(request(gw.url, api, model, prompt, stream, ending === "two" ? 2 : 1));
              const text = await res.text();
              assert.equal(res.status, 200, `${name}: ${text.slice(0, 300)}`);
              got.push(String(res.headers.get("x-cache")));
            }
            seen[name] = got.join(",");
            rule[name] = kept(ending, optIn) ? "MISS,HIT" : "MISS,MISS";
          }
        }
      }
    }
    await also?.(gw.url);
  } finally {
    await gw.stop();
    await up.stop();
  }
  return { seen, rule };
}

Deno.test("cache opt-ins: chat completions keeps a tool call, a cut answer, both, several choices by one rule", async () => {
  const { seen, rule } = await statuses("chat", ["compat"], ENDINGS);
  assert.deepEqual(seen, rule);
});

Deno.test("cache opt-ins: Responses, translated and native, by the same rule", async () => {
  const { seen, rule } = await statuses("responses", ["compat", "native"], ["calls", "cut", "both"]);
  assert.deepEqual(seen, rule);
});

Deno.test("cache opt-ins: Messages, translated and native, by the same rule", async () => {
  const { seen, rule } = await statuses("messages", ["compat", "claude"], ["calls", "cut", "both"]);
  assert.deepEqual(seen, rule);
});

Deno.test("cache opt-ins: Gemini generateContent, translated and native, by the same rule", async () => {
  // Gemini's several choices (`candidateCount` above 1) are refused on either path (docs/caching.md): only an
  // upstream that gives several candidates unasked tests `cache_n` there.
  const refusesCandidates = async (url: string) => {
    for (const target of ["compat", "gem"] as Target[]) {
      const res = await fetch(`${url}/v1beta/models/${alias(target, "two", "n")}:generateContent`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-goog-api-key": TEST_TOKEN },
        body: JSON.stringify({
          contents: [{ role: "user", parts: [{ text: "two?" }] }],
          generationConfig: { candidateCount: 2 },
        }),
      });
      const error = (await res.json()).error;
      assert.equal(res.status, 400, target);
      assert.match(error.message, /candidateCount/);
    }
  };
  const { seen, rule } = await statuses("gemini", ["compat", "gem"], ENDINGS, refusesCandidates);
  assert.deepEqual(seen, rule);
});

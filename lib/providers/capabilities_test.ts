import assert from "node:assert/strict";
import { type ProviderConfig, providerSchema } from "../config/provider_schema.ts";
import type { ResolvedTarget } from "../config/types.ts";
import {
  anthropicBetaPaths,
  anthropicBetasDropped,
  anthropicVersionDropped,
  capabilitiesOf,
  countsInputTokens,
  embeddingParamsOn,
  genAiProviderName,
  PROVIDER_TYPES,
  type ProviderType,
  speaksNatively,
  takesTopK,
} from "./capabilities.ts";
import { createProvider } from "./registry.ts";

/** A valid entry of each type, with `native_responses` where the type has it. */
function entry(type: ProviderType, nativeResponses: boolean): ProviderConfig {
  const raw: Record<ProviderType, Record<string, unknown>> = {
    builtin: {},
    openai: { base_url: "http://127.0.0.1:1/v1", native_responses: nativeResponses },
    anthropic: { api_key: "k" },
    gemini: { api_key: "k" },
    azure: {
      base_url: "https://r.openai.azure.com/openai/v1",
      api_key: "k",
      native_responses: nativeResponses,
    },
    bedrock: { region: "us-east-1", access_key_id: "a", secret_access_key: "s" },
  };
  return providerSchema.parse({ type, ...raw[type] });
}

function target(providerConfig: ProviderConfig, model: string): ResolvedTarget {
  return { provider: "p", model, providerConfig } as ResolvedTarget;
}

Deno.test("capabilities: every row matches what that type's adapter implements", () => {
  for (const type of PROVIDER_TYPES) {
    for (const native of [false, true]) {
      const config = entry(type, native);
      const provider = createProvider(config);
      const row = capabilitiesOf(type);
      const t = target(config, "anthropic.claude-3-5-haiku-20241022-v1:0");
      assert.equal(
        typeof provider.responses === "function",
        speaksNatively(t, "responses"),
        `${type} responses`,
      );
      assert.equal(typeof provider.messages === "function", row.messages !== "never", `${type} messages`);
      assert.equal(typeof provider.gemini === "function", row.gemini, `${type} gemini`);
      assert.equal(speaksNatively(t, "gemini"), row.gemini, `${type} gemini`);
      assert.equal(
        typeof provider.countInputTokens === "function",
        countsInputTokens(t, "responses"),
        `${type} counting`,
      );
      if (row.countTokens !== "when_configured") {
        for (const api of ["responses", "messages", "gemini"] as const) {
          assert.equal(countsInputTokens(t, api), row.countTokens === "always", `${type} counting ${api}`);
        }
      }
      // The row, for a model its type does not narrow (Claude on Bedrock takes top_k: below).
      assert.equal(takesTopK(target(config, "m")), row.topK, `${type} top_k`);
      assert.equal(
        typeof provider.moderate === "function",
        row.serves.includes("moderation"),
        `${type} moderation`,
      );
    }
  }
});

Deno.test("capabilities: native passthrough per target (native_responses, Claude on Bedrock)", () => {
  assert.equal(speaksNatively(target(entry("openai", true), "gpt-5"), "responses"), true);
  assert.equal(speaksNatively(target(entry("openai", false), "gpt-5"), "responses"), false);
  assert.equal(speaksNatively(target(entry("azure", true), "gpt-5"), "responses"), true);
  assert.equal(speaksNatively(target(entry("anthropic", false), "claude-sonnet-4-5"), "messages"), true);
  assert.equal(speaksNatively(target(entry("anthropic", false), "claude-sonnet-4-5"), "responses"), false);
  assert.equal(
    speaksNatively(target(entry("bedrock", false), "eu.anthropic.claude-sonnet-4-5-v1:0"), "messages"),
    true,
  );
  assert.equal(speaksNatively(target(entry("bedrock", false), "amazon.nova-pro-v1:0"), "messages"), false);
  assert.equal(speaksNatively(target(entry("openai", true), "claude-sonnet-4-5"), "messages"), false);
  assert.equal(countsInputTokens(target(entry("openai", true), "gpt-5"), "responses"), true);
  // Its counting endpoint is the Responses API's: another API's count is the gateway's.
  assert.equal(countsInputTokens(target(entry("openai", true), "gpt-5"), "messages"), false);
  assert.equal(countsInputTokens(target(entry("openai", true), "gpt-5"), "gemini"), false);
  assert.equal(countsInputTokens(target(entry("openai", false), "gpt-5"), "responses"), false);
  // Only the chat form may be counted (a guardrail's change the client's body cannot carry): that endpoint cannot.
  assert.equal(countsInputTokens(target(entry("openai", true), "gpt-5"), "responses", true), false);
  assert.equal(
    countsInputTokens(target(entry("anthropic", false), "claude-sonnet-4-5"), "messages", true),
    true,
  );
  assert.equal(countsInputTokens(target(entry("gemini", false), "gemini-2.5-pro"), "gemini", true), true);
  assert.equal(takesTopK(target(entry("openai", false), "llama")), true);
  assert.equal(takesTopK(target(entry("gemini", false), "gemini-2.5-pro")), false);
});

Deno.test("capabilities: top_k per target (Claude on Bedrock takes it, OpenAI's own API does not)", () => {
  const openai = (baseUrl: string) => providerSchema.parse({ type: "openai", base_url: baseUrl });
  assert.equal(takesTopK(target(openai("http://localhost:8000/v1"), "llama")), true);
  assert.equal(takesTopK(target(openai("https://api.openai.com/v1"), "gpt-5")), false);
  assert.equal(takesTopK(target(openai("https://API.OpenAI.com/v1/"), "gpt-5")), false);
  assert.equal(takesTopK(target(entry("azure", false), "gpt-4o")), false);
  assert.equal(takesTopK(target(entry("anthropic", false), "claude-sonnet-4-5")), true);
  assert.equal(
    takesTopK(target(entry("bedrock", false), "us.anthropic.claude-sonnet-4-5-20250929-v1:0")),
    true,
  );
  assert.equal(takesTopK(target(entry("bedrock", false), "amazon.nova-pro-v1:0")), false);
});

Deno.test("capabilities: each type's gen_ai.provider.name is a GenAI conventions' well-known value, or the gateway's own", () => {
  const wellKnown = ["openai", "anthropic", "gcp.gemini", "azure.ai.openai", "aws.bedrock"];
  for (const type of PROVIDER_TYPES) {
    const name = genAiProviderName(target(entry(type, false), "m"));
    if (type === "builtin") assert.equal(name, "gateway.builtin");
    else assert.ok(wellKnown.includes(name), `${type}: ${name}`);
  }
});

Deno.test("capabilities: the betas a native Messages target leaves out, named for x-gateway-dropped", () => {
  const betas = "claude-code-20250219,interleaved-thinking-2025-05-14,oauth-2025-04-20";
  const claude = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
  assert.deepEqual(anthropicBetasDropped(target(entry("bedrock", false), claude), betas), [
    "anthropic-beta:claude-code-20250219",
    "anthropic-beta:oauth-2025-04-20",
  ]);
  assert.deepEqual(anthropicBetasDropped(target(entry("bedrock", false), claude), null), []);
  assert.deepEqual(anthropicBetasDropped(target(entry("anthropic", false), "claude-sonnet-4-5"), betas), []);
  const own = providerSchema.parse({
    type: "bedrock",
    region: "us-east-1",
    anthropic_betas: ["claude-code-20250219", "oauth-2025-04-20"],
  });
  assert.deepEqual(anthropicBetasDropped(target(own, claude), betas), [
    "anthropic-beta:interleaved-thinking-2025-05-14",
  ]);
  // The entry's list is validated: beta names only.
  for (const bad of [["a b"], ["x,y"], [""], "interleaved-thinking-2025-05-14"]) {
    const parsed = providerSchema.safeParse({ type: "bedrock", region: "us-east-1", anthropic_betas: bad });
    assert.equal(parsed.success, false, JSON.stringify(bad));
  }
});

Deno.test("capabilities: Claude on Bedrock names the body's unlisted betas and the version it replaced", () => {
  const claude = target(entry("bedrock", false), "us.anthropic.claude-sonnet-4-5-20250929-v1:0");
  const body = {
    anthropic_version: "something",
    anthropic_beta: ["not-allowed-beta", "claude-code-20250219"],
  };
  assert.deepEqual(anthropicBetasDropped(claude, "claude-code-20250219", body), [
    "anthropic-beta:claude-code-20250219",
    "anthropic-beta:not-allowed-beta",
  ]);
  assert.deepEqual(anthropicVersionDropped(claude, body), ["anthropic_version"]);
  assert.deepEqual(anthropicVersionDropped(claude, { anthropic_version: "bedrock-2023-05-31" }), []);
  // Anthropic gets the body as sent; a translated target's chat form names the fields as fields.
  const anthropic = target(entry("anthropic", false), "claude-sonnet-4-5");
  assert.deepEqual(anthropicBetasDropped(anthropic, null, body), []);
  assert.deepEqual(anthropicVersionDropped(anthropic, body), []);
  const nova = target(entry("bedrock", false), "amazon.nova-pro-v1:0");
  assert.deepEqual(anthropicBetasDropped(nova, null, body), []);
  assert.deepEqual(anthropicVersionDropped(nova, body), []);
});

Deno.test("capabilities: a translated Messages target leaves out every beta, each named once", () => {
  const betas = "claude-code-20250219, interleaved-thinking-2025-05-14,claude-code-20250219";
  const all = ["anthropic-beta:claude-code-20250219", "anthropic-beta:interleaved-thinking-2025-05-14"];
  for (const type of PROVIDER_TYPES) {
    const model = type === "bedrock" ? "amazon.nova-pro-v1:0" : "m";
    const translated = target(entry(type, true), model);
    if (speaksNatively(translated, "messages")) continue;
    assert.deepEqual(anthropicBetasDropped(translated, betas), all, type);
    assert.deepEqual(anthropicBetasDropped(translated, null), [], type);
  }
  // A Bedrock model that is not Claude is translated (Converse): it takes no beta, whatever the entry's list.
  const own = providerSchema.parse({
    type: "bedrock",
    region: "us-east-1",
    anthropic_betas: ["interleaved-thinking-2025-05-14"],
  });
  assert.deepEqual(anthropicBetasDropped(target(own, "amazon.nova-pro-v1:0"), betas), all);
  assert.deepEqual(anthropicBetaPaths(betas), all);
  assert.deepEqual(anthropicBetaPaths(null), []);
});

/** What `embeddingParamsOn` says of `request` on a target of `type` (the entry's `unsupported_params` given). */
function embeddingVerdict(
  type: ProviderType,
  model: string,
  request: Record<string, unknown>,
  unsupported: "error" | "drop" = "error",
) {
  const config = {
    ...entry(type, false),
    ...(type === "builtin" ? {} : { unsupported_params: unsupported }),
  };
  return embeddingParamsOn(target(config as ProviderConfig, model), { model: "alias", ...request } as never);
}

Deno.test("capabilities: what each type cannot embed is known before routing, as its adapter refuses it", () => {
  const on = (type: ProviderType, model: string, request: Record<string, unknown>) => {
    const verdict = embeddingVerdict(type, model, request);
    return verdict !== null && "refusal" in verdict ? verdict.refusal.code : verdict;
  };
  const ids = { input: [[1, 2], [3]] };
  assert.equal(on("openai", "m", ids), null);
  assert.equal(on("azure", "m", { input: "a", dimensions: 7 }), null);
  assert.equal(on("gemini", "gemini-embedding-001", ids), "unsupported_input");
  assert.equal(on("gemini", "gemini-embedding-001", { input: ["a"], dimensions: 768 }), null);
  assert.equal(on("bedrock", "amazon.titan-embed-text-v2:0", { input: [5, 6] }), "unsupported_input");
  assert.equal(
    on("bedrock", "amazon.titan-embed-text-v2:0", { input: "a", dimensions: 1536 }),
    "unsupported_dimensions",
  );
  assert.equal(on("bedrock", "amazon.titan-embed-text-v2:0", { input: "a", dimensions: 512 }), null);
  assert.equal(
    on("bedrock", "cohere.embed-english-v3", { input: "a", dimensions: 512 }),
    "unsupported_dimensions",
  );
  assert.equal(on("bedrock", "cohere.embed-v4:0", { input: "a", dimensions: 1536 }), null);
  assert.equal(on("bedrock", "meta.llama3", { input: "a" }), "model_not_supported");
  assert.equal(on("builtin", "hash", { input: [1], dimensions: 4096 }), null);
  const builtin = embeddingVerdict("builtin", "hash", { input: "a", dimensions: 4097 });
  assert.ok(builtin !== null && "refusal" in builtin);
  assert.equal(builtin.refusal.status, 400);
  assert.equal(builtin.refusal.param, "dimensions");
});

Deno.test("capabilities: an embedding field a translation does not read is refused, or dropped and named", () => {
  const extra = {
    input: "a",
    encoding_format: "base64",
    user: "u",
    input_type: "search_query",
    task_type: "X",
  };
  // OpenAI-compatible targets get every field as sent.
  assert.equal(embeddingVerdict("openai", "m", extra), null);
  assert.equal(embeddingVerdict("azure", "m", extra), null);
  const refused = embeddingVerdict("gemini", "gemini-embedding-001", extra);
  assert.ok(refused !== null && "refusal" in refused);
  assert.equal(refused.refusal.param, "input_type");
  assert.equal(refused.refusal.code, "unsupported_parameter");
  assert.deepEqual(embeddingVerdict("gemini", "gemini-embedding-001", extra, "drop"), {
    dropped: ["input_type", "task_type"],
  });
  // Cohere reads `input_type` (one of its values); Titan does not.
  const cohere = "cohere.embed-english-v3";
  assert.equal(embeddingVerdict("bedrock", cohere, { input: "a", input_type: "search_query" }), null);
  assert.deepEqual(embeddingVerdict("bedrock", cohere, { input: "a", input_type: "query" }, "drop"), {
    dropped: ["input_type"],
  });
  assert.deepEqual(
    embeddingVerdict(
      "bedrock",
      "amazon.titan-embed-text-v2:0",
      { input: "a", input_type: "search_query" },
      "drop",
    ),
    { dropped: ["input_type"] },
  );
  // The gateway's own fields and `user` are no loss.
  assert.equal(
    embeddingVerdict("gemini", "g", { input: "a", encoding_format: "float", dimensions: 8, user: "u" }),
    null,
  );
});

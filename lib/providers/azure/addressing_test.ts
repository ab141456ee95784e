/** Azure addressing for both forms, and the config mistakes it refuses. */
import assert from "node:assert/strict";
import type { AzureProviderConfig } from "../../config/schema.ts";
import { azureAddressing, azureUrl } from "./addressing.ts";
import { createAzureProvider } from "./adapter.ts";

const RES = "https://contoso.openai.azure.com";

Deno.test("azure addressing: classic and v1 URLs", () => {
  const cases: [
    base: string,
    version: string | undefined,
    deployment: string,
    op: "chat/completions" | "embeddings",
    url: string,
  ][] = [
    // learn.microsoft.com Azure OpenAI REST reference: {endpoint}/openai/deployments/{deployment-id}/chat/completions?api-version=
    [
      RES,
      "2024-10-21",
      "gpt-4o",
      "chat/completions",
      `${RES}/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21`,
    ],
    [
      `${RES}/`,
      "2024-10-21",
      "emb",
      "embeddings",
      `${RES}/openai/deployments/emb/embeddings?api-version=2024-10-21`,
    ],
    // A base that already ends in /openai (some SDK configs) is not doubled.
    [
      `${RES}/openai/`,
      "2024-06-01",
      "gpt-4o",
      "chat/completions",
      `${RES}/openai/deployments/gpt-4o/chat/completions?api-version=2024-06-01`,
    ],
    // Proxies (APIM) put the resource under a path prefix.
    [
      "https://apim.example.com/aoai",
      "2025-04-01-preview",
      "gpt-4o",
      "embeddings",
      "https://apim.example.com/aoai/openai/deployments/gpt-4o/embeddings?api-version=2025-04-01-preview",
    ],
    // The deployment is one path segment, percent-encoded.
    [
      RES,
      "2024-10-21",
      "my dep/1?x",
      "chat/completions",
      `${RES}/openai/deployments/my%20dep%2F1%3Fx/chat/completions?api-version=2024-10-21`,
    ],
    // api-version-lifecycle: v1 base_url https://{resource}.openai.azure.com/openai/v1/, no api-version needed.
    [`${RES}/openai/v1`, undefined, "gpt-4o", "chat/completions", `${RES}/openai/v1/chat/completions`],
    [`${RES}/openai/v1/`, undefined, "gpt-4o", "embeddings", `${RES}/openai/v1/embeddings`],
    // …and `?api-version=preview` opts the v1 API into preview features.
    [
      `${RES}/openai/v1`,
      "preview",
      "gpt-4o",
      "chat/completions",
      `${RES}/openai/v1/chat/completions?api-version=preview`,
    ],
  ];
  for (const [base, version, deployment, op, url] of cases) {
    assert.equal(azureUrl(azureAddressing(base, version), deployment, op), url, `${base} ${version} ${op}`);
  }
  assert.equal(azureAddressing(`${RES}/openai/v1`).form, "v1");
  assert.equal(azureAddressing(RES, "2024-10-21").form, "classic");
});

Deno.test("azure addressing: unusable config is an Error naming the fix", () => {
  assert.throws(() => azureAddressing(RES), /set api_version .*\/openai\/v1/);
  assert.throws(() => azureAddressing(`${RES}/openai`), /set api_version/);
  assert.throws(
    () => azureAddressing(`${RES}/openai/deployments/gpt-4o`, "2024-10-21"),
    /not a deployment URL/,
  );
  assert.throws(() => azureAddressing(`${RES}?api-version=2024-10-21`), /query string/);
  const config = { type: "azure", base_url: RES, api_key: "k" } as AzureProviderConfig;
  assert.throws(() => createAzureProvider(config), Error);
});

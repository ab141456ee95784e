import assert from "node:assert/strict";
import type { BedrockProviderConfig } from "../../config/schema.ts";
import { bedrockUrl, resolveBedrockSettings } from "./settings.ts";
import { createBedrockProvider } from "./adapter.ts";

const base: BedrockProviderConfig = {
  type: "bedrock",
  headers: {},
  timeouts: {},
  unsupported_params: "error",
};

Deno.test("bedrock settings: config wins, environment fills in, default endpoint per region", () => {
  const env = {
    AWS_REGION: "eu-west-1",
    AWS_DEFAULT_REGION: "us-west-2",
    AWS_ACCESS_KEY_ID: "AKIDENV",
    AWS_SECRET_ACCESS_KEY: "envsecret",
    AWS_SESSION_TOKEN: "envtoken",
  };
  assert.deepEqual(resolveBedrockSettings(base, env), {
    region: "eu-west-1",
    baseUrl: "https://bedrock-runtime.eu-west-1.amazonaws.com",
    credentials: { accessKeyId: "AKIDENV", secretAccessKey: "envsecret", sessionToken: "envtoken" },
  });
  assert.equal(resolveBedrockSettings(base, { ...env, AWS_REGION: "" }).region, "us-west-2");
  const fromConfig = resolveBedrockSettings({
    ...base,
    region: "ap-southeast-2",
    base_url: "https://vpce-123.bedrock-runtime.ap-southeast-2.vpce.amazonaws.com/",
    access_key_id: "AKIDCFG",
    secret_access_key: "cfgsecret",
  }, env);
  assert.deepEqual(fromConfig, {
    region: "ap-southeast-2",
    baseUrl: "https://vpce-123.bedrock-runtime.ap-southeast-2.vpce.amazonaws.com",
    // The environment's session token belongs to the environment's keys, not to keys written in config.
    credentials: { accessKeyId: "AKIDCFG", secretAccessKey: "cfgsecret", sessionToken: undefined },
  });
});

Deno.test("bedrock settings: missing region or credentials throw a plain Error naming what is missing", () => {
  assert.throws(
    () => resolveBedrockSettings(base, { AWS_ACCESS_KEY_ID: "a", AWS_SECRET_ACCESS_KEY: "b" }),
    /region/,
  );
  assert.throws(() => resolveBedrockSettings({ ...base, region: "us-east-1" }, {}), /credentials/);
  assert.throws(
    () => resolveBedrockSettings({ ...base, region: "us-east-1" }, { AWS_ACCESS_KEY_ID: "a" }),
    /credentials/,
  );
  assert.throws(() => createBedrockProvider(base, {}), Error);
});

Deno.test("bedrock url: the model id is percent-encoded once in the path", () => {
  assert.equal(
    bedrockUrl(
      "https://bedrock-runtime.us-east-1.amazonaws.com",
      "anthropic.claude-3-5-sonnet-20240620-v1:0",
      "converse",
    ),
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse",
  );
  assert.equal(
    bedrockUrl("http://proxy/x", "arn:aws:bedrock:us-east-1:123:inference-profile/us.m-v1:0", "invoke"),
    "http://proxy/x/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2Fus.m-v1%3A0/invoke",
  );
});

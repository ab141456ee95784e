/**
 * AWS Bedrock: chat through Converse / ConverseStream, embeddings through InvokeModel (Titan, Cohere), every
 * request signed with SigV4 (service `bedrock`) using Web Crypto — no AWS SDK.
 *
 * Translation lives in `bedrock_request.ts`, `bedrock_response.ts`, `bedrock_stream.ts` and
 * `bedrock_embeddings.ts`; the binary stream framing in `eventstream.ts`; signing in `sigv4.ts`. This module
 * resolves configuration (region and credentials from the config entry or the standard AWS environment
 * variables), signs, sends through the shared transport and joins the stream stages with `pullThrough`, so a
 * client that goes away cancels the upstream request.
 *
 * @module
 */
import type { BedrockProviderConfig } from "../config/schema.ts";
import { badGateway } from "../errors.ts";
import { BEDROCK_UNSUPPORTED, toConverseRequest } from "./bedrock_request.ts";
import { bedrockEmbed } from "./bedrock_embeddings.ts";
import { bedrockHttpError, fromConverseResponse } from "./bedrock_response.ts";
import { converseChunkTransformer } from "./bedrock_stream.ts";
import { eventStreamTransformer } from "./eventstream.ts";
import { pullThrough } from "../streams/pull_through.ts";
import { type AwsCredentials, signRequest, uriEncode } from "./sigv4.ts";
import { sendUpstream, upstreamLimits, type UpstreamResponse } from "./transport.ts";
import type { ChatResult, EmbeddingResult, Provider, UpstreamCall } from "./types.ts";
import type { ChatRequest, EmbeddingRequest, JsonObject } from "../openai/types.ts";
import { applyUnsupportedRules } from "./unsupported_params.ts";

/** Where and as whom a Bedrock provider calls. */
export interface BedrockSettings {
  region: string;
  baseUrl: string;
  credentials: AwsCredentials;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.trim() !== "" ? value : undefined;
}

/**
 * Region, endpoint and credentials for a config entry. Each credential falls back to the AWS environment
 * variables; a session token from the environment is used only with the environment's key pair, so a key pair
 * written in config is never mixed with another identity's token. Throws an `Error` naming what is missing.
 */
export function resolveBedrockSettings(
  config: BedrockProviderConfig,
  env: Readonly<Record<string, string | undefined>>,
): BedrockSettings {
  const region = config.region ?? nonEmpty(env.AWS_REGION) ?? nonEmpty(env.AWS_DEFAULT_REGION);
  if (region === undefined) {
    throw new Error("no AWS region: set `region` in the provider entry, or AWS_REGION / AWS_DEFAULT_REGION");
  }
  const fromConfig = config.access_key_id !== undefined || config.secret_access_key !== undefined;
  const accessKeyId = config.access_key_id ?? nonEmpty(env.AWS_ACCESS_KEY_ID);
  const secretAccessKey = config.secret_access_key ?? nonEmpty(env.AWS_SECRET_ACCESS_KEY);
  if (accessKeyId === undefined || secretAccessKey === undefined) {
    throw new Error(
      "no AWS credentials: set `access_key_id` and `secret_access_key` in the provider entry, or " +
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment",
    );
  }
  const sessionToken = config.session_token ?? (fromConfig ? undefined : nonEmpty(env.AWS_SESSION_TOKEN));
  const baseUrl = (config.base_url ?? `https://bedrock-runtime.${region}.amazonaws.com`).replace(/\/+$/, "");
  return { region, baseUrl, credentials: { accessKeyId, secretAccessKey, sessionToken } };
}

/** `{base}/model/{modelId}/{action}` with the model id percent-encoded once (`:` → `%3A`, `/` → `%2F`). */
export function bedrockUrl(
  baseUrl: string,
  modelId: string,
  action: "converse" | "converse-stream" | "invoke",
) {
  return `${baseUrl}/model/${uriEncode(modelId)}/${action}`;
}

/** Headers the signer sets; an operator's `headers` entry cannot replace them. */
const RESERVED_HEADERS = new Set([
  "host",
  "authorization",
  "content-type",
  "content-length",
  "x-amz-date",
  "x-amz-security-token",
  "x-amz-content-sha256",
]);

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Creates the provider for one `type: bedrock` config entry; throws an `Error` if it cannot be set up. */
export function createBedrockProvider(
  config: BedrockProviderConfig,
  env: Readonly<Record<string, string | undefined>>,
): Provider {
  const settings = resolveBedrockSettings(config, env);
  const { accessKeyId, secretAccessKey, sessionToken } = settings.credentials;
  const secrets: readonly string[] = [accessKeyId, secretAccessKey, ...(sessionToken ? [sessionToken] : [])];

  async function send(
    call: UpstreamCall,
    action: "converse" | "converse-stream" | "invoke",
    body: JsonObject,
  ): Promise<UpstreamResponse> {
    const url = bedrockUrl(settings.baseUrl, call.target.model, action);
    const text = JSON.stringify(body);
    // Operator headers (a proxy's auth …) travel unsigned so a proxy may strip them without breaking SigV4;
    // `x-amz-*` ones must be signed (AWS requires it). Headers the signer owns cannot be overridden.
    const toSign: [string, string][] = [["content-type", "application/json"]];
    const unsigned: Record<string, string> = {};
    for (const [name, value] of Object.entries(config.headers)) {
      const lower = name.toLowerCase();
      if (RESERVED_HEADERS.has(lower)) continue;
      if (lower.startsWith("x-amz-")) toSign.push([lower, value]);
      else unsigned[lower] = value;
    }
    const signed = await signRequest({
      method: "POST",
      url,
      headers: toSign,
      body: text,
      region: settings.region,
      service: "bedrock",
      credentials: settings.credentials,
    });
    const headers: Record<string, string> = { ...unsigned, ...signed };
    if (action !== "converse-stream") headers.accept = "application/json";
    const res = await sendUpstream({ url, headers, body: text }, call);
    if (res.status < 200 || res.status >= 300) {
      const errorText = await res.text().catch(() => "");
      throw bedrockHttpError(call.target.provider, res.status, res.headers, errorText, secrets);
    }
    return res;
  }

  async function readJson(provider: string, res: UpstreamResponse): Promise<JsonObject> {
    const text = await res.text();
    try {
      const json = JSON.parse(text);
      if (isObject(json)) return json;
    } catch { /* reported below */ }
    throw badGateway(
      `Provider "${provider}" returned a body that is not a JSON object.`,
      "upstream_invalid_response",
    );
  }

  return {
    async chat(request: ChatRequest, call: UpstreamCall): Promise<ChatResult> {
      const provider = call.target.provider;
      const filtered = applyUnsupportedRules(
        request,
        BEDROCK_UNSUPPORTED,
        config.unsupported_params,
        "Bedrock",
      );
      const body = toConverseRequest(filtered);
      if (request.stream !== true) {
        const res = await send(call, "converse", body);
        return {
          kind: "json",
          body: fromConverseResponse(provider, await readJson(provider, res), call.target.model),
        };
      }
      const res = await send(call, "converse-stream", body);
      const chunks = pullThrough(
        res.body,
        eventStreamTransformer({ maxMessageBytes: upstreamLimits(call).maxEventBytes, provider }),
        converseChunkTransformer({ provider, model: call.target.model, secrets }),
      );
      return { kind: "stream", chunks };
    },

    async embed(request: EmbeddingRequest, call: UpstreamCall): Promise<EmbeddingResult> {
      const provider = call.target.provider;
      return await bedrockEmbed(provider, call.target.model, request, async (body) => {
        const res = await send(call, "invoke", body);
        return { json: await readJson(provider, res), headers: res.headers };
      });
    },
  };
}

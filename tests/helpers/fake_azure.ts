/**
 * A fake Azure OpenAI resource speaking Azure's documented wire format in both addressing forms:
 *
 * - classic: `/openai/deployments/{deployment}/{chat/completions|embeddings}?api-version={FAKE_AZURE_API_VERSION}`
 *   (a missing or other api-version gets Azure's 404 "Resource not found");
 * - v1: `/openai/v1/{chat/completions|embeddings}` with the deployment in the body's `model` (an api-version
 *   query is refused, so the test proves the gateway sends none).
 *
 * Every request must carry `api-key: FAKE_AZURE_KEY` (else Azure's 401). Behaviour is picked by deployment:
 *
 * - `gpt-4o`: a completion of {@linkcode FAKE_AZURE_ANSWER} with prompt and choice filter annotations; streams
 *   start with the annotation-only chunk (`choices: []`), carry `content_filter_results`, send an annotation
 *   chunk after the finish, and the usage chunk when asked.
 * - `gpt-4o-tools`: a `get_weather` tool call, streamed in argument fragments.
 * - `gpt-4o-filtered`: the content filter's 400 with `innererror`.
 * - `gpt-4o-429`: 429 with `retry-after: 1`.  `gpt-4o-503`: 503.  Unknown deployments: 404 DeploymentNotFound.
 * - `text-embedding-3-small`: embeddings of `dimensions` (default 8) floats exact in float32, as base64 float32s
 *   when asked (like Azure).
 *
 * Like Azure (and OpenAI's own API), a chat request with a parameter OpenAI's chat completions do not have
 * (`top_k`) gets the 400 "Unrecognized request argument supplied: top_k".
 *
 * @module
 */
import { encodeFloat32Base64 } from "../../lib/encoding/float32_base64.ts";

/** The key the fake expects in the `api-key` header. */
export const FAKE_AZURE_KEY = "azure-fake-key-0123456789abcdef";
/** The only api-version the classic form accepts. */
export const FAKE_AZURE_API_VERSION = "2024-10-21";
/** The text `gpt-4o` answers with. */
export const FAKE_AZURE_ANSWER = "Hello from the fake Azure deployment!";

/** One request the fake received. */
export interface AzureRecordedRequest {
  form: "classic" | "v1";
  path: string;
  /** The `api-version` query parameter, or null. */
  apiVersion: string | null;
  deployment: string;
  headers: Headers;
  body: Record<string, unknown>;
}

/** A running fake. */
export interface FakeAzure {
  /** The resource endpoint, for the classic form. */
  endpoint: string;
  /** `endpoint + "/openai/v1"`, for the v1 form. */
  v1BaseURL: string;
  requests: AzureRecordedRequest[];
  stop(): Promise<void>;
}

const encoder = new TextEncoder();
const SAFE = { filtered: false, severity: "safe" };
const CHOICE_FILTER = { hate: SAFE, self_harm: SAFE, sexual: SAFE, violence: SAFE };
const PROMPT_FILTER = [{
  prompt_index: 0,
  content_filter_results: { ...CHOICE_FILTER, jailbreak: { filtered: false, detected: false } },
}];
const ID = "chatcmpl-AzureFake9876543210";
const CREATED = 1_736_407_895;
const MODEL = "gpt-4o-2024-08-06";

function azureError(status: number, error: Record<string, unknown>, headers: Record<string, string> = {}) {
  return new Response(JSON.stringify({ error }), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

function sse(data: unknown): Uint8Array {
  return encoder.encode(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
}

function chunk(choice: Record<string, unknown>, withUsageNull: boolean) {
  return {
    choices: [{ finish_reason: null, index: 0, logprobs: null, ...choice }],
    created: CREATED,
    id: ID,
    model: MODEL,
    object: "chat.completion.chunk",
    system_fingerprint: "fp_azure",
    ...(withUsageNull ? { usage: null } : {}),
  };
}

const TOOL_CALL = {
  id: "call_az1",
  type: "function",
  function: { name: "get_weather", arguments: '{"city":"Paris"}' },
};

function completion(deployment: string) {
  const tools = deployment === "gpt-4o-tools";
  return {
    choices: [{
      content_filter_results: CHOICE_FILTER,
      finish_reason: tools ? "tool_calls" : "stop",
      index: 0,
      logprobs: null,
      message: tools
        ? { content: null, refusal: null, role: "assistant", tool_calls: [TOOL_CALL] }
        : { content: FAKE_AZURE_ANSWER, refusal: null, role: "assistant" },
    }],
    created: CREATED,
    id: ID,
    model: MODEL,
    object: "chat.completion",
    prompt_filter_results: PROMPT_FILTER,
    system_fingerprint: "fp_azure",
    usage: { completion_tokens: 9, prompt_tokens: 13, total_tokens: 22 },
  };
}

function streamBody(deployment: string, includeUsage: boolean): ReadableStream<Uint8Array> {
  const events: unknown[] = [
    {
      choices: [],
      created: 0,
      id: "",
      model: "",
      object: "",
      prompt_filter_results: PROMPT_FILTER,
      usage: null,
    },
    chunk(
      { content_filter_results: {}, delta: { content: "", refusal: null, role: "assistant" } },
      includeUsage,
    ),
  ];
  if (deployment === "gpt-4o-tools") {
    events.push(chunk({
      content_filter_results: {},
      delta: {
        tool_calls: [{
          index: 0,
          id: TOOL_CALL.id,
          type: "function",
          function: { name: "get_weather", arguments: "" },
        }],
      },
    }, includeUsage));
    for (const part of ['{"ci', 'ty":', '"Paris"}']) {
      events.push(
        chunk({ delta: { tool_calls: [{ index: 0, function: { arguments: part } }] } }, includeUsage),
      );
    }
    events.push(chunk({ content_filter_results: {}, delta: {}, finish_reason: "tool_calls" }, includeUsage));
  } else {
    for (const word of FAKE_AZURE_ANSWER.split(/(?<= )/)) {
      events.push(chunk({ content_filter_results: CHOICE_FILTER, delta: { content: word } }, includeUsage));
    }
    events.push(chunk({ content_filter_results: {}, delta: {}, finish_reason: "stop" }, includeUsage));
  }
  // Asynchronous-filter annotation after the finish: empty identity, no delta.
  events.push({
    id: "",
    object: "",
    created: 0,
    model: "",
    choices: [{
      index: 0,
      finish_reason: null,
      content_filter_results: CHOICE_FILTER,
      content_filter_offsets: { check_offset: 40, start_offset: 0, end_offset: 40 },
    }],
    usage: null,
  });
  if (includeUsage) {
    events.push({
      choices: [],
      created: CREATED,
      id: ID,
      model: MODEL,
      object: "chat.completion.chunk",
      system_fingerprint: "fp_azure",
      usage: { completion_tokens: 9, prompt_tokens: 13, total_tokens: 22 },
    });
  }
  events.push("[DONE]");
  return ReadableStream.from(events.map(sse));
}

function embeddings(body: Record<string, unknown>) {
  const input = body.input;
  const inputs = Array.isArray(input) && typeof input[0] !== "number" ? input : [input];
  const dims = typeof body.dimensions === "number" ? body.dimensions : 8;
  const data = inputs.map((_, index) => {
    const vector = Array.from({ length: dims }, (_, i) => (index + 1) * 0.125 + i * 0.0625);
    return {
      object: "embedding",
      index,
      embedding: body.encoding_format === "base64" ? encodeFloat32Base64(vector) : vector,
    };
  });
  return Response.json({
    object: "list",
    data,
    model: "text-embedding-3-small",
    usage: { prompt_tokens: 4, total_tokens: 4 },
  });
}

const CLASSIC = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings)$/;
const V1 = /^\/openai\/v1\/(chat\/completions|embeddings)$/;

/** Starts the fake on a free loopback port. */
export function startFakeAzure(): FakeAzure {
  const requests: AzureRecordedRequest[] = [];
  const handler = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const body = await request.json().catch(() => ({}));
    const apiVersion = url.searchParams.get("api-version");
    const classic = CLASSIC.exec(url.pathname);
    const v1 = V1.exec(url.pathname);
    if (!classic && !v1) return azureError(404, { code: "404", message: "Resource not found" });
    const form = classic ? "classic" : "v1";
    const deployment = classic ? decodeURIComponent(classic[1]) : String(body.model);
    const operation = classic ? classic[2] : v1![1];
    requests.push({ form, path: url.pathname, apiVersion, deployment, headers: request.headers, body });

    if (request.headers.get("api-key") !== FAKE_AZURE_KEY) {
      return azureError(401, {
        code: "401",
        message:
          "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide " +
          "a valid key for an active subscription and use a correct regional API endpoint for your resource.",
      });
    }
    if (form === "classic" && apiVersion !== FAKE_AZURE_API_VERSION) {
      return azureError(404, { code: "404", message: "Resource not found" });
    }
    if (form === "v1" && apiVersion !== null) {
      return azureError(400, { code: "BadRequest", message: "api-version is not allowed here" });
    }
    if (operation === "embeddings") {
      if (deployment !== "text-embedding-3-small") return deploymentNotFound();
      return embeddings(body);
    }
    if ("top_k" in body) {
      return azureError(400, {
        message: "Unrecognized request argument supplied: top_k",
        type: "invalid_request_error",
        param: null,
        code: null,
      });
    }
    switch (deployment) {
      case "gpt-4o-filtered":
        return azureError(400, {
          message:
            "The response was filtered due to the prompt triggering Azure OpenAI's content management " +
            "policy. Please modify your prompt and retry. To learn more about our content filtering policies " +
            "please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766",
          type: null,
          param: "prompt",
          code: "content_filter",
          status: 400,
          innererror: {
            code: "ResponsibleAIPolicyViolation",
            content_filter_result: { ...CHOICE_FILTER, violence: { filtered: true, severity: "high" } },
          },
        });
      case "gpt-4o-429":
        return azureError(429, {
          code: "429",
          message: "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version " +
            `${FAKE_AZURE_API_VERSION} have exceeded call rate limit of your current OpenAI S0 pricing tier. ` +
            "Please retry after 1 second.",
        }, { "retry-after": "1" });
      case "gpt-4o-503":
        return azureError(503, { code: "503", message: "The service is temporarily unavailable." });
      case "gpt-4o":
      case "gpt-4o-tools":
        break;
      default:
        return deploymentNotFound();
    }
    if (body.stream !== true) return Response.json(completion(deployment));
    const includeUsage =
      (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
    return new Response(streamBody(deployment, includeUsage), {
      headers: { "content-type": "text/event-stream" },
    });
  };

  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  const endpoint = `http://127.0.0.1:${server.addr.port}`;
  return { endpoint, v1BaseURL: `${endpoint}/openai/v1`, requests, stop: () => server.shutdown() };
}

function deploymentNotFound(): Response {
  return azureError(404, {
    code: "DeploymentNotFound",
    message:
      "The API deployment for this resource does not exist. If you created the deployment within the " +
      "last 5 minutes, please wait a moment and try again.",
  });
}

/**
 * Local fakes of the external guardrail services, each speaking its documented wire format on 127.0.0.1
 * (port 0), so the adapters in `lib/guardrails/external/` are tested over real sockets:
 * - the gateway's webhook contract: answers what the test scripts, verifies `x-gateway-signature` when given
 *   the secret (401 when wrong);
 * - OpenAI moderations: checks the Bearer key (401 `invalid_api_key` otherwise), one result per input,
 *   flagging `violence` in a text containing {@linkcode FakeModeration.flagWord}, scoring `harassment` 0.4
 *   (unflagged) in one containing "borderline";
 * - Bedrock `ApplyGuardrail`: VERIFIES the SigV4 signature by recomputing it from what arrived (raw path,
 *   signed headers, x-amz-date and its skew, the payload's hash) with {@linkcode FAKE_GUARDRAIL_AWS}; a wrong
 *   secret gets 403 InvalidSignatureException as AWS answers. Blocks a text containing "forbidden" (denied
 *   topic, blocked message), anonymizes emails (`{EMAIL}`), and only detects "suspicious";
 * - Azure AI Content Safety `text:analyze`: checks `Ocp-Apim-Subscription-Key` (401), the api-version and the
 *   10,000-character limit; severities by word ({@linkcode AZURE_WORDS}), blocklist `banned` matches
 *   "contraband".
 *
 * Every fake records its calls with credential headers redacted, and obeys `faults`: a delay or a hold until the
 * test releases it (either cut short when the client goes away) and a failure status whose vendor error body echoes the texts, so a test can prove an
 * adapter's error never repeats them.
 *
 * @module
 */
import { SIGNATURE_HEADER, signBody } from "../../lib/alerts/signature.ts";
import { sha256Hex, signatureFromParts } from "../../lib/aws/sigv4.ts";

/** What a test can make a fake do on its next calls. */
export interface FakeFaults {
  /** Milliseconds to wait before answering. */
  delayMs: number;
  /**
   * Answer only once this settles (cut short, as the delay, when the client goes away or the fake stops): a
   * service that answers when the test says so.
   */
  holdUntil: Promise<unknown> | null;
  /** Answer with this status and the vendor's error body instead. */
  failStatus: number | null;
}

/** One call a fake received; credential headers hold `<redacted>`. */
export interface RecordedCall {
  readonly path: string;
  readonly query: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: unknown;
}

/** A running fake. */
export interface FakeService {
  readonly url: string;
  readonly calls: RecordedCall[];
  readonly faults: FakeFaults;
  stop(): Promise<void>;
}

const REDACTED = new Set(["authorization", "ocp-apim-subscription-key", "x-amz-security-token", "x-api-key"]);

type Handler = (req: Request, body: unknown, text: string, url: URL) => Response | Promise<Response>;

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** Waits `ms`, or less when any of `signals` aborts. */
function delay(ms: number, signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    for (const signal of signals) {
      signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
    }
  });
}

/** Waits for `until` to settle, or less when any of `signals` aborts. */
function held(until: Promise<unknown>, signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    until.then(() => resolve(), () => resolve());
    for (const signal of signals) signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

/** A fake from a handler and the error body its vendor sends (given the texts the call carried). */
function serveFake(handler: Handler, errorBody: (status: number, text: string) => Response) {
  const calls: RecordedCall[] = [];
  const faults: FakeFaults = { delayMs: 0, holdUntil: null, failStatus: null };
  let inFlight = 0;
  const stats = { maxInFlight: 0 };
  const stopping = new AbortController();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    inFlight++;
    stats.maxInFlight = Math.max(stats.maxInFlight, inFlight);
    try {
      const url = new URL(req.url);
      const text = await req.text();
      let body: unknown = undefined;
      try {
        body = JSON.parse(text);
      } catch { /* recorded as undefined */ }
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => headers[k] = REDACTED.has(k) ? "<redacted>" : v);
      calls.push({ path: url.pathname, query: url.search, headers, body });
      // Not only the request's signal: Deno does not always notice an aborted client, and stop() must not wait.
      if (faults.delayMs > 0) await delay(faults.delayMs, [req.signal, stopping.signal]);
      if (faults.holdUntil !== null) await held(faults.holdUntil, [req.signal, stopping.signal]);
      if (faults.failStatus !== null) return errorBody(faults.failStatus, text);
      return await handler(req, body, text, url);
    } finally {
      inFlight--;
    }
  });
  const port = (server.addr as Deno.NetAddr).port;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    faults,
    stats,
    stop: () => (stopping.abort(), server.shutdown()),
  };
}

/** The webhook fake: `answer` (or `rawAnswer`, sent verbatim) with `status`. */
export interface FakeWebhook extends FakeService {
  answer: unknown | ((body: unknown) => unknown);
  rawAnswer: string | null;
  status: number;
  /** Whether each call's signature verified (only when started with a secret). */
  readonly signatures: boolean[];
}

/** Starts the webhook fake; with `secret`, refuses calls whose `x-gateway-signature` does not verify. */
export function startFakeWebhook(options: { secret?: string } = {}): FakeWebhook {
  const signatures: boolean[] = [];
  const fake: FakeWebhook = {
    ...serveFake(async (req, body, text) => {
      if (options.secret !== undefined) {
        const ok = req.headers.get(SIGNATURE_HEADER) === await signBody(options.secret, text);
        signatures.push(ok);
        if (!ok) return json(401, { error: "bad signature" });
      }
      if (fake.rawAnswer !== null) return new Response(fake.rawAnswer, { status: fake.status });
      const answer = typeof fake.answer === "function" ? fake.answer(body) : fake.answer;
      return json(fake.status, answer);
    }, (status, text) => json(status, { error: `could not check ${text}` })),
    answer: { action: "allow" },
    rawAnswer: null,
    status: 200,
    signatures,
  };
  return fake;
}

/** Markers a test writes into a text for {@linkcode markerVerdict}: refuse the request, or have it replaced. */
export const DENY_MARK = "DENYMARK";
export const MASK_MARK = "MASKMARK";
/** What {@linkcode markerVerdict} replaces {@linkcode MASK_MARK} with. */
export const MASKED_MARK = "[GONE]";

/** A webhook fake's verdict on the texts it is sent: deny {@linkcode DENY_MARK}, replace {@linkcode MASK_MARK}. */
export function markerVerdict(body: unknown): unknown {
  const texts = (body as { texts: string[] }).texts;
  if (texts.some((t) => t.includes(DENY_MARK))) return { action: "deny", reason: "marker" };
  if (!texts.some((t) => t.includes(MASK_MARK))) return { action: "allow" };
  return { action: "replace", texts: texts.map((t) => t.replaceAll(MASK_MARK, MASKED_MARK)) };
}

/** The key the moderation fake accepts. */
export const FAKE_MODERATION_KEY = "sk-fake-moderation-key-0123456789";
const MODERATION_CATEGORIES =
  ("harassment harassment/threatening hate hate/threatening illicit illicit/violent " +
    "self-harm self-harm/instructions self-harm/intent sexual sexual/minors violence violence/graphic").split(
      " ",
    );

/** The OpenAI moderation fake. */
export interface FakeModeration extends FakeService {
  /** A text containing this word is flagged for `violence`. */
  flagWord: string;
}

/** Starts the OpenAI moderation fake (`POST /v1/moderations`). */
export function startFakeModeration(): FakeModeration {
  const openaiError = (status: number, message: string, code: string | null) =>
    json(status, { error: { message, type: "invalid_request_error", param: null, code } });
  const fake: FakeModeration = {
    ...serveFake((req, body, _text, url) => {
      if (req.headers.get("authorization") !== `Bearer ${FAKE_MODERATION_KEY}`) {
        // Like OpenAI, the message repeats part of the key it was given.
        const given = (req.headers.get("authorization") ?? "").replace(/^Bearer /, "");
        return openaiError(401, `Incorrect API key provided: ${given.slice(0, 8)}***.`, "invalid_api_key");
      }
      if (url.pathname !== "/v1/moderations") return openaiError(404, "Not found", null);
      const input = (body as { input?: unknown } | undefined)?.input;
      const model = (body as { model?: unknown } | undefined)?.model;
      const texts = typeof input === "string" ? [input] : input;
      if (!Array.isArray(texts) || !texts.every((t) => typeof t === "string") || typeof model !== "string") {
        return openaiError(400, "Invalid moderation request", null);
      }
      const results = texts.map((text) => {
        const flagged = text.includes(fake.flagWord);
        const categories = Object.fromEntries(MODERATION_CATEGORIES.map((c) => [c, false]));
        const scores = Object.fromEntries(MODERATION_CATEGORIES.map((c) => [c, 0.0001]));
        if (flagged) (categories.violence = true, scores.violence = 0.93);
        if (text.includes("borderline")) scores.harassment = 0.4;
        return { flagged, categories, category_scores: scores, category_applied_input_types: {} };
      });
      return json(200, { id: `modr-${crypto.randomUUID()}`, model, results });
    }, (status, text) => openaiError(status, `The server had an error processing ${text}`, "server_error")),
    flagWord: "attack",
  };
  return fake;
}

/** The credentials the Bedrock guardrail fake accepts, and where. */
export const FAKE_GUARDRAIL_AWS = {
  accessKeyId: "AKIDFAKEGUARDRAIL001",
  secretAccessKey: "fakeGuardrailSecret/Key+0123456789abcdef",
  region: "us-east-1",
  guardrailIdentifier: "gr0fake1",
  guardrailVersion: "1",
} as const;
/** The message a blocked text is replaced with, as a guardrail's "blocked messaging". */
export const FAKE_BLOCKED_MESSAGE = "Sorry, the model cannot answer this question.";

/** The Bedrock guardrail fake. */
export interface FakeBedrockGuardrail extends FakeService {
  /** Whether each call's SigV4 signature verified. */
  readonly signatures: boolean[];
  /** Answer masked texts as one merged output, as no documented answer does (a count mismatch). */
  mergeOutputs: boolean;
}

function awsError(status: number, type: string, message: string): Response {
  return json(status, { message }, {
    "x-amzn-errortype": `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
  });
}

const AWS_AUTH =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/;

/** Null when the request is signed correctly with {@linkcode FAKE_GUARDRAIL_AWS}, else AWS's 403. */
async function verifySigV4(req: Request, url: URL, text: string): Promise<Response | null> {
  const m = AWS_AUTH.exec(req.headers.get("authorization") ?? "");
  if (!m) return awsError(403, "MissingAuthenticationTokenException", "Missing Authentication Token");
  const [, keyId, day, region, service, signedHeaders, signature] = m;
  if (keyId !== FAKE_GUARDRAIL_AWS.accessKeyId) {
    return awsError(
      403,
      "UnrecognizedClientException",
      "The security token included in the request is invalid.",
    );
  }
  const date = req.headers.get("x-amz-date") ?? "";
  const names = signedHeaders.split(";");
  const needed = ["host", "x-amz-date", "content-type"];
  if (req.headers.has("x-amz-security-token")) needed.push("x-amz-security-token");
  const skew = Math.abs(
    Date.parse(date.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, "$1-$2-$3T$4:$5:$6Z")) - Date.now(),
  );
  if (
    region !== FAKE_GUARDRAIL_AWS.region || service !== "bedrock" || !date.startsWith(day) ||
    needed.some((h) => !names.includes(h)) || !(skew <= 5 * 60_000)
  ) {
    return awsError(
      403,
      "InvalidSignatureException",
      "Signature not yet current or credential scoped wrongly.",
    );
  }
  const expected = await signatureFromParts({
    method: req.method,
    path: url.pathname,
    query: url.search,
    headers: names.map((n) => [n, req.headers.get(n) ?? ""] as const),
    payloadHash: await sha256Hex(text),
    amzDate: date,
    region,
    service,
    credentials: FAKE_GUARDRAIL_AWS,
  });
  if (expected.signature !== signature) {
    return awsError(
      403,
      "InvalidSignatureException",
      "The request signature we calculated does not match the signature you provided.",
    );
  }
  return null;
}

const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g;

/** Starts the Bedrock `ApplyGuardrail` fake. */
export function startFakeBedrockGuardrail(): FakeBedrockGuardrail {
  const signatures: boolean[] = [];
  const path = `/guardrail/${FAKE_GUARDRAIL_AWS.guardrailIdentifier}/version/` +
    `${FAKE_GUARDRAIL_AWS.guardrailVersion}/apply`;
  const fake: FakeBedrockGuardrail = {
    ...serveFake(
      async (req, body, text, url) => {
        const denied = await verifySigV4(req, url, text);
        signatures.push(denied === null);
        if (denied) return denied;
        if (url.pathname !== path) return awsError(404, "ResourceNotFoundException", "Guardrail not found.");
        const { source, content } = (body ?? {}) as { source?: unknown; content?: unknown };
        const texts = Array.isArray(content) ? content.map((c) => c?.text?.text) : [];
        if (
          (source !== "INPUT" && source !== "OUTPUT") || texts.length === 0 ||
          texts.some((t) => typeof t !== "string")
        ) {
          return awsError(400, "ValidationException", "Invalid ApplyGuardrail request.");
        }
        const usage = {
          topicPolicyUnits: texts.length,
          contentPolicyUnits: texts.length,
          wordPolicyUnits: 0,
        };
        if (texts.some((t) => t.includes("forbidden"))) {
          return json(200, {
            usage,
            action: "GUARDRAIL_INTERVENED",
            outputs: [{ text: FAKE_BLOCKED_MESSAGE }],
            assessments: [{
              topicPolicy: {
                topics: [{ name: "Forbidden_Topic", type: "DENY", action: "BLOCKED", detected: true }],
              },
              wordPolicy: { customWords: [{ match: "forbidden", action: "BLOCKED", detected: true }] },
            }],
          });
        }
        const emails = texts.flatMap((t: string) => t.match(EMAIL) ?? []);
        if (emails.length > 0) {
          const masked = texts.map((t: string) => t.replace(EMAIL, "{EMAIL}"));
          return json(200, {
            usage,
            action: "GUARDRAIL_INTERVENED",
            outputs: fake.mergeOutputs ? [{ text: masked.join(" ") }] : masked.map((t) => ({ text: t })),
            assessments: [{
              sensitiveInformationPolicy: {
                piiEntities: emails.map((match) => ({
                  match,
                  type: "EMAIL",
                  action: "ANONYMIZED",
                  detected: true,
                })),
                regexes: [],
              },
            }],
          });
        }
        const detected = texts.some((t) => t.includes("suspicious"));
        return json(200, {
          usage,
          action: "NONE",
          outputs: [],
          assessments: [
            detected
              ? {
                contentPolicy: {
                  filters: [{ type: "MISCONDUCT", confidence: "LOW", action: "NONE", detected }],
                },
              }
              : {},
          ],
        });
      },
      (status, text) =>
        awsError(status, status === 429 ? "ThrottlingException" : "InternalServerException", text),
    ),
    signatures,
    mergeOutputs: false,
  };
  return fake;
}

/** The key the Azure Content Safety fake accepts. */
export const FAKE_AZURE_CS_KEY = "fake-azure-content-safety-key-00112233";
/** Word → the category and severity a text containing it scores. */
export const AZURE_WORDS: Readonly<Record<string, { category: string; severity: number }>> = {
  violent: { category: "Violence", severity: 4 },
  mild: { category: "Violence", severity: 2 },
  hateful: { category: "Hate", severity: 6 },
  selfharm: { category: "SelfHarm", severity: 4 },
};

/** The Azure Content Safety fake; `stats.maxInFlight` is the most calls it saw at once. */
export interface FakeAzureContentSafety extends FakeService {
  readonly stats: { maxInFlight: number };
}

/** Starts the Azure AI Content Safety fake (`POST /contentsafety/text:analyze?api-version=2024-09-01`). */
export function startFakeAzureContentSafety(): FakeAzureContentSafety {
  const azureError = (status: number, code: string, message: string) =>
    json(status, { error: { code, message } });
  return serveFake((req, body, _text, url) => {
    if (req.headers.get("ocp-apim-subscription-key") !== FAKE_AZURE_CS_KEY) {
      return azureError(401, "401", "Access denied due to invalid subscription key or wrong API endpoint.");
    }
    if (url.pathname !== "/contentsafety/text:analyze") return azureError(404, "404", "Resource not found");
    if (url.searchParams.get("api-version") !== "2024-09-01") {
      return azureError(404, "UnsupportedApiVersion", "The API version is not supported.");
    }
    const request = (body ?? {}) as {
      text?: unknown;
      categories?: unknown;
      blocklistNames?: unknown;
      outputType?: unknown;
    };
    if (typeof request.text !== "string" || request.text === "" || request.text.length > 10_000) {
      return azureError(400, "InvalidRequestBody", "The text is empty or longer than 10,000 characters.");
    }
    if (request.outputType !== undefined && request.outputType !== "FourSeverityLevels") {
      return azureError(400, "InvalidRequestBody", "Unsupported outputType.");
    }
    const asked = Array.isArray(request.categories)
      ? request.categories
      : ["Hate", "SelfHarm", "Sexual", "Violence"];
    const severity = (category: string) =>
      Math.max(
        0,
        ...Object.entries(AZURE_WORDS)
          .filter(([word, s]) => s.category === category && (request.text as string).includes(word))
          .map(([, s]) => s.severity),
      );
    const lists = Array.isArray(request.blocklistNames) ? request.blocklistNames : [];
    return json(200, {
      blocklistsMatch: lists.includes("banned") && request.text.includes("contraband")
        ? [{ blocklistName: "banned", blocklistItemId: "0001", blocklistItemText: "contraband" }]
        : [],
      categoriesAnalysis: asked.map((category) => ({ category, severity: severity(category) })),
    });
  }, (status, text) => azureError(status, "InternalError", `Failed to analyze ${text}`));
}

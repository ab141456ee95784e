/**
 * An Amazon Bedrock guardrail through its standalone `ApplyGuardrail` action:
 * `POST /guardrail/{guardrailIdentifier}/version/{guardrailVersion}/apply` on the Bedrock runtime, SigV4-signed
 * for service `bedrock` with the same signer and the same credential rules as the Bedrock provider. Every text
 * of the phase is one `content` block; `source` is `INPUT` for the request, `OUTPUT` for the answer.
 *
 * The answer's `action` is `NONE` or `GUARDRAIL_INTERVENED`:
 * - `NONE` → allow; or flag, when a policy set to detect only reports a detection (`detected: true`).
 * - intervened, nothing blocked, and one output per text with at least one changed → replace: the guardrail
 *   masked (anonymized) sensitive information and the masked texts go on in place of the originals.
 * - any other intervention → deny. Blocked content comes back as the guardrail's "blocked message", which
 *   must never be mistaken for a masked text; and outputs that cannot be matched one-to-one with the texts
 *   (a different count) cannot be used to replace them.
 *
 * Categories come from the assessments, never their matched text: denied topics' names, content and
 * grounding filters' types, `CUSTOM_WORD` and managed word lists' types, PII entity types and regex names.
 *
 * @module
 */
import { type AwsCredentials, signRequest, uriEncode } from "../../aws/sigv4.ts";
import { resolveAwsIdentity } from "../../aws/identity.ts";
import type { GuardrailInput, GuardrailService, Verdict } from "../types.ts";
import { isRecord, malformed, postJson, type ServiceDeps, sortedUnique } from "./http.ts";

/** A Bedrock guardrail's config entry (see `bedrockGuardrailSchema` in `index.ts`). */
export interface BedrockGuardrailConfig {
  readonly guardrail_identifier: string;
  readonly guardrail_version: string;
  readonly region?: string;
  /** Overrides `https://bedrock-runtime.{region}.amazonaws.com` (VPC endpoints, proxies, test fakes). */
  readonly endpoint?: string;
  readonly access_key_id?: string;
  readonly secret_access_key?: string;
  readonly session_token?: string;
}

const SERVICE = "bedrock";

/** Where and as whom the guardrail is called. */
interface Resolved {
  readonly region: string;
  readonly url: string;
  readonly credentials: AwsCredentials;
}

/**
 * Region, URL and credentials, the region and credentials falling back to the AWS environment variables as the
 * Bedrock provider's do (`aws/identity.ts`). Throws an Error naming what is missing (never a value).
 */
export function resolveBedrockGuardrail(
  config: BedrockGuardrailConfig,
  env: Readonly<Record<string, string | undefined>>,
): Resolved {
  const { region, credentials } = resolveAwsIdentity(config, env, "guardrail");
  const base = (config.endpoint ?? `https://bedrock-runtime.${region}.amazonaws.com`).replace(/\/+$/, "");
  // Percent-encoded once on the wire (an ARN's `:` and `/`); the signer encodes the canonical path again.
  const url = `${base}/guardrail/${uriEncode(config.guardrail_identifier)}/version/` +
    `${uriEncode(config.guardrail_version)}/apply`;
  return { region, url, credentials };
}

/** A guardrail service that applies a Bedrock guardrail. Throws at once when region or credentials are missing. */
export function createBedrockGuardrail(
  config: BedrockGuardrailConfig,
  deps: ServiceDeps = {},
): GuardrailService {
  const fetchFn = deps.fetch ?? fetch;
  const { region, url, credentials } = resolveBedrockGuardrail(config, deps.env ?? {});
  const hiddenCredentials = [
    credentials.accessKeyId,
    credentials.secretAccessKey,
    credentials.sessionToken ?? "",
  ];
  return {
    async check(input: GuardrailInput, signal: AbortSignal): Promise<Verdict> {
      if (input.texts.length === 0) return { action: "allow" };
      const body = JSON.stringify({
        source: input.phase === "input" ? "INPUT" : "OUTPUT",
        content: input.texts.map((text) => ({ text: { text } })),
      });
      const unsigned = { "content-type": "application/json", accept: "application/json" };
      const headers = await signRequest({
        method: "POST",
        url,
        headers: Object.entries(unsigned),
        body,
        region,
        service: "bedrock",
        credentials,
      });
      const answer = await postJson({
        service: SERVICE,
        fetch: fetchFn,
        url,
        headers,
        body,
        signal,
        hidden: [...hiddenCredentials, ...input.texts],
        errorCode: (h) => h.get("x-amzn-errortype")?.split(":")[0],
      });
      return bedrockVerdict(answer, input.texts);
    },
  };
}

/** One assessment entry's categories, by the policy's documented shape. */
interface Found {
  /** Categories of entries the guardrail acted on (`BLOCKED`, `ANONYMIZED`). */
  acted: string[];
  /** Categories of entries only detected (action `NONE`, `detected: true`). */
  detected: string[];
  blocked: boolean;
}

/** The verdict for an `ApplyGuardrail` answer to `texts`. */
export function bedrockVerdict(answer: unknown, texts: readonly string[]): Verdict {
  if (!isRecord(answer)) throw malformed(SERVICE, "expected a JSON object");
  const { action, outputs = [], assessments = [] } = answer;
  if (action !== "NONE" && action !== "GUARDRAIL_INTERVENED") {
    throw malformed(SERVICE, "`action` must be NONE or GUARDRAIL_INTERVENED");
  }
  if (!Array.isArray(outputs) || !Array.isArray(assessments)) {
    throw malformed(SERVICE, "`outputs` and `assessments` must be arrays");
  }
  const outputTexts = outputs.map((o) => {
    if (!isRecord(o) || (o.text !== undefined && typeof o.text !== "string")) {
      throw malformed(SERVICE, "each output must be an object with a string `text`");
    }
    return o.text ?? "";
  });
  const found: Found = { acted: [], detected: [], blocked: false };
  for (const assessment of assessments) {
    if (!isRecord(assessment)) throw malformed(SERVICE, "each assessment must be an object");
    collect(found, assessment);
  }
  if (action === "NONE") {
    return found.detected.length > 0 ? { action: "flag", categories: sortedUnique(found.detected) } : {
      action: "allow",
    };
  }
  const categories = sortedUnique(found.acted);
  const changed = outputTexts.length === texts.length && outputTexts.some((t, i) => t !== texts[i]);
  if (!found.blocked && changed) return { action: "replace", texts: outputTexts, categories };
  return {
    action: "deny",
    reason: `blocked by the guardrail${categories.length > 0 ? `: ${categories.join(", ")}` : ""}`,
    categories,
  };
}

/** Where each policy keeps its entries, and which field of an entry names its category. */
const POLICIES: readonly { policy: string; list: string; name: (e: Record<string, unknown>) => unknown }[] = [
  { policy: "topicPolicy", list: "topics", name: (e) => e.name },
  { policy: "contentPolicy", list: "filters", name: (e) => e.type },
  { policy: "wordPolicy", list: "customWords", name: () => "CUSTOM_WORD" },
  { policy: "wordPolicy", list: "managedWordLists", name: (e) => e.type },
  { policy: "sensitiveInformationPolicy", list: "piiEntities", name: (e) => e.type },
  { policy: "sensitiveInformationPolicy", list: "regexes", name: (e) => e.name ?? "REGEX" },
  { policy: "contextualGroundingPolicy", list: "filters", name: (e) => e.type },
];

function collect(found: Found, assessment: Record<string, unknown>): void {
  for (const { policy, list, name } of POLICIES) {
    const section = assessment[policy];
    if (section === undefined) continue;
    if (!isRecord(section)) throw malformed(SERVICE, `\`${policy}\` must be an object`);
    const entries = section[list] ?? [];
    if (!Array.isArray(entries)) throw malformed(SERVICE, `\`${policy}.${list}\` must be an array`);
    for (const entry of entries) {
      if (!isRecord(entry) || typeof entry.action !== "string") {
        throw malformed(SERVICE, `each \`${policy}.${list}\` entry needs an \`action\``);
      }
      const category = name(entry);
      if (typeof category !== "string" || category === "") {
        throw malformed(SERVICE, `a \`${policy}.${list}\` entry has no name or type`);
      }
      if (entry.action === "NONE") {
        if (entry.detected === true) found.detected.push(category);
        continue;
      }
      found.acted.push(category);
      if (entry.action !== "ANONYMIZED") found.blocked = true;
    }
  }
}

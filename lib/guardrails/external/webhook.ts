/**
 * The gateway's own guardrail contract, for a service the operator writes: the texts of one phase are POSTed
 * as JSON, optionally HMAC-signed like the alert webhooks (`x-gateway-signature: sha256=<hex>`, so the
 * receiver can tell the gateway's calls from anyone else's), and the answer is one of four actions.
 *
 * Request: `{ phase, alias, token, texts }`. Answer, validated strictly (anything else is a malformed answer,
 * which the caller treats as a failure of the service, not as "allow"):
 * - `{ "action": "allow" }`
 * - `{ "action": "deny", "reason"?: string, "categories"?: string[] }`
 * - `{ "action": "replace", "texts": string[] (as many as sent), "categories"?: string[] }`
 * - `{ "action": "flag", "categories": string[] }`
 *
 * A category that is no short name becomes `(unnamed)` (`categoryName` in http.ts), and categories and the
 * reason pass the config's scrubber before they are recorded or shown (run.ts): the receiver is the operator's,
 * but it may quote the `headers` it was sent.
 *
 * @module
 */
import { SIGNATURE_HEADER, signBody } from "../../alerts/signature.ts";
import type { GuardrailInput, GuardrailService, Verdict } from "../types.ts";
import { isRecord, malformed, postJson, type ServiceDeps, sortedUnique } from "./http.ts";

/** A webhook guardrail's config entry (see `webhookGuardrailSchema` in `index.ts`). */
export interface WebhookGuardrailConfig {
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly secret?: string;
}

const SERVICE = "webhook";
/** The reason shown when a deny names none. */
const DEFAULT_REASON = "refused by a guardrail";
/** Bounds on what the receiver may send back, so a verdict stays small enough to log and show. */
const MAX_REASON = 1000;
const MAX_CATEGORY = 100;
const MAX_CATEGORIES = 100;
const KEYS: Readonly<Record<string, readonly string[]>> = {
  allow: ["action"],
  deny: ["action", "reason", "categories"],
  replace: ["action", "texts", "categories"],
  flag: ["action", "categories"],
};

/** A guardrail service that asks `config.url`. */
export function createWebhookGuardrail(
  config: WebhookGuardrailConfig,
  deps: ServiceDeps = {},
): GuardrailService {
  const fetchFn = deps.fetch ?? fetch;
  const extra = config.headers ?? {};
  return {
    async check(input: GuardrailInput, signal: AbortSignal): Promise<Verdict> {
      const body = JSON.stringify({
        phase: input.phase,
        alias: input.alias,
        token: input.token,
        texts: input.texts,
      });
      const headers: Record<string, string> = {
        ...extra,
        "content-type": "application/json",
        accept: "application/json",
      };
      if (config.secret !== undefined) headers[SIGNATURE_HEADER] = await signBody(config.secret, body);
      const answer = await postJson({
        service: SERVICE,
        fetch: fetchFn,
        url: config.url,
        headers,
        body,
        signal,
        hidden: [],
      });
      return parseWebhookAnswer(answer, input.texts.length);
    },
  };
}

/** The verdict of a webhook's answer; throws on anything outside the contract. */
export function parseWebhookAnswer(answer: unknown, textCount: number): Verdict {
  if (!isRecord(answer)) throw malformed(SERVICE, "expected a JSON object");
  const action = answer.action;
  if (typeof action !== "string" || !(action in KEYS)) {
    throw malformed(SERVICE, "`action` must be allow, deny, replace or flag");
  }
  const unknown = Object.keys(answer).filter((key) => !KEYS[action].includes(key));
  // Counted, not named: a receiver's keys are its own text and could repeat what it was sent.
  if (unknown.length > 0) throw malformed(SERVICE, `${unknown.length} unexpected field(s) for ${action}`);
  if (action === "allow") return { action: "allow" };
  if (action === "flag") {
    if (answer.categories === undefined) throw malformed(SERVICE, "flag needs `categories`");
    return { action: "flag", categories: categories(answer.categories) };
  }
  if (action === "deny") {
    const reason = answer.reason;
    if (reason !== undefined && (typeof reason !== "string" || reason.length > MAX_REASON)) {
      throw malformed(SERVICE, `\`reason\` must be a string of at most ${MAX_REASON} characters`);
    }
    return {
      action: "deny",
      reason: reason === undefined || reason.trim() === "" ? DEFAULT_REASON : reason,
      categories: categories(answer.categories ?? []),
    };
  }
  const texts = answer.texts;
  if (!Array.isArray(texts) || !texts.every((t) => typeof t === "string")) {
    throw malformed(SERVICE, "replace needs `texts`, an array of strings");
  }
  if (texts.length !== textCount) {
    throw malformed(SERVICE, `replace returned ${texts.length} texts for ${textCount} sent`);
  }
  return { action: "replace", texts, categories: categories(answer.categories ?? []) };
}

function categories(value: unknown): string[] {
  if (
    !Array.isArray(value) || value.length > MAX_CATEGORIES ||
    !value.every((c) => typeof c === "string" && c !== "" && c.length <= MAX_CATEGORY)
  ) {
    throw malformed(
      SERVICE,
      `\`categories\` must be at most ${MAX_CATEGORIES} non-empty strings of at most ${MAX_CATEGORY} characters`,
    );
  }
  return sortedUnique(value);
}

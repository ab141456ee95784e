/**
 * The token form's values → the body of `POST /admin/tokens` or `PATCH /admin/tokens/{id}`. Pure, so the
 * rules (empty means "not set", numbers must be whole, a patch sends only what changed) are unit-tested.
 *
 * @module
 */
import { splitList } from "./query.ts";
import type { Budget, Limits, Token } from "./types.ts";

/** What the form's inputs hold, as text. */
export interface TokenFormValues {
  name: string;
  environment: string;
  models: string;
  endpoints: string;
  rpm: string;
  tpm: string;
  concurrent: string;
  budgetTokens: string;
  budgetPeriod: string;
  maxTokens: string;
  expiresAt: string;
  description: string;
}

/** A value the form cannot send, named by the API's field so the message reads like the API's. */
export class FormError extends Error {
  constructor(readonly param: string, message: string) {
    super(`${param}: ${message}`);
    this.name = "FormError";
  }
}

function whole(text: string, param: string): number | null {
  const trimmed = text.trim();
  if (trimmed === "") return null;
  if (!/^\d+$/.test(trimmed)) throw new FormError(param, "must be a whole number.");
  return Number(trimmed);
}

/** The form's values for an existing token (the edit form starts from them). */
export function formValuesOf(token: Token): TokenFormValues {
  const text = (n: number | null | undefined) => n === null || n === undefined ? "" : String(n);
  return {
    name: token.name,
    environment: token.environment,
    models: token.models.join(", "),
    endpoints: token.endpoints?.join(", ") ?? "",
    rpm: text(token.limits?.rpm),
    tpm: text(token.limits?.tpm),
    concurrent: text(token.limits?.concurrent),
    budgetTokens: text(token.budget?.tokens),
    budgetPeriod: token.budget?.period ?? "month",
    maxTokens: text(token.max_tokens),
    expiresAt: token.expires_at ?? "",
    description: token.description ?? "",
  };
}

/**
 * Every field the form edits, with `null` for "not set". A budget in money (set through the API) is kept:
 * the form only edits the token count and the period.
 */
export function tokenFields(values: TokenFormValues, current?: Token): Record<string, unknown> {
  const limits: Limits = {};
  const rpm = whole(values.rpm, "limits.rpm");
  const tpm = whole(values.tpm, "limits.tpm");
  const concurrent = whole(values.concurrent, "limits.concurrent");
  if (rpm !== null) limits.rpm = rpm;
  if (tpm !== null) limits.tpm = tpm;
  if (concurrent !== null) limits.concurrent = concurrent;
  const budgetTokens = whole(values.budgetTokens, "budget.tokens");
  const period = values.budgetPeriod === "day" ? "day" : "month";
  let budget: Budget | null = null;
  const kept = current?.budget ?? null;
  if (budgetTokens !== null || kept?.cost !== undefined) {
    budget = { ...(kept ?? {}), period };
    if (budgetTokens === null) delete budget.tokens;
    else budget.tokens = budgetTokens;
  }
  const endpoints = splitList(values.endpoints);
  return {
    environment: values.environment.trim() === "" ? undefined : values.environment.trim(),
    models: splitList(values.models),
    endpoints: endpoints.length === 0 ? null : endpoints,
    limits: Object.keys(limits).length === 0 ? null : limits,
    budget,
    max_tokens: whole(values.maxTokens, "max_tokens"),
    expires_at: values.expiresAt.trim() === "" ? null : values.expiresAt.trim(),
    description: values.description.trim() === "" ? null : values.description.trim(),
  };
}

/** The body of `POST /admin/tokens`: fields that are not set are left out. */
export function createBody(values: TokenFormValues): Record<string, unknown> {
  const body: Record<string, unknown> = { name: values.name.trim() };
  for (const [key, value] of Object.entries(tokenFields(values))) {
    if (value !== null && value !== undefined) body[key] = value;
  }
  return body;
}

/** Whether two JSON values are equal (key order aside). */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const keysB = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  return keysA.length === keysB.length &&
    keysA.every((k) => same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/**
 * The body of `PATCH /admin/tokens/{id}`: only the fields that differ from `token`, so saving an unchanged
 * expiry that has since passed, say, is not refused.
 */
export function patchBody(values: TokenFormValues, token: Token): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const current: Record<string, unknown> = { ...token };
  for (const [key, value] of Object.entries(tokenFields(values, token))) {
    if (value === undefined) continue;
    const was = current[key];
    if (key === "expires_at" && typeof value === "string" && typeof was === "string") {
      if (Date.parse(value) === Date.parse(was)) continue;
    }
    if (!same(value, was ?? null)) body[key] = value;
  }
  return body;
}

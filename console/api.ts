/// <reference lib="dom" />
/**
 * The admin API client. The admin token lives only in `sessionStorage` (gone when the tab closes, never sent
 * to another origin); a 401 drops it and brings back the login page, since the token was revoked or mistyped.
 *
 * @module
 */
import { queryString, type QueryValues } from "./query.ts";
import type { ApiList, UsageReport } from "./types.ts";

const STORAGE_KEY = "gateway.adminToken";

/** An error answer of the admin API (OpenAI's shape), or a network failure (status 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = "ApiError";
  }

  /** The message with the field it names: "limits.rpm: must be at least 1". */
  get detail(): string {
    return this.param !== null && !this.message.includes(this.param)
      ? `${this.param}: ${this.message}`
      : this.message;
  }
}

/** The stored admin token, or null when signed out. */
export function storedToken(): string | null {
  return sessionStorage.getItem(STORAGE_KEY);
}

export function storeToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(STORAGE_KEY);
  else sessionStorage.setItem(STORAGE_KEY, token);
}

/** Called on a 401: the app signs out. */
let onUnauthorized: () => void = () => {};

export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}

async function errorOf(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`.trim();
  let param: string | null = null;
  let code: string | null = null;
  try {
    const body = await response.json() as { error?: { message?: unknown; param?: unknown; code?: unknown } };
    if (typeof body.error?.message === "string") message = body.error.message;
    if (typeof body.error?.param === "string") param = body.error.param;
    if (typeof body.error?.code === "string") code = body.error.code;
  } catch {
    // Not JSON (a proxy's page): the status line says enough.
  }
  return new ApiError(response.status, message, param, code);
}

/**
 * Calls the admin API (or `/readyz`) with the stored token; resolves to the JSON answer. Rejects with an
 * {@linkcode ApiError}; a 401 also signs out.
 */
export async function request<T>(
  method: string,
  path: string,
  body?: unknown,
  token = storedToken(),
): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit",
      cache: "no-store",
    });
  } catch (err) {
    throw new ApiError(
      0,
      `The gateway cannot be reached (${err instanceof Error ? err.message : String(err)}).`,
    );
  }
  if (!response.ok) {
    const error = await errorOf(response);
    if (response.status === 401 && path.startsWith("/admin")) onUnauthorized();
    throw error;
  }
  return await response.json() as T;
}

/** `GET path?query`. */
export function get<T>(path: string, query: QueryValues = {}): Promise<T> {
  return request<T>("GET", `${path}${queryString(query)}`);
}

/** The most entries the admin API answers a list page with (`limit`). */
const LIST_PAGE = 1000;

/** The most tokens the console lists at once (a page of the Tokens view). */
export const TOKENS_SHOWN = 5000;

/** Up to `max` entries of a list, and whether more follow them (`after` the last). */
export interface Bounded<T> {
  readonly data: T[];
  readonly has_more: boolean;
}

/**
 * The first `max` entries of a list that pages with `after` (tokens), page after page, and whether more
 * follow: a caller that shows them says so, rather than showing a cut list as the whole.
 */
export async function getAll<T extends { id: string }>(
  path: string,
  query: QueryValues,
  max = TOKENS_SHOWN,
): Promise<Bounded<T>> {
  const all: T[] = [];
  let after = typeof query.after === "string" && query.after !== "" ? query.after : undefined;
  let hasMore = true;
  while (all.length < max && hasMore) {
    const page = await get<ApiList<T>>(path, {
      ...query,
      limit: Math.min(LIST_PAGE, max - all.length),
      after,
    });
    all.push(...page.data);
    hasMore = page.has_more && page.data.length > 0;
    if (hasMore) after = page.data[page.data.length - 1].id;
  }
  return { data: all, has_more: hasMore };
}

/** Groups per `/admin/usage` page the console asks for: the most the API answers at once. */
const USAGE_PAGE = 10_000;

/**
 * `GET /admin/usage` with every group, page after page (`offset`), up to `max` of them: the API answers at most
 * a page of groups (bounded like every answer), and a breakdown sorted here by requests needs them all to
 * show the true top rows. The totals are the first page's (every page has the same).
 */
export async function getUsage(query: QueryValues, max = 50_000): Promise<UsageReport> {
  const first = await get<UsageReport>("/admin/usage", { ...query, limit: USAGE_PAGE });
  const groups = [...first.groups];
  let page = first;
  while (page.has_more && page.next_offset !== null && groups.length < max) {
    page = await get<UsageReport>("/admin/usage", { ...query, limit: USAGE_PAGE, offset: page.next_offset });
    groups.push(...page.groups);
  }
  return { ...first, groups, has_more: page.has_more, next_offset: page.next_offset };
}

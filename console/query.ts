/**
 * The console's addresses: hash routes (`#/tokens/tok_1?status=active`) and the admin API's query strings.
 * Filters live in the hash so a drill-down can be bookmarked, shared and reached with the back button. Pure
 * functions, unit-tested.
 *
 * @module
 */

/** A parsed hash route: the view, the rest of its path, and its parameters. */
export interface Route {
  /** "overview", "tokens", …; "" for no route. */
  readonly view: string;
  /** The path after the view, decoded (`#/tokens/tok_1` → "tok_1"); "" when none. */
  readonly rest: string;
  readonly params: Readonly<Record<string, string>>;
}

/** Values of a query; empty, null and undefined ones are left out. */
export type QueryValues = Readonly<Record<string, string | number | boolean | null | undefined>>;

/** `{a: "x y", b: "", c: 2}` → "?a=x+y&c=2"; "" when every value is empty. */
export function queryString(values: QueryValues): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) {
    if (value === null || value === undefined || value === "") continue;
    params.set(name, String(value));
  }
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Parses `location.hash`: `#/overview?range=7d&token=ci-bot`. */
export function parseRoute(hash: string): Route {
  const text = hash.startsWith("#") ? hash.slice(1) : hash;
  const mark = text.indexOf("?");
  const path = (mark < 0 ? text : text.slice(0, mark)).replace(/^\/+/, "");
  const params: Record<string, string> = {};
  if (mark >= 0) {
    for (const [name, value] of new URLSearchParams(text.slice(mark + 1))) {
      params[name] = value;
    }
  }
  const slash = path.indexOf("/");
  if (slash < 0) return { view: decode(path), rest: "", params };
  return { view: decode(path.slice(0, slash)), rest: decode(path.slice(slash + 1)), params };
}

/** The hash of a route: `routeHash("tokens", {status: "active"}, "tok_1")` → "#/tokens/tok_1?status=active". */
export function routeHash(view: string, values: QueryValues = {}, rest = ""): string {
  const path = rest === "" ? view : `${view}/${encodeURIComponent(rest)}`;
  return `#/${path}${queryString(values)}`;
}

/** Splits a comma-separated list, trimmed, empty entries dropped: "a, b,,c " → ["a", "b", "c"]. */
export function splitList(text: string): string[] {
  return text.split(",").map((item) => item.trim()).filter((item) => item !== "");
}

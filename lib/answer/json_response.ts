/**
 * The 200 JSON answer every client API builds the same way: the body text, the routing headers, JSON's type.
 *
 * @module
 */

/**
 * A 200 JSON answer with `headers`. Built as `new Response(text)` and its headers set after: on Deno, a
 * string body given together with headers makes the constructor build a native response for `Deno.serve`
 * at once (an op and a finalizer), which the node:http edge never uses and which is dropped again at the
 * first read of the headers; without an init the body stays a lazy string. About 4 µs a request.
 */
export function jsonResponse(text: string, headers: Headers): Response {
  const response = new Response(text);
  const out = response.headers;
  headers.forEach((value, name) => out.set(name, value));
  out.set("content-type", "application/json");
  return response;
}

/**
 * The middleware chain: a handler at the end, middlewares around it that may act before and after `next`, or
 * answer without calling it. Kept apart from the server so that middlewares and the server both depend on it,
 * not on each other.
 *
 * @module
 */
import type { RequestContext } from "./context.ts";
import type { ClientRequest } from "../runtime/types.ts";

/** A handler at the end of the middleware chain. */
export type Handler = (request: ClientRequest, ctx: RequestContext) => Promise<Response> | Response;
/** A middleware: may act before and after `next`, or answer without calling it. */
export type Middleware = (
  request: ClientRequest,
  ctx: RequestContext,
  next: () => Promise<Response>,
) => Promise<Response>;

/** Runs `middlewares` in order around `handler`. */
export function compose(middlewares: readonly Middleware[], handler: Handler): Handler {
  return (request, ctx) => {
    const dispatch = (i: number): Promise<Response> =>
      i === middlewares.length
        ? Promise.resolve(handler(request, ctx))
        : middlewares[i](request, ctx, () => dispatch(i + 1));
    return dispatch(0);
  };
}

/**
 * Picks the target that serves a request and notes it in the access record and response headers.
 * Today it is the alias's first target; routing strategies, retries and fallback replace this one function.
 *
 * @module
 */
import type { ResolvedModel, ResolvedTarget } from "../config/types.ts";
import { GatewayError } from "../errors.ts";
import type { Provider } from "../providers/types.ts";
import type { RequestContext } from "./context.ts";

/** The chosen target, its provider, and the response headers that say who answered. */
export interface SelectedTarget {
  target: ResolvedTarget;
  provider: Provider;
  headers: Headers;
}

/** Selects the target for `model` and records the choice on `ctx`. */
export function selectTarget(ctx: RequestContext, model: ResolvedModel): SelectedTarget {
  const target = model.targets[0];
  const provider = ctx.state.providers.get(target.provider);
  if (provider === undefined) {
    throw new GatewayError(500, "The gateway has no provider for this model.", { code: "internal_error" });
  }
  ctx.record.provider = target.provider;
  ctx.record.upstream_model = target.model;
  const headers = new Headers({ "x-gateway-provider": target.provider, "x-gateway-model": target.model });
  return { target, provider, headers };
}

import assert from "node:assert/strict";
import { GatewayError } from "../errors.ts";
import { createMemoryLogger } from "../log.ts";
import { NO_SECRETS } from "../secrets/scrubber.ts";
import type { ClientRequest } from "../runtime/types.ts";
import { compose } from "./compose.ts";
import type { RequestContext } from "./context.ts";
import { errorBoundary, finishRequest } from "./middleware.ts";

/** The fields the two middlewares read of a request that is not an API request (no usage record). */
function context(): RequestContext {
  return {
    requestId: "req_1",
    startedAt: performance.now(),
    logger: createMemoryLogger(),
    record: { path: "/internal" },
    headers: new Headers(),
    state: { config: { scrubber: NO_SECRETS } },
    reported: () => {},
    signal: new AbortController().signal,
  } as unknown as RequestContext;
}

const REQUEST = {} as ClientRequest;

Deno.test("finishRequest: a routed stream no body took is abandoned once, however the handler ended", async () => {
  for (const ending of ["throws", "answers"] as const) {
    const ctx = context();
    let abandoned = 0;
    const chain = compose([finishRequest, errorBoundary], (_request, ctx) => {
      // Routing handed over a stream (its lease held), then the client API failed before building its body.
      ctx.abandon = () => {
        abandoned++;
        ctx.abandon = undefined;
      };
      if (ending === "throws") throw new GatewayError(502, "after routing");
      return new Response("{}", { status: 502 });
    });
    const response = await chain(REQUEST, ctx);
    assert.equal(response.status, 502, ending);
    assert.equal(abandoned, 1, ending);
    assert.equal(ctx.abandon, undefined);
  }
});

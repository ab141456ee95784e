/** The Messages request parser as its tests call it: a body over a Claude alias, and the 400 it refuses with. */
import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { parseMessagesRequest } from "./request.ts";

const NO_HEADERS = new Headers();

/** `body` (with a model and `max_tokens` unless it gives its own) as the parser reads it. */
export function parse(body: Record<string, unknown>, headers: Headers = NO_HEADERS) {
  return parseMessagesRequest({ model: "claude-alias", max_tokens: 100, ...body }, headers);
}

/** Asserts the parser refuses `body` with a 400 whose message matches `fragment`. */
export function refused(body: Record<string, unknown>, fragment: RegExp): void {
  assert.throws(() => parse(body), (err: unknown) => {
    assert.ok(err instanceof GatewayError);
    assert.equal(err.status, 400);
    assert.match(err.message, fragment);
    return true;
  });
}

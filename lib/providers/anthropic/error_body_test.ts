/**
 * An Anthropic answer with HTTP 200 whose body is Anthropic's error body in place of a Message is the upstream's
 * error, mapped as the same `error` event inside a stream; a body that is a Message is left alone.
 */
import assert from "node:assert/strict";
import type { GatewayError } from "../../errors.ts";
import { throwAnthropicErrorBody } from "./response.ts";

const KEY = "sk-ant-api03-secret-key-abcdef";

Deno.test("anthropic: a 200 with Anthropic's error body in place of a Message is the upstream's error", () => {
  const body = { type: "error", error: { type: "rate_limit_error", message: `Slow down, ${KEY}` } };
  assert.throws(() => throwAnthropicErrorBody("claude", body, [KEY]), (err: GatewayError) => {
    assert.equal(err.status, 429);
    assert.equal(err.anthropicType, "rate_limit_error");
    assert.ok(err.message.startsWith("Slow down"), err.message);
    assert.ok(!err.message.includes(KEY), err.message);
    return true;
  });
  // An error of a type Anthropic does not document is a 502 in its words.
  assert.throws(
    () => throwAnthropicErrorBody("claude", { error: { message: "odd" } }, []),
    (err: GatewayError) => err.status === 502 && err.message.includes("odd"),
  );
  // A Message is the answer whatever its `error` says; anything else without an error is left for the check.
  throwAnthropicErrorBody("claude", { type: "message", error: body.error }, []);
  throwAnthropicErrorBody("claude", { content: [], error: body.error }, []);
  throwAnthropicErrorBody("claude", { type: "error", error: null }, []);
  throwAnthropicErrorBody("claude", [body], []);
});

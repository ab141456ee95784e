/**
 * An unquoted `${VAR}` whose value looks like a number or a boolean becomes one only where the key takes a
 * number or a boolean. Before, it became one everywhere, so with OWNER=007 MODEL=4.1 ENVN=2024 the text keys
 * `owned_by: ${OWNER}`, `model: ${MODEL}` and `environment: ${ENVN}` were refused ("expected string, received
 * number"), and 007 would have been 7.
 *
 * @module
 */
import assert from "node:assert/strict";
import { formatIssues, parseConfigText } from "./load.ts";
import { takesOnlyText } from "./schema_at.ts";
import type { ResolvedConfig } from "./types.ts";

function configOf(text: string, env: Record<string, string>): ResolvedConfig {
  const result = parseConfigText(text, { source: "test.yaml", env });
  if (!result.ok) assert.fail(`expected a valid config, got:\n${formatIssues("test.yaml", result.issues)}`);
  return result.config;
}

const TEXT_KEYS = `providers:
  local: { type: builtin }
  up:
    type: openai
    base_url: http://127.0.0.1:9/v1
models:
  chat-default:
    type: chat
    owned_by: \${OWNER}
    targets:
      - provider: up
        model: \${MODEL}
tokens:
  - name: \${NAME}
    environment: \${ENVN}
    token: "tok-aaaaaaaaaaaaaaaaaaaa"
    models: ["*"]
server:
  port: \${PORT}
  workers: \${WORKERS}
  shutdown_timeout: \${GRACE}
usage: { sqlite: none }
`;

Deno.test("config: an unquoted ${VAR} that looks like a number stays text where the key takes text", () => {
  const config = configOf(TEXT_KEYS, {
    OWNER: "007",
    MODEL: "4.1",
    NAME: "true",
    ENVN: "2024",
    PORT: "9000",
    WORKERS: "2",
    GRACE: "1500",
  });
  const alias = config.models.get("chat-default");
  assert.equal(alias?.ownedBy, "007");
  assert.equal(alias?.targets[0].model, "4.1");
  const token = [...config.tokens.values()][0];
  assert.equal(token.name, "true");
  assert.equal(token.environment, "2024");
  // Where the key takes a number (or either form), the value is still the number it looks like.
  assert.equal(config.server.port, 9000);
  assert.equal(config.server.workers, 2);
  assert.equal(config.server.shutdown_timeout, 1500);
});

Deno.test("takesOnlyText: strings, URLs and enums; not numbers, booleans, either-form values or unknown keys", () => {
  assert.equal(takesOnlyText(["models", "a", "owned_by"]), true);
  assert.equal(takesOnlyText(["models", "a", "targets", 0, "model"]), true);
  assert.equal(takesOnlyText(["tokens", 0, "environment"]), true);
  assert.equal(takesOnlyText(["providers", "p", "base_url"]), true);
  assert.equal(takesOnlyText(["models", "a", "type"]), true);
  assert.equal(takesOnlyText(["server", "port"]), false);
  assert.equal(takesOnlyText(["server", "workers"]), false);
  assert.equal(takesOnlyText(["server", "shutdown_timeout"]), false);
  assert.equal(takesOnlyText(["no_such_key"]), false);
});

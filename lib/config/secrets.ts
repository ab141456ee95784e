/**
 * Every secret of a config, for the one scrubber that upstream text passes before it reaches a client or a log.
 *
 * The list of secret positions is `isSecretPath` (interpolate.ts), the same one that keeps secrets out of config
 * messages: `api_key`, `token`, the AWS `access_key_id` / `secret_access_key` / `session_token`, every
 * provider header value, and the passwords of `redis.url` and `postgres.url`. All header values count, not only those with a credential-looking name: proxies take
 * their keys in headers of any name (`X-Portkey-Config`, `cf-aig-…`), and masking a harmless beta flag in an
 * error message costs little, while a missed credential leaks silently. `sha256` is skipped: a token's hash is
 * not a credential and never leaves the gateway.
 *
 * Beyond the file's own values: the AWS environment credentials a Bedrock provider falls back to, the values
 * of `OTEL_EXPORTER_OTLP_HEADERS` when the file gives the collector no headers (telemetry then sends those),
 * and every `${VAR}` value substituted into part of a secret (`Bearer ${PROXY_TOKEN}`, the password of a
 * `redis.url`), so it is masked on its own too, even when shorter than a run. Only a value that went into a secret counts, not
 * one that merely occurs in a secret: `base_url: http://${UPSTREAM_HOST}:8000/v1` with `upstream` next to
 * `api_key: fake-upstream-key` must not make the word `upstream` a secret, nor a `redis.url` host variable.
 * Whether the string a value went into is a secret is decided on the config itself, by the walk below, so
 * `isSecretPath` stays the one list, and a value in an anchored node counts wherever the node is used.
 * (`base_url` cannot carry credentials: the config checks refuse them.)
 *
 * @module
 */
import { isSecretPath, type PathSegment, type Substitution } from "./interpolate.ts";
import type { ConfigOutput } from "./schema.ts";
import { parseOtlpHeaders } from "./telemetry_schema.ts";

/** What the loader knows beyond the parsed config. */
export interface SecretSources {
  /** Every `${VAR}` substitution into the file, with the string it went into. */
  readonly substitutions?: readonly Substitution[];
  /** The environment the config was read with (AWS credentials Bedrock falls back to, OTLP headers). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

const AWS_ENV = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"];

/** The password of a URL, decoded ("" when it has none or does not parse). */
function urlPathAndQuery(url: string): string {
  try {
    const u = new URL(url);
    return u.pathname + u.search;
  } catch {
    return "";
  }
}

function urlPassword(url: string): string {
  try {
    return decodeURIComponent(new URL(url).password);
  } catch {
    return "";
  }
}

/**
 * Where the password is in the text of a URL (`[start, end)` of `scheme://user:password@host…`), as the URL
 * parser splits it: the authority ends at the first `/`, `?` or `#`, the user info at its last `@`, the user
 * at the first `:`. Undefined when the URL has no password.
 */
function passwordSpan(url: string): readonly [number, number] | undefined {
  const scheme = url.indexOf("://");
  if (scheme < 0) return undefined;
  const from = scheme + 3;
  const end = url.slice(from).search(/[/?#]/);
  const at = url.lastIndexOf("@", end < 0 ? url.length : from + end);
  if (at < from) return undefined;
  const colon = url.indexOf(":", from);
  return colon >= 0 && colon < at ? [colon + 1, at] : undefined;
}

/** The secret values of `cfg`, unsorted and possibly repeated. */
export function configSecrets(cfg: ConfigOutput, sources: SecretSources = {}): string[] {
  const secrets: string[] = [];
  const walk = (value: unknown, path: PathSegment[]) => {
    if (typeof value === "string") {
      if (value !== "" && path.at(-1) !== "sha256" && isSecretPath(path)) secrets.push(value);
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => walk(item, [...path, i]));
    } else if (typeof value === "object" && value !== null) {
      for (const [key, item] of Object.entries(value)) walk(item, [...path, key]);
    }
  };
  walk(cfg.providers, ["providers"]);
  walk(cfg.tokens, ["tokens"]);
  walk(cfg.admin_tokens, ["admin_tokens"]);
  // The OTLP collector's headers (a tracing backend's API key) are header values: secrets like a provider's.
  walk(cfg.telemetry, ["telemetry"]);
  // Guardrail services' keys, AWS credentials, webhook secrets and header values.
  walk(cfg.guardrails, ["guardrails"]);
  // Alert webhooks: their HMAC secrets and header values; of a URL (a secret position, never shown whole), the
  // path and query, where a webhook's key lives (Slack's, for one) — not the host, which is in every local
  // address of the logs.
  (cfg.alerts ?? []).forEach((alert, i) => {
    walk({ ...alert, url: undefined }, ["alerts", i]);
    const key = urlPathAndQuery(alert.url);
    if (key.length > 1) secrets.push(key);
  });
  // Of `redis.url` (a secret position, so never shown whole), only the password is a secret to mask: the
  // host and port are not, and masking them would mask every local address in the logs.
  const redisPassword = cfg.redis ? urlPassword(cfg.redis.url) : "";
  if (redisPassword !== "") secrets.push(redisPassword);
  const postgresPassword = cfg.postgres ? urlPassword(cfg.postgres.url) : "";
  if (postgresPassword !== "") secrets.push(postgresPassword);

  const env = sources.env ?? {};
  // Whatever falls back to the environment's AWS identity (lib/aws/identity.ts): a Bedrock provider or a Bedrock
  // guardrail without a key pair of its own.
  const pairless = (entry: { type: string; access_key_id?: string; secret_access_key?: string }) =>
    entry.type === "bedrock" && (entry.access_key_id === undefined || entry.secret_access_key === undefined);
  const bedrockFromEnv = Object.values(cfg.providers).some(pairless) ||
    Object.values(cfg.guardrails ?? {}).some(pairless);
  if (bedrockFromEnv) {
    for (const name of AWS_ENV) {
      const value = env[name];
      if (value !== undefined && value !== "") secrets.push(value);
    }
  }

  // The collector's headers from the environment, which telemetry sends when the file has none
  // (telemetry/settings.ts): secrets as the file's are. The only headers variable read: the per-signal
  // OTEL_EXPORTER_OTLP_{TRACES,METRICS}_HEADERS are not, the gateway's own transport sends the exports.
  if (cfg.telemetry?.otlp.headers === undefined) {
    for (const value of Object.values(parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS))) {
      if (value !== "") secrets.push(value);
    }
  }

  // A value substituted into a secret (`Bearer ${X}`, `${A}${B}`) is added on its own; one that is the whole
  // secret is in already. Where it went decides, not what it looks like: the string it went into is a secret
  // of the walk above, or the URL it went into has it inside its password. One lookup per substitution.
  const whole = new Set(secrets);
  const urls = new Map<string, readonly [number, number]>();
  for (const url of [cfg.redis?.url, cfg.postgres?.url]) {
    const span = url === undefined ? undefined : passwordSpan(url);
    if (url !== undefined && span !== undefined) urls.set(url, span);
  }
  const added = new Set<string>();
  for (const { value, into, start } of sources.substitutions ?? []) {
    if (value === "" || whole.has(value) || added.has(value)) continue;
    const span = whole.has(into) ? [0, into.length] : urls.get(into);
    if (span !== undefined && span[0] <= start && start + value.length <= span[1]) {
      secrets.push(value);
      added.add(value);
    }
  }
  return secrets;
}

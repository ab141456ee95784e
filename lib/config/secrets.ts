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
 * Beyond the file's own values: the AWS environment credentials a Bedrock provider falls back to, and every
 * `${VAR}` value substituted into part of a secret (`Bearer ${PROXY_TOKEN}`), so it is masked on its own too,
 * even when shorter than a run. (`base_url` cannot carry credentials: the config checks refuse them.)
 *
 * @module
 */
import { isSecretPath, type PathSegment } from "./interpolate.ts";
import type { ConfigOutput } from "./schema.ts";

/** What the loader knows beyond the parsed config. */
export interface SecretSources {
  /** Every string `${VAR}` interpolation substituted into the file. */
  readonly substituted?: readonly string[];
  /** The environment the config was read with (for AWS credentials Bedrock falls back to). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

const AWS_ENV = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"];

/** The password of a URL, decoded ("" when it has none or does not parse). */
function urlPassword(url: string): string {
  try {
    return decodeURIComponent(new URL(url).password);
  } catch {
    return "";
  }
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
  // Of `redis.url` (a secret position, so never shown whole), only the password is a secret to mask: the
  // host and port are not, and masking them would mask every local address in the logs.
  const redisPassword = cfg.redis ? urlPassword(cfg.redis.url) : "";
  if (redisPassword !== "") secrets.push(redisPassword);
  const postgresPassword = cfg.postgres ? urlPassword(cfg.postgres.url) : "";
  if (postgresPassword !== "") secrets.push(postgresPassword);

  const env = sources.env ?? {};
  const bedrockFromEnv = Object.values(cfg.providers).some((p) =>
    p.type === "bedrock" && (p.access_key_id === undefined || p.secret_access_key === undefined)
  );
  if (bedrockFromEnv) {
    for (const name of AWS_ENV) {
      const value = env[name];
      if (value !== undefined && value !== "") secrets.push(value);
    }
  }

  // A value that is a whole secret is in already; one inside a secret (`Bearer ${X}`) is added on its own. One
  // search of all secrets joined per value, rather than one per secret, keeps this linear in practice.
  const whole = new Set(secrets);
  const holders = secrets.join("\u0000");
  for (const value of sources.substituted ?? []) {
    if (value !== "" && !whole.has(value) && holders.includes(value)) secrets.push(value);
  }
  return secrets;
}

/**
 * Where and as whom a Bedrock caller (the provider, the guardrail) signs: region and credentials from its config
 * entry or the standard AWS environment variables, one rule for both. An entry's own values were checked by the
 * config schema; a variable is held to the same rules here, because it is read only when the entry is set up:
 * an `AWS_ACCESS_KEY_ID` ending in a line break (`$(cat file)`) or a session token with a pasted em dash passed
 * `check` and made every call a 502 with nothing sent, and an `AWS_REGION` with a `/` went into every call's host.
 * Errors name the variable, never its value.
 *
 * @module
 */
import { awsAccessKeyId, headerCredential } from "../config/header_map.ts";
import type { AwsCredentials } from "./sigv4.ts";

/** An AWS region name (`us-east-1`, `eu-central-2`, `us-gov-west-1`, the European Sovereign Cloud's `eusc-de-east-1`). */
export const AWS_REGION_PATTERN = /^[a-z]{2,4}(-[a-z]+)+-\d+$/;
/** What a value that is not a region is told. */
export const AWS_REGION_MESSAGE = "must be an AWS region such as us-east-1";

/** The region and credential fields of a config entry. */
export interface AwsIdentityConfig {
  readonly region?: string;
  readonly access_key_id?: string;
  readonly secret_access_key?: string;
  readonly session_token?: string;
}

/** Region and credentials. */
export interface AwsIdentity {
  readonly region: string;
  readonly credentials: AwsCredentials;
}

type Env = Readonly<Record<string, string | undefined>>;

/** The variable's value when set and not blank, held to `valid` (which says why not, or null). */
function fromEnv(env: Env, name: string, valid: (value: string) => string | null): string | undefined {
  const value = env[name];
  if (value === undefined || value.trim() === "") return undefined;
  const problem = valid(value);
  if (problem !== null) throw new Error(`${name} ${problem}`);
  return value;
}

function region(value: string): string | null {
  return AWS_REGION_PATTERN.test(value) ? null : AWS_REGION_MESSAGE;
}

/** The first issue's message of a schema that refuses `value`, or null. */
function schemaProblem(schema: typeof headerCredential): (value: string) => string | null {
  return (value) => {
    const checked = schema.safeParse(value);
    return checked.success ? null : checked.error.issues[0]?.message ?? "is not valid";
  };
}

/** Who resolves, for the messages: the Bedrock provider (its entry) or the Bedrock guardrail. */
export type AwsCaller = "provider" | "guardrail";

/**
 * Region and credentials of `config`, each falling back to the environment. A session token from the
 * environment is used only with the environment's key pair, so a key pair written in config is never mixed with
 * another identity's token. Throws an `Error` naming what is missing or which variable is not valid.
 */
export function resolveAwsIdentity(config: AwsIdentityConfig, env: Env, caller: AwsCaller): AwsIdentity {
  const [prefix, inEntry] = caller === "provider"
    ? ["", " in the provider entry"]
    : ["bedrock guardrail: ", ""];
  try {
    const resolvedRegion = config.region ?? fromEnv(env, "AWS_REGION", region) ??
      fromEnv(env, "AWS_DEFAULT_REGION", region);
    if (resolvedRegion === undefined) {
      throw new Error(`no AWS region: set \`region\`${inEntry}, or AWS_REGION / AWS_DEFAULT_REGION`);
    }
    const fromConfig = config.access_key_id !== undefined || config.secret_access_key !== undefined;
    const accessKeyId = config.access_key_id ??
      fromEnv(env, "AWS_ACCESS_KEY_ID", schemaProblem(awsAccessKeyId));
    const secretAccessKey = config.secret_access_key ?? fromEnv(env, "AWS_SECRET_ACCESS_KEY", () => null);
    if (accessKeyId === undefined || secretAccessKey === undefined) {
      throw new Error(
        `no AWS credentials: set \`access_key_id\` and \`secret_access_key\`${inEntry}, or AWS_ACCESS_KEY_ID and ` +
          "AWS_SECRET_ACCESS_KEY in the environment",
      );
    }
    const sessionToken = config.session_token ??
      (fromConfig ? undefined : fromEnv(env, "AWS_SESSION_TOKEN", schemaProblem(headerCredential)));
    return { region: resolvedRegion, credentials: { accessKeyId, secretAccessKey, sessionToken } };
  } catch (err) {
    throw err instanceof Error && prefix !== "" ? new Error(prefix + err.message) : err;
  }
}

/**
 * How an Azure OpenAI resource is addressed. Classic form (`api_version` set):
 * `{base_url}/openai/deployments/{deployment}/{op}?api-version=…`. v1 form (`base_url` ends in `/openai/v1`):
 * `{base_url}/{op}`, with the deployment as the body's `model`. In both forms the target's `model` is the
 * deployment name.
 *
 * @module
 */

/** The two ways of addressing an Azure OpenAI resource. */
export type AzureForm = "classic" | "v1";

/** The operations the gateway calls, as URL path suffixes. */
export type AzureOperation = "chat/completions" | "embeddings";

/** How one `type: azure` provider addresses its resource, derived once from config. */
export interface AzureAddressing {
  form: AzureForm;
  /** `base_url` without trailing slashes (and, in the classic form, without a trailing `/openai`). */
  root: string;
  /** Sent as `?api-version=`: required in the classic form, optional (e.g. `preview`) in the v1 form. */
  apiVersion?: string;
}

const V1_SUFFIX = /\/openai\/v1$/;

/**
 * Decides the addressing form from `base_url` and `api_version`. Throws a plain `Error` (reported as a config
 * issue for this provider) when neither form applies, or when `base_url` already names a deployment, a
 * mistake the schema cannot see.
 */
export function azureAddressing(baseUrl: string, apiVersion?: string): AzureAddressing {
  const url = new URL(baseUrl);
  if (url.search !== "" || url.hash !== "") {
    throw new Error("base_url must not have a query string; put the API version in api_version");
  }
  const root = `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
  if (/\/openai\/deployments(\/|$)/.test(url.pathname)) {
    throw new Error(
      "base_url must be the resource endpoint (https://{resource}.openai.azure.com), not a deployment URL; " +
        "each target's model names its deployment",
    );
  }
  if (V1_SUFFIX.test(root)) return { form: "v1", root, apiVersion };
  if (apiVersion !== undefined) {
    return { form: "classic", root: root.replace(/\/openai$/, ""), apiVersion };
  }
  throw new Error(
    "set api_version (e.g. 2024-10-21) for the classic /openai/deployments/{deployment} API, or set base_url " +
      "to the v1 API root ending in /openai/v1 (https://{resource}.openai.azure.com/openai/v1)",
  );
}

/** The URL of `operation` for `deployment`; the deployment is percent-encoded as one path segment. */
export function azureUrl(addressing: AzureAddressing, deployment: string, operation: AzureOperation): string {
  const query = addressing.apiVersion === undefined
    ? ""
    : `?api-version=${encodeURIComponent(addressing.apiVersion)}`;
  if (addressing.form === "v1") return `${addressing.root}/${operation}${query}`;
  return `${addressing.root}/openai/deployments/${encodeURIComponent(deployment)}/${operation}${query}`;
}

/**
 * The URL of the resource's Responses API (`responses`, or `responses/input_tokens`). Unlike the other
 * operations it is not per deployment: the deployment is the body's `model`. v1 form: `{base_url}/responses`;
 * classic form: `{resource}/openai/responses?api-version=…`.
 */
export function azureResponsesUrl(
  addressing: AzureAddressing,
  operation: "responses" | "responses/input_tokens" | "responses/compact",
): string {
  const query = addressing.apiVersion === undefined
    ? ""
    : `?api-version=${encodeURIComponent(addressing.apiVersion)}`;
  if (addressing.form === "v1") return `${addressing.root}/${operation}${query}`;
  return `${addressing.root}/openai/${operation}${query}`;
}

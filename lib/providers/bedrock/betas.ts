/**
 * Which `anthropic-beta` names a Bedrock provider forwards to Claude (InvokeModel's `anthropic_beta`), and which
 * it leaves out. Bedrock refuses a whole request naming a beta it does not take (`400 {"message":"invalid beta
 * flag"}`), and Anthropic's clients send betas that mean something only to Anthropic's own API (Claude Code
 * always sends `claude-code-20250219`, and `prompt-caching-scope-…`, `oauth-…` and the like), so forwarding
 * every name the client sent failed every such request. A name Bedrock does not take cannot change Bedrock's
 * answer, so it is left out and named in `x-gateway-dropped` (as `anthropic-beta:<name>`) instead. A Messages
 * body may carry InvokeModel's `anthropic_beta` itself; its names are held to the same list, merged with the
 * header's, so a client cannot pass the operator's `anthropic_betas` through the body.
 *
 * @module
 */
import type { BedrockProviderConfig } from "../../config/schema.ts";
import { splitBetas } from "../anthropic/native.ts";

/**
 * The beta names Bedrock's Claude models take, used when a provider entry sets no `anthropic_betas`.
 *
 * Where the names come from (facts only): AWS's Bedrock pages for Claude's Messages API (`anthropic_beta` in
 * the InvokeModel body, `computer-use-2024-10-22` in its request example, 128K output as a Claude 3.7 Sonnet
 * beta); the public reports of what Bedrock refuses with "invalid beta flag" (anthropics/claude-code issues
 * #49370, #49648 and #56595: `claude-code-20250219`, `extended-cache-ttl-2025-04-11`, and on Opus 4.7 all but
 * `interleaved-thinking-2025-05-14`; #30926: `advanced-tool-use-2025-11-20`, which Bedrock calls
 * `tool-search-tool-2025-10-19`); and the per-provider beta table LiteLLM keeps for its Bedrock routes, the
 * source of most names from 2025-05 on. That table lists `token-efficient-tools-2025-02-19`,
 * `output-128k-2025-02-19` and `tool-examples-2025-10-29` for Bedrock's Anthropic-compatible endpoint only;
 * they are kept here unconfirmed for InvokeModel. Bedrock's set differs by model and region and changes over
 * time, which is why an entry may set its own list.
 */
export const BEDROCK_ANTHROPIC_BETAS: readonly string[] = [
  "computer-use-2024-10-22",
  "computer-use-2025-01-24",
  "computer-use-2025-11-24",
  "token-efficient-tools-2025-02-19",
  "output-128k-2025-02-19",
  "interleaved-thinking-2025-05-14",
  "fine-grained-tool-streaming-2025-05-14",
  "context-management-2025-06-27",
  "context-1m-2025-08-07",
  "tool-search-tool-2025-10-19",
  "tool-examples-2025-10-29",
  "effort-2025-11-24",
  "compact-2026-01-12",
  "mid-conversation-tool-changes-2026-07-01",
  "mid-conversation-output-config-2026-07-01",
  "thinking-binding-controls-2026-08-01",
  "thinking-display-updates-2026-08-18",
];

/**
 * Betas Bedrock takes under a name of its own: Anthropic's `advanced-tool-use-2025-11-20` (tool search, deferred
 * tools) is `tool-search-tool-2025-10-19` there (issue #30926 above). Claude Code sends Anthropic's name; dropped,
 * a request with deferred tools would fail on Bedrock for want of the beta, so it is forwarded under Bedrock's.
 */
const BEDROCK_BETA_NAMES: Readonly<Record<string, string>> = {
  "advanced-tool-use-2025-11-20": "tool-search-tool-2025-10-19",
};

/** The names a client's betas hold (header and body), split by what a Bedrock entry does with them. */
export interface BedrockBetas {
  /** Sent as `anthropic_beta`, in the client's order, each once. */
  forwarded: string[];
  /** Left out: names Bedrock does not take (by the entry's list), each once. */
  dropped: string[];
}

/**
 * What a client's body `anthropic_beta` holds (InvokeModel's own field, which a Messages body may carry as the
 * AnthropicBedrock SDK sends it): `names`, a list's string entries or a string's comma-separated names; and
 * `others`, any other entry (or value) shown as its JSON, which is never sent, only named as dropped.
 */
function bodyBetaNames(value: unknown): { names: string[]; others: string[] } {
  if (value === undefined || value === null) return { names: [], others: [] };
  if (typeof value === "string") return { names: splitBetas(value), others: [] };
  const out = { names: [] as string[], others: [] as string[] };
  for (const entry of Array.isArray(value) ? value : [value]) {
    if (typeof entry !== "string") out.others.push(JSON.stringify(entry));
    else if (entry.trim() !== "") out.names.push(entry.trim());
  }
  return out;
}

/**
 * The client's betas split for the entry `config`: `anthropicBeta` (its header value, or null), then the names of
 * `bodyBeta` (its body's `anthropic_beta`, if any), which obey the same list, since either reaches Bedrock as the
 * same field. The names on the entry's `anthropic_betas` list (the built-in {@linkcode BEDROCK_ANTHROPIC_BETAS}
 * when it sets none) are forwarded, under Bedrock's name where it has its own, the rest dropped.
 */
export function bedrockBetas(
  config: BedrockProviderConfig,
  anthropicBeta: string | null,
  bodyBeta?: unknown,
): BedrockBetas {
  const accepted = config.anthropic_betas ?? BEDROCK_ANTHROPIC_BETAS;
  const out: BedrockBetas = { forwarded: [], dropped: [] };
  const body = bodyBetaNames(bodyBeta);
  for (const sent of [...splitBetas(anthropicBeta ?? ""), ...body.names]) {
    const renamed = Object.hasOwn(BEDROCK_BETA_NAMES, sent) ? BEDROCK_BETA_NAMES[sent] : sent;
    const [list, name] = accepted.includes(renamed) ? [out.forwarded, renamed] : [out.dropped, sent];
    if (!list.includes(name)) list.push(name);
  }
  for (const other of body.others) if (!out.dropped.includes(other)) out.dropped.push(other);
  return out;
}

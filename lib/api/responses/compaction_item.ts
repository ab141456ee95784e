/**
 * The `compaction` item the gateway makes when it compacts a conversation over a translated target
 * (`POST /v1/responses/compact`, compact.ts). A native upstream's compaction item holds state only that
 * upstream can read (`encrypted_content` is opaque); the gateway's holds the summary the alias itself wrote,
 * marked so the gateway knows it when the client sends it back: a translated target gets it as a user message
 * with the summary, a native one as an `input_text` message (it could not read the gateway's own item).
 *
 * The summary is the client's own conversation, so nothing in it is secret from the client; it is encoded, not
 * encrypted, and a client that edits it changes only what its own next request says.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";

/** What starts a gateway-made `encrypted_content`. */
const MARK = "gwc1.";

/** How the summary is introduced to the model that reads it back. */
const INTRODUCTION = "Summary of the conversation so far (earlier turns were compacted):\n\n";

function toBase64Url(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function fromBase64Url(data: string): string | null {
  try {
    const binary = atob(data.replaceAll("-", "+").replaceAll("_", "/"));
    return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
  } catch {
    return null;
  }
}

/** A compaction item `id` (`cmp_…`) holding `summary`. */
export function compactionItem(id: string, summary: string): JsonObject {
  return { id, type: "compaction", encrypted_content: MARK + toBase64Url(summary) };
}

/** The summary of a gateway-made compaction item, or null for any other item (an upstream's included). */
export function gatewaySummary(item: unknown): string | null {
  if (!isObject(item) || item.type !== "compaction") return null;
  const content = item.encrypted_content;
  if (typeof content !== "string" || !content.startsWith(MARK)) return null;
  return fromBase64Url(content.slice(MARK.length));
}

/**
 * Whether `item` is an upstream's own `compaction` item (its `encrypted_content` opaque state only that upstream
 * reads back), not one the gateway made.
 */
export function isUpstreamCompaction(item: JsonObject): boolean {
  const content = item.encrypted_content;
  return item.type === "compaction" && !(typeof content === "string" && content.startsWith(MARK));
}

/**
 * Where each upstream `compaction` item of `input` is (`input[2].type`, as its native-only note names it): state
 * the chat form cannot read, named when a native target is served that form instead of the client's body
 * (`ChatForm.chatLoses`), each of them, not only the first native-only item the request holds.
 */
export function upstreamCompactionPaths(input: readonly JsonObject[]): string[] {
  const paths: string[] = [];
  input.forEach((item, i) => {
    if (isUpstreamCompaction(item)) paths.push(`input[${i}].type`);
  });
  return paths;
}

/** The summary as the text a model reads back. */
export function summaryText(summary: string): string {
  return INTRODUCTION + summary;
}

/** A gateway-made compaction item as an input message any Responses upstream reads; other items as they are. */
export function readableItem(item: JsonObject): JsonObject {
  const summary = gatewaySummary(item);
  if (summary === null) return item;
  return { type: "message", role: "user", content: [{ type: "input_text", text: summaryText(summary) }] };
}

/**
 * The texts of an answer's `annotations` (a completion's message, or a stream's delta) that the output
 * guardrails read: a web search's citations (`url_citation`), whose `title` and `url` reach a chat completions
 * client beside the content (lib/guardrails/unread_output.ts keeps `annotations` on a checked answer). They are
 * the upstream's words, not the model's, but the client reads them as the answer's: a title holding an address a
 * `mask` guardrail hides in the content, or a URL holding a key a `deny` guardrail refuses, would otherwise
 * reach it untouched. Its offsets (`start_index`, `end_index`, into the content) are numbers, not read.
 *
 * @module
 */
import type { JsonObject } from "../openai/types.ts";
import { isObject } from "../openai/types.ts";

/** The fields of a citation read as text, in the order they are checked. */
const CITATION_TEXTS = ["title", "url"] as const;

/** One text of an annotation, and how to put back what the checks made of it. */
export interface AnnotationText {
  readonly text: string;
  write(text: string): void;
}

/** The non-empty citation texts of `said`'s `annotations` (objects of an upstream: untrusted), in order. */
export function annotationTexts(said: JsonObject): AnnotationText[] {
  const list = said.annotations;
  if (!Array.isArray(list)) return [];
  const texts: AnnotationText[] = [];
  for (const annotation of list) {
    const citation = isObject(annotation) ? annotation.url_citation : undefined;
    if (!isObject(citation)) continue;
    for (const field of CITATION_TEXTS) {
      const text = citation[field];
      if (typeof text === "string" && text !== "") {
        texts.push({ text, write: (t) => citation[field] = t });
      }
    }
  }
  return texts;
}

/**
 * The texts of an answer's `annotations` (a completion's message, or a stream's delta) that the output
 * guardrails read: a web search's citations (`url_citation`), whose `title`, `url` and `content` (OpenRouter's
 * snippet of the cited page) reach a chat completions client beside the content (lib/guardrails/unread_output.ts
 * keeps `annotations` on a checked answer). They are the upstream's words, not the model's, but the client reads
 * them as the answer's: a title holding an address a `mask` guardrail hides in the content, or a URL holding a
 * key a `deny` guardrail refuses, would otherwise reach it untouched. Its offsets (`start_index`, `end_index`,
 * into the content) are numbers, not read. Anything else in `annotations` (another type of annotation, another
 * field of a citation) no check reads, so a checked answer does not pass it on ({@linkcode dropUnreadAnnotations}).
 *
 * @module
 */
import type { JsonObject } from "../openai/types.ts";
import { isObject } from "../openai/types.ts";

/** The fields of a citation read as text, in the order they are checked. */
const CITATION_TEXTS = ["title", "url", "content"] as const;

/** The fields of a citation kept as numbers: where in the content it stands. */
const CITATION_OFFSETS = ["start_index", "end_index"] as const;

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

/**
 * Takes off `said`'s `annotations`, in place, what no check reads: an annotation that is no `url_citation`, and a
 * citation's fields other than its texts (strings) and offsets (numbers). Set rather than deleted, as
 * unread_output.ts's `dropUnread`, which calls it on every checked message and delta, does.
 */
export function dropUnreadAnnotations(said: JsonObject): void {
  const list = said.annotations;
  if (list === undefined || list === null) return;
  if (!Array.isArray(list)) {
    said.annotations = undefined;
    return;
  }
  const kept: JsonObject[] = [];
  for (const annotation of list) {
    if (!isObject(annotation) || annotation.type !== "url_citation") continue;
    const citation = annotation.url_citation;
    if (!isObject(citation)) continue;
    const read: JsonObject = {};
    for (const field of CITATION_OFFSETS) {
      if (typeof citation[field] === "number") read[field] = citation[field];
    }
    for (const field of CITATION_TEXTS) {
      if (typeof citation[field] === "string") read[field] = citation[field];
    }
    kept.push({ type: "url_citation", url_citation: read });
  }
  said.annotations = kept;
}

/**
 * A chat `file` part as a Converse `document` block (DocumentBlock in the Converse API reference), so what the
 * Anthropic translation serves as a `document` (`../anthropic/request.ts`: a Messages document in the chat form,
 * a plain-text document a guardrail rewrote, a chat client's PDF) reaches a model on Bedrock too, instead of a
 * 400 for the part's type on the alias's Bedrock fallback.
 *
 * Converse takes a document inline as base64 `bytes` in one of nine formats, named by a `name` Bedrock checks
 * strictly: ASCII letters and digits, single spaces, hyphens, parentheses and square brackets, 1 to 200
 * characters (else AWS's ValidationException "The document file name can only contain alphanumeric
 * characters, …" refuses the whole request: a filename's dot too), and unique within the request, history
 * included ("Messages can't contain duplicate document names"). A message holding a document must hold a text
 * block too ("A text block must be included when using documents."): see {@linkcode withDocumentText}. A file
 * by id (another vendor's upload) or of another type is refused with a 400 naming the part.
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import { vendorMediaType } from "../shared/media_type.ts";

/** A `data:` URL with base64 data: its media type (before any `;` parameter) and its payload. */
const BASE64_DATA_URL = /^data:([^;,]+)((?:;[^;,]+)*?);base64,(.*)$/s;

/** A `data:` URL's media type and base64 payload (whitespace taken out), or null when it is not one. */
export function base64DataUrl(url: string): { type: string; data: string } | null {
  const m = BASE64_DATA_URL.exec(url);
  return m === null ? null : { type: m[1], data: m[3].replace(/\s+/g, "") };
}

/** Whether `data` is standard base64 that holds at least one byte (Converse's blobs have a minimum length of 1). */
export function isBase64Bytes(data: string): boolean {
  return data !== "" && /^[A-Za-z0-9+/]*={0,2}$/.test(data);
}

/** The DocumentBlock `format` for each media type Converse reads (its nine valid values). */
const DOCUMENT_FORMATS: Readonly<Record<string, string>> = {
  "application/pdf": "pdf",
  "text/plain": "txt",
  "text/markdown": "md",
  "text/x-markdown": "md",
  "text/html": "html",
  "text/csv": "csv",
  "application/msword": "doc",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
  "application/vnd.ms-excel": "xls",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
};

/** Bedrock's longest document name. */
const MAX_NAME = 200;

/** The name of a document whose filename leaves nothing Bedrock takes (none, `.pdf`, a name of CJK letters). */
const UNNAMED = "document";

/**
 * `filename` as a name Bedrock takes: its directory and extension left out (the extension is the `format`,
 * and a dot is refused), accents taken off letters, every other character it refuses (`_`, `.`, `'`, `#`,
 * non-ASCII letters, tabs) a space, spaces collapsed, at most 200 characters; {@linkcode UNNAMED} when nothing
 * is left. Only the ASCII space counts as whitespace: Bedrock refuses others, even alone.
 */
export function documentName(filename: unknown): string {
  const base = (typeof filename === "string" ? filename : "").replace(/^.*[\\/]/, "").replace(
    /\.[^.\s]*$/,
    "",
  );
  const name = base.normalize("NFKD").replace(/[\u0300-\u036f]/g, "")
    .replace(/[^A-Za-z0-9 ()[\]-]+/g, " ").replace(/ {2,}/g, " ").trim();
  return name === "" ? UNNAMED : name.slice(0, MAX_NAME).trimEnd();
}

/**
 * The names of one request's documents, each made unique: a repeat (two files of one name, or two unnamed
 * ones, in any turn, letters' case aside) is numbered, `report (2)`, within the 200 characters.
 */
export class DocumentNames {
  readonly #taken = new Set<string>();

  /** A name for the document `filename` names, not taken by another document of the request. */
  next(filename: unknown): string {
    const name = documentName(filename);
    let unique = name;
    for (let n = 2; this.#taken.has(unique.toLowerCase()); n++) {
      const suffix = ` (${n})`;
      unique = `${name.slice(0, MAX_NAME - suffix.length).trimEnd()}${suffix}`;
    }
    this.#taken.add(unique.toLowerCase());
    return unique;
  }
}

/**
 * A chat `file` part (at request parameter `param`) as a Converse `document` block, named by `names`; a 400
 * naming the part when it is not an inline base64 file (`file_data`) of a type Converse reads.
 */
export function documentBlock(part: JsonObject, param: string, names: DocumentNames): JsonObject {
  const file = isObject(part.file) ? part.file : {};
  const inline = typeof file.file_data === "string" ? base64DataUrl(file.file_data) : null;
  if (inline === null) {
    throw invalidRequest(
      "Bedrock models take a file part only inline, as `file_data` (a base64 `data:` URL); a `file_id` names " +
        "an upload Bedrock cannot read.",
      `${param}.file`,
      "unsupported_parameter",
    );
  }
  const format = DOCUMENT_FORMATS[vendorMediaType(inline.type)];
  if (format === undefined) {
    throw invalidRequest(
      `File type '${inline.type}' is not supported by Bedrock; send PDF, plain text, Markdown, HTML, CSV, ` +
        "Word (doc, docx) or Excel (xls, xlsx).",
      `${param}.file.file_data`,
      "unsupported_file_type",
    );
  }
  if (!isBase64Bytes(inline.data)) {
    throw invalidRequest("The file data is not valid base64.", `${param}.file.file_data`);
  }
  // Converse's JSON protocol carries blobs as base64 strings.
  return { document: { format, name: names.next(file.filename), source: { bytes: inline.data } } };
}

/**
 * The text block put before the documents of a user turn that has no text of its own (a file sent alone, or
 * beside tool results): Converse refuses a message with a document and no text block. Not blank, since
 * Converse refuses blank text too, and no words the client did not send.
 */
export const DOCUMENT_TEXT = ".";

/**
 * `turns` with {@linkcode DOCUMENT_TEXT} before the first document of each turn that holds one and no text
 * block; the others as they are.
 */
export function withDocumentText<T extends { content: JsonObject[] }>(turns: T[]): T[] {
  return turns.map((turn) => {
    const first = turn.content.findIndex((block) => "document" in block);
    if (first < 0 || turn.content.some((block) => "text" in block)) return turn;
    const content = [...turn.content];
    content.splice(first, 0, { text: DOCUMENT_TEXT });
    return { ...turn, content };
  });
}

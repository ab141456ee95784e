/**
 * The o200k_base tokenizer (GPT-4o's) in the thread that imports this module: its load and its counts. The
 * gateway counts in a worker thread of its own (`token_count_worker.ts`, through `token_counter.ts`), so that
 * neither the load (about 0.3 s on Deno, 0.8 s on Bun, several seconds on a busy machine, all of it synchronous)
 * nor a long count ever holds a serving thread; only when no worker can be started does the serving thread count
 * with this module itself.
 *
 * @module
 */

/** Counts one text's tokens. */
export type TextCount = (text: string) => number;

let encoding: Promise<TextCount> | undefined;
let loadedHere = false;

/**
 * The tokenizer's count function, loading it in this thread on first use (evaluating its tables blocks the
 * thread for the whole load).
 */
export function tokenizerHere(): Promise<TextCount> {
  encoding ??= import("gpt-tokenizer/encoding/o200k_base").then((m) => {
    loadedHere = true;
    return m.countTokens;
  });
  return encoding;
}

/** Whether the tokenizer is loaded in this thread. */
export function tokenizerLoadedHere(): boolean {
  return loadedHere;
}

/**
 * Longest piece of text the tokenizer gets at once. Its BPE is quadratic in the length of a run without
 * spaces (64 K of one letter took 3 s, 1 MB minutes), and a client chooses the text.
 */
const PIECE = 2_000;

/**
 * `text` in pieces of at most {@linkcode PIECE} characters, cut before a space that follows a non-space (where
 * the tokenizer's own pre-tokens end, so the count is exact), or where there is none every `PIECE` characters
 * (a surrogate pair kept whole; a long run without spaces may then count a token more per piece).
 */
export function tokenizerPieces(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  while (text.length - start > PIECE) {
    let cut = text.lastIndexOf(" ", start + PIECE);
    while (cut > start && /\s/.test(text[cut - 1])) cut = text.lastIndexOf(" ", cut - 1);
    if (cut <= start) {
      cut = start + PIECE;
      const unit = text.charCodeAt(cut - 1);
      if (unit >= 0xd800 && unit <= 0xdbff) cut--;
    }
    out.push(text.slice(start, cut));
    start = cut;
  }
  out.push(text.slice(start));
  return out;
}

/** The tokens of every text together, each long text counted in {@linkcode tokenizerPieces}. */
export function countWith(count: TextCount, texts: readonly string[]): number {
  let total = 0;
  for (const text of texts) {
    if (text.length <= PIECE) total += count(text);
    else for (const piece of tokenizerPieces(text)) total += count(piece);
  }
  return total;
}

/** Counts `texts` in this thread, loading the tokenizer here first if needed. */
export async function countHere(texts: readonly string[]): Promise<number> {
  return countWith(await tokenizerHere(), texts);
}

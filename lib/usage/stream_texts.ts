/**
 * What a streamed answer sent the client (text, refusal, reasoning and argument deltas), kept to count its
 * tokens when the upstream reports no usage, in bounded memory: once the texts kept pass
 * {@linkcode FOLD_CHARS} characters they are counted with the tokenizer and dropped, only their count kept.
 * The tokenizer counts each text on its own and sums (`countTokens`), so counting them in batches gives the
 * very same total: the count stays exact however long the answer. The first batch is kept as the answer's
 * opening, for a trace's captured output, which is cut far shorter (`telemetry.max_content_size`), and which
 * shows the reasoning apart from the answer's text (`pushReasoning`).
 *
 * An answer under {@linkcode FOLD_CHARS} (every ordinary one) is never folded: its cost per text is a push and
 * a length add, as a plain array's was. A longer one is tokenized as it streams even when the upstream reports
 * its usage at the end (which cannot be known before): about 25 ms of CPU per MiB of prose, 110 ms per MiB of
 * random words, in the token-count worker (`token_counter.ts`), instead of holding it all
 * (`server.upstream_limits.max_stream_size` bounds how much). A batch is handed to the worker as it is folded;
 * the stream body reads the upstream no faster than the worker counts ({@linkcode StreamTexts.caughtUp}), so the
 * batches do not pile up in the worker's queue either.
 *
 * @module
 */
import { countTokens, roughTokenEstimate } from "./estimate.ts";
import type { SaidTexts, TextSink } from "../openai/said_fields.ts";

/**
 * Characters of text kept before they are folded into a count. One fold tokenizes this much at once in the
 * token-count worker (about 6 ms of English prose, 30 ms of random words, as measured here).
 */
export const FOLD_CHARS = 256 * 1024;

/** Batches a stream may have in the worker's hands before its body waits for them: one counted, one queued. */
const BATCHES_AHEAD = 2;

/**
 * `texts`' token count; the rough estimate when the tokenizer cannot be loaded, or once `ended` aborts
 * (`countTokens`). The texts are not held while they are counted: the count is the token-count worker's, which
 * has them.
 */
function counted(texts: readonly string[], ended?: AbortSignal): Promise<number> {
  const rough = roughTokenEstimate(texts);
  return countTokens(texts, ended).catch(() => rough);
}

/** A streamed answer's texts, as {@linkcode push}ed one by one; see the module doc. */
export class StreamTexts implements TextSink {
  /** Texts not yet folded. */
  #kept: string[] = [];
  /** Where in {@linkcode #kept} the reasoning is: counted as any text, captured apart ({@linkcode said}). */
  #keptReasoning = new Set<number>();
  #keptChars = 0;
  /** Characters of the folded texts. */
  #foldedChars = 0;
  /** Characters of the reasoning texts among all received, folded or kept. */
  #reasoningChars = 0;
  /** The folded texts' tokens, counted one batch after the other. */
  #folded: Promise<number> | undefined;
  /** The first folded batch, kept: the answer's opening, and where its reasoning is. */
  #opening: readonly string[] | undefined;
  #openingReasoning: ReadonlySet<number> | undefined;
  /** Folded batches not counted yet. */
  #counting = 0;
  /** Resolved once fewer than {@linkcode BATCHES_AHEAD} batches are left to count. */
  #behind: PromiseWithResolvers<void> | undefined;

  /** Adds a text the client received: the answer's (its content, refusal, tool calls' texts). */
  push(text: string): void {
    // An empty text counts nothing, and adds no characters towards a fold: kept, a stream of empty deltas
    // would grow this list without bound.
    if (text === "") return;
    this.#kept.push(text);
    this.#keptChars += text.length;
    if (this.#keptChars > FOLD_CHARS) this.#fold();
  }

  /**
   * Adds a reasoning text the client received (a thinking, thought or reasoning summary delta): counted as every
   * text is, and known as reasoning to every reader of the texts: its characters kept apart, so a stream budget
   * weighs it at a reasoning rate priced apart from output (lib/answer/budget_guard.ts), and its place, so
   * content capture shows it apart from the answer ({@linkcode said}).
   */
  pushReasoning(text: string): void {
    if (text === "") return;
    this.#reasoningChars += text.length;
    this.#keptReasoning.add(this.#kept.length);
    this.push(text);
  }

  #fold(): void {
    const batch = this.#kept;
    if (this.#opening === undefined) {
      this.#opening = batch;
      this.#openingReasoning = this.#keptReasoning;
    }
    if (this.#keptReasoning.size > 0) this.#keptReasoning = new Set();
    this.#foldedChars += this.#keptChars;
    this.#kept = [];
    this.#keptChars = 0;
    // Sent to the token-count worker at once, so this thread holds nothing of the batch (but the opening) while
    // it is counted; the counts are summed, in whatever order they come.
    this.#counting++;
    const count = counted(batch).finally(() => {
      if (--this.#counting < BATCHES_AHEAD) {
        this.#behind?.resolve();
        this.#behind = undefined;
      }
    });
    const before = this.#folded ?? Promise.resolve(0);
    this.#folded = before.then(async (total) => total + await count);
  }

  /**
   * Undefined while the worker keeps up with the batches folded so far; else a promise resolved once it does.
   * The stream body waits on it before it reads the upstream again (lib/answer/stream_body.ts): counting was
   * the reading thread's own work, which held an upstream faster than it back, and now is another thread's.
   */
  caughtUp(): Promise<void> | undefined {
    if (this.#counting < BATCHES_AHEAD) return undefined;
    this.#behind ??= Promise.withResolvers<void>();
    return this.#behind.promise;
  }

  /** Characters received in all, folded or kept (what a budget guard weighs). */
  get chars(): number {
    return this.#foldedChars + this.#keptChars;
  }

  /** Characters of the reasoning texts among {@linkcode chars} ({@linkcode pushReasoning}). */
  get reasoningChars(): number {
    return this.#reasoningChars;
  }

  /**
   * The texts from the start of the answer: every one until the first fold, then the first batch folded (at
   * least {@linkcode FOLD_CHARS} characters).
   */
  opening(): readonly string[] {
    return this.#opening ?? this.#kept;
  }

  /**
   * The {@linkcode opening} as content capture shows it: the answer's texts, and its reasoning apart, each in the
   * order received, as a whole answer's (`completionSaid`) are.
   */
  said(): SaidTexts {
    const texts = this.opening();
    const reasoningAt = this.#opening === undefined ? this.#keptReasoning : this.#openingReasoning!;
    if (reasoningAt.size === 0) return { text: texts, reasoning: [] };
    const text: string[] = [];
    const reasoning: string[] = [];
    texts.forEach((piece, i) => (reasoningAt.has(i) ? reasoning : text).push(piece));
    return { text, reasoning };
  }

  /** The tokens of every text received: the folded ones' count plus the kept ones counted now. */
  async count(): Promise<number> {
    const [folded, kept] = await Promise.all([this.#folded ?? 0, counted(this.#kept)]);
    return folded + kept;
  }
}

/**
 * The tokens of `texts`, a stream's or a whole answer's list; the rough estimate if the tokenizer fails. A whole
 * answer's, counted before it is sent, is the rough estimate too once `ended` (its request's signal) aborts; a
 * stream's is counted for its record after it ended, however it ended.
 */
export function countTexts(texts: readonly string[] | StreamTexts, ended?: AbortSignal): Promise<number> {
  return texts instanceof StreamTexts ? texts.count() : counted(texts, ended);
}

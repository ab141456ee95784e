/**
 * When a streamed tool call may be shown to a client: once its name is known. The chat form puts a call's id and
 * name in its first delta, but some OpenAI-compatible servers send them later (vLLM and vmlx start a call with
 * `{index, id, function: {name: "", arguments: ""}}` and name it in the next chunk; others send the arguments'
 * first fragment before the id and name). A client API that started its block or item at the first delta
 * showed a call named `""` (and an id of its own making when the id came late), which no client can run.
 *
 * {@linkcode ToolCallStarts} reads a stream's tool call deltas and says what to show: nothing while a call has
 * no name (its argument fragments are held), then the call's start with every fragment held, then each later
 * fragment as it comes. A call starts once it has a name and either its id or some arguments, so an id in the
 * chunk after the name is not missed. A delta whose id differs from the one its `index` named is another call
 * (Ollama gives every call index 0). At the end, a named call still waiting starts (without an id: the client
 * API makes one up); a call that never got a name is the upstream's fault, which the client API reports as the
 * stream's error. What waits is bounded ({@linkcode UNNAMED_ARGS_MAX}, {@linkcode WAITING_CALLS_MAX}): past
 * it, {@linkcode ToolCallStarts.holdsTooMuch} tells the client API to end the stream with that error at once.
 *
 * @module
 */
import { isObject, type JsonObject } from "./types.ts";

/** What to show of a tool call delta. */
export interface ToolCallPiece {
  /** Which call: 0, 1, … in the order the calls began (a chat `index` may name more than one). */
  call: number;
  /** On the call's first piece only: its id (undefined when the upstream gave none) and name. */
  start?: { id: string | undefined; name: string };
  /** Arguments to append: on the first piece, every fragment held until the call could start. */
  arguments: string;
}

/**
 * Characters of arguments held, over all calls, for calls that have no name yet. A server that names a call
 * late does so in the chunk after its first or sends a fragment first (a few characters); without a bound, an
 * upstream streaming arguments and never a name had the gateway hold them all until `timeouts.total` (100 MB
 * of arguments, 100 MB of heap). Such a call fails the stream at its end anyway (no client can run it), so
 * past 64 Ki characters it fails at once; a legitimate upstream never comes near.
 */
export const UNNAMED_ARGS_MAX = 64 * 1024;

/**
 * Calls waiting at once to be shown (no name yet, or a name and neither id nor arguments). Each is a few
 * objects; an upstream sending deltas for ever-new indexes and no name grew them with the stream. No answer
 * holds a thousand calls unnamed: past it the stream fails, as for {@linkcode UNNAMED_ARGS_MAX}.
 */
export const WAITING_CALLS_MAX = 1_024;

interface Tracked {
  call: number;
  id: string | undefined;
  name: string | undefined;
  parts: string[];
  /** Characters in `parts`. */
  held: number;
  started: boolean;
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** One stream's tool calls, as far as their deltas have come. */
export class ToolCallStarts {
  #byIndex = new Map<number, Tracked>();
  #calls: Tracked[] = [];
  /** Calls not started, and the characters of arguments they hold. */
  #waiting = 0;
  #held = 0;

  /** A chat tool call delta as what to show of it: null while its call waits for a name. */
  delta(delta: JsonObject): ToolCallPiece | null {
    const index = typeof delta.index === "number" ? delta.index : 0;
    const fn = isObject(delta.function) ? delta.function : {};
    const id = nonEmpty(delta.id);
    const args = typeof fn.arguments === "string" ? fn.arguments : "";
    let tracked = this.#byIndex.get(index);
    if (tracked === undefined || (id !== undefined && tracked.id !== undefined && id !== tracked.id)) {
      tracked = {
        call: this.#calls.length,
        id: undefined,
        name: undefined,
        parts: [],
        held: 0,
        started: false,
      };
      this.#byIndex.set(index, tracked);
      this.#calls.push(tracked);
      this.#waiting++;
    }
    if (tracked.started) return { call: tracked.call, arguments: args };
    tracked.id ??= id;
    tracked.name ??= nonEmpty(fn.name);
    if (args !== "" && !this.holdsTooMuch) {
      tracked.parts.push(args);
      tracked.held += args.length;
      this.#held += args.length;
    }
    if (tracked.name === undefined || (tracked.id === undefined && tracked.parts.length === 0)) return null;
    return this.#start(tracked);
  }

  #start(tracked: Tracked): ToolCallPiece {
    tracked.started = true;
    this.#waiting--;
    this.#held -= tracked.held;
    const args = tracked.parts.join("");
    tracked.parts = [];
    tracked.held = 0;
    return { call: tracked.call, start: { id: tracked.id, name: tracked.name! }, arguments: args };
  }

  /**
   * Whether the calls waiting for a name hold more than the bounds allow ({@linkcode UNNAMED_ARGS_MAX},
   * {@linkcode WAITING_CALLS_MAX}): the upstream is malformed, and the stream should end with its error now
   * (nothing more is held meanwhile). Asked when a delta showed nothing.
   */
  get holdsTooMuch(): boolean {
    return this.#held > UNNAMED_ARGS_MAX || this.#waiting > WAITING_CALLS_MAX;
  }

  /** Whether a call has started: the answer holds a tool call. */
  get anyStarted(): boolean {
    return this.#calls.some((t) => t.started);
  }

  /** Whether a call never got a name: the stream cannot end well. */
  get nameless(): boolean {
    return this.#calls.some((t) => t.name === undefined);
  }

  /** At the stream's end: the named calls still waiting, started now in the order they began. */
  end(): ToolCallPiece[] {
    return this.#calls.filter((t) => !t.started && t.name !== undefined).map((t) => this.#start(t));
  }
}

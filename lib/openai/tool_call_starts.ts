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
 * stream's error.
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

interface Tracked {
  call: number;
  id: string | undefined;
  name: string | undefined;
  parts: string[];
  started: boolean;
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** One stream's tool calls, as far as their deltas have come. */
export class ToolCallStarts {
  #byIndex = new Map<number, Tracked>();
  #calls: Tracked[] = [];

  /** A chat tool call delta as what to show of it: null while its call waits for a name. */
  delta(delta: JsonObject): ToolCallPiece | null {
    const index = typeof delta.index === "number" ? delta.index : 0;
    const fn = isObject(delta.function) ? delta.function : {};
    const id = nonEmpty(delta.id);
    const args = typeof fn.arguments === "string" ? fn.arguments : "";
    let tracked = this.#byIndex.get(index);
    if (tracked === undefined || (id !== undefined && tracked.id !== undefined && id !== tracked.id)) {
      tracked = { call: this.#calls.length, id: undefined, name: undefined, parts: [], started: false };
      this.#byIndex.set(index, tracked);
      this.#calls.push(tracked);
    }
    if (tracked.started) return { call: tracked.call, arguments: args };
    tracked.id ??= id;
    tracked.name ??= nonEmpty(fn.name);
    if (args !== "") tracked.parts.push(args);
    if (tracked.name === undefined || (tracked.id === undefined && tracked.parts.length === 0)) return null;
    return ToolCallStarts.#start(tracked);
  }

  static #start(tracked: Tracked): ToolCallPiece {
    tracked.started = true;
    const args = tracked.parts.join("");
    tracked.parts = [];
    return { call: tracked.call, start: { id: tracked.id, name: tracked.name! }, arguments: args };
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
    return this.#calls.filter((t) => !t.started && t.name !== undefined).map(ToolCallStarts.#start);
  }
}

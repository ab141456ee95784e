/**
 * Counts the work a synchronous call does, for the tests that catch an algorithm gone quadratic, without a
 * clock: a clock measures the machine as much as the code (CI runs test files side by side on two cores, and a
 * loaded machine made bounds in milliseconds fail), while a count of steps is the same on every run.
 *
 * The work is two counts:
 * - `blocks`: how many times the blocks inside the functions of the given files ran (loop bodies, branches, the
 *   right of a `&&`), read from V8's precise block coverage through `node:inspector`. A loop that walks a text
 *   once runs its body once a character; one that walks it again from every position runs it n²/2 times. A
 *   function's calls are not counted: V8 stops counting them once it inlines the function, at a moment its
 *   compiler threads decide, while the blocks inside are counted exactly wherever they run.
 * - `scanned`: the characters the engine's own scans went over for that code, which block coverage cannot see:
 *   each regular-expression search from where it started to where its match ended (to the end of the text when
 *   none), and each `indexOf`/`lastIndexOf`/`includes` and string `split`/`replace` likewise.
 *
 * Block coverage only counts functions compiled after it started, so {@linkcode startWorkMeter} must run before
 * the measured code is first called: import the modules under measure dynamically after it (a static import
 * runs a module's top level, and anything it calls there, before the meter starts). `measure` refuses a file
 * whose functions ran without counters rather than count them as no work.
 *
 * A regular expression's own backtracking is not counted (V8 does not report it): the recognizers are written
 * with patterns that have no nested quantifiers, which is what keeps each search linear.
 *
 * @module
 */
import { Session } from "node:inspector/promises";

/** The work one call did. */
export interface Work {
  /** Blocks of the measured files' JavaScript run. */
  readonly blocks: number;
  /** Characters scanned by regular expressions and string searches during the call. */
  readonly scanned: number;
  /** Both together: the count the growth checks compare. */
  readonly total: number;
}

/** Counts the work of synchronous calls; see the module's documentation. */
export interface WorkMeter {
  /** The work `fn` does in the files whose URLs are `files` (module URLs: `new URL("./x.ts", import.meta.url)`). */
  measure(files: readonly URL[], fn: () => unknown): Promise<Work>;
}

interface CoverageRange {
  readonly startOffset: number;
  readonly endOffset: number;
  readonly count: number;
}

interface ScriptCoverage {
  readonly url: string;
  readonly functions: readonly {
    readonly functionName: string;
    readonly ranges: readonly CoverageRange[];
    readonly isBlockCoverage: boolean;
  }[];
}

/**
 * Starts precise block coverage in this isolate (kept until it ends: a test file runs in an isolate of its own).
 * Call it before the code to be measured is first called.
 */
export async function startWorkMeter(): Promise<WorkMeter> {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: true });
  const take = async (): Promise<readonly ScriptCoverage[]> =>
    (await session.post("Profiler.takePreciseCoverage")).result as unknown as ScriptCoverage[];
  return {
    async measure(files, fn) {
      await take(); // resets the counters
      const scanned = countScans(fn);
      const wanted = new Set(files.map((f) => f.href));
      let blocks = 0;
      for (const script of await take()) {
        if (!wanted.has(script.url)) continue;
        for (const f of script.functions) {
          if (!f.isBlockCoverage && f.ranges[0].count > 0) {
            throw new Error(
              `${script.url}: ${
                f.functionName || "(anonymous)"
              } ran without block counters: it was compiled ` +
                "before the work meter started (import the measured modules after startWorkMeter)",
            );
          }
          // The function's own range counts its calls, which V8 stops counting where it inlines the function
          // (when depends on its compiler threads): only the blocks inside it count exactly, on every run.
          for (const range of f.ranges.slice(1)) blocks += range.count;
        }
      }
      return { blocks, scanned, total: blocks + scanned };
    },
  };
}

type Method = (this: unknown, ...args: unknown[]) => unknown;

/** Runs `fn` with the engine's scanning methods counting the characters they go over; returns that count. */
function countScans(fn: () => unknown): number {
  let scanned = 0;
  const restore: (() => void)[] = [];
  const wrap = <T extends object>(
    proto: T,
    name: string,
    count: (self: unknown, args: unknown[], out: unknown) => number,
  ) => {
    const original = Reflect.get(proto, name) as Method;
    const counting: Method = function (this: unknown, ...args: unknown[]) {
      const out = Reflect.apply(original, this, args);
      scanned += Math.max(1, count(this, args, out));
      return out;
    };
    Object.defineProperty(proto, name, { value: counting, writable: true, configurable: true });
    restore.push(() =>
      Object.defineProperty(proto, name, { value: original, writable: true, configurable: true })
    );
  };
  // Every regular-expression method (test, match, matchAll, replace, split, search) goes through exec once it
  // is replaced, so this one wrapper sees them all.
  const exec = Reflect.get(RegExp.prototype, "exec") as Method;
  const countingExec: Method = function (this: unknown, ...args: unknown[]) {
    const re = this as RegExp;
    const from = re.global || re.sticky ? re.lastIndex : 0;
    const out = Reflect.apply(exec, this, args) as RegExpExecArray | null;
    const text = String(args[0]);
    // A sticky search that failed tried one position only.
    const end = out !== null ? out.index + out[0].length : re.sticky ? from + 1 : text.length;
    scanned += Math.max(1, end - from);
    return out;
  };
  Object.defineProperty(RegExp.prototype, "exec", {
    value: countingExec,
    writable: true,
    configurable: true,
  });
  restore.push(() =>
    Object.defineProperty(RegExp.prototype, "exec", { value: exec, writable: true, configurable: true })
  );
  const length = (self: unknown) => String(self).length;
  const indexOf = String.prototype.indexOf;
  wrap(String.prototype, "indexOf", (self, args, out) => {
    const from = Math.max(0, Number(args[1] ?? 0) || 0);
    return (out as number) === -1 ? length(self) - from : (out as number) + String(args[0]).length - from;
  });
  wrap(String.prototype, "includes", (self, args, out) => {
    const from = Math.max(0, Number(args[1] ?? 0) || 0);
    if (!out) return length(self) - from;
    return indexOf.call(String(self), String(args[0]), from) + String(args[0]).length - from;
  });
  wrap(String.prototype, "lastIndexOf", (self, args, out) => {
    const from = args[1] === undefined ? length(self) : Math.min(length(self), Number(args[1]) || 0);
    return (out as number) === -1 ? from : from - (out as number);
  });
  for (const name of ["split", "replace", "replaceAll"]) {
    wrap(String.prototype, name, (self, args) => args[0] instanceof RegExp ? 0 : length(self));
  }
  try {
    fn();
  } finally {
    for (const undo of restore.reverse()) undo();
  }
  return scanned;
}

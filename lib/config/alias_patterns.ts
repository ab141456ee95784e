/**
 * Matching token alias patterns against every alias of a config, without testing each pattern against each
 * alias: that is quadratic, and a config with ten thousand tokens and ten thousand aliases took minutes to
 * load.
 *
 * The patterns people write are a literal alias (a set lookup), `*` (every alias), or a prefix followed by
 * `*` (`chat-*`: a range of the sorted aliases, found by binary search). Any other pattern is tested against
 * every alias once and its matches are kept, so a pattern repeated across many tokens costs one scan. Token
 * pattern lists are cached too: tokens that share their patterns share one alias set.
 *
 * @module
 */

/**
 * Compiles a token's alias pattern: `*` matches any run of characters (also none), `?` exactly one, and
 * everything else itself. Anchored, so `chat-*` does not match `my-chat-x`.
 */
export function globToRegExp(pattern: string): RegExp {
  let source = "";
  for (const ch of pattern) {
    if (ch === "*") source += ".*";
    else if (ch === "?") source += ".";
    else source += ch.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&");
  }
  return new RegExp(`^${source}$`, "su");
}

/** Every alias of a config, indexed for pattern matching. */
export interface AliasIndex {
  /** The aliases `pattern` matches, in sorted order. */
  matches(pattern: string): readonly string[];
  /** True when `pattern` matches at least one alias. */
  matchesAny(pattern: string): boolean;
  /** The aliases any of `patterns` matches; the same set for the same list of patterns. */
  expand(patterns: readonly string[]): ReadonlySet<string>;
  /** How many alias tests the patterns that need a scan have cost so far. */
  readonly scanned: number;
  /** How many aliases there are. */
  readonly size: number;
  /** True when matching `pattern` takes a scan of every alias (not an alias, `*` or `prefix*`). */
  needsScan(pattern: string): boolean;
}

const WILDCARD = /[*?]/;

/** Indexes `aliases` (any order, no duplicates expected). */
export function indexAliases(aliases: Iterable<string>): AliasIndex {
  const sorted = [...new Set(aliases)].sort();
  const all = new Set(sorted);
  const scans = new Map<string, readonly string[]>();
  const lists = new Map<string, ReadonlySet<string>>();
  let scanned = 0;

  /** The first index whose alias is not below `text` (code unit order, as `sort()` uses). */
  const lowerBound = (text: string): number => {
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (sorted[mid] < text) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };

  const needsScan = (pattern: string): boolean => {
    if (!WILDCARD.test(pattern) || /^\*+$/.test(pattern)) return false;
    const star = pattern.indexOf("*");
    return !(star === pattern.length - 1 && !WILDCARD.test(pattern.slice(0, star))) && !scans.has(pattern);
  };

  const matches = (pattern: string): readonly string[] => {
    if (!WILDCARD.test(pattern)) return all.has(pattern) ? [pattern] : [];
    if (/^\*+$/.test(pattern)) return sorted;
    const star = pattern.indexOf("*");
    if (star === pattern.length - 1 && !WILDCARD.test(pattern.slice(0, star))) {
      const prefix = pattern.slice(0, star);
      const out: string[] = [];
      for (let i = lowerBound(prefix); i < sorted.length && sorted[i].startsWith(prefix); i++) {
        out.push(sorted[i]);
      }
      return out;
    }
    let found = scans.get(pattern);
    if (found === undefined) {
      const re = globToRegExp(pattern);
      found = sorted.filter((alias) => re.test(alias));
      scanned += sorted.length;
      scans.set(pattern, found);
    }
    return found;
  };

  return {
    matches,
    needsScan,
    matchesAny(pattern) {
      if (!WILDCARD.test(pattern)) return all.has(pattern);
      if (/^\*+$/.test(pattern)) return sorted.length > 0;
      const star = pattern.indexOf("*");
      if (star === pattern.length - 1 && !WILDCARD.test(pattern.slice(0, star))) {
        const prefix = pattern.slice(0, star);
        const i = lowerBound(prefix);
        return i < sorted.length && sorted[i].startsWith(prefix);
      }
      return matches(pattern).length > 0;
    },
    expand(patterns) {
      const key = patterns.join("\u0000");
      let set = lists.get(key);
      if (set === undefined) {
        set = patterns.some((p) => /^\*+$/.test(p)) ? all : new Set(patterns.flatMap((p) => matches(p)));
        lists.set(key, set);
      }
      return set;
    },
    size: sorted.length,
    get scanned() {
      return scanned;
    },
  };
}

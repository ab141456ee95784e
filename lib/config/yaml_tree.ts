/**
 * A parsed YAML document made safe to validate: one linear pass over its node tree that finds what would
 * crash or stall the later stages, indexes every path's line, and then the conversion to plain data.
 *
 * The YAML library's own `toJS` is not used, for three reasons: an alias that refers to a node containing it
 * (`a: &x [*x]`) becomes a cyclic object that every later walk recurses into until the stack overflows; its
 * alias and merge-key resolution scans the whole document once per alias, quadratic in a config of thousands
 * of `<<: *defaults`; and its only defence against an alias bomb (billion laughs) is a counter that rejects
 * plain configs with more than a thousand uses of one anchor, without saying where. Here aliases are resolved
 * as the walk meets them (an anchor is defined from where it is written until it is redefined, as in YAML),
 * a cycle is reported at the alias that closes it, and the number of values aliases add is counted exactly
 * (each node's expanded size is computed once, bottom-up) and bounded.
 *
 * Mapping keys must be plain values (a list as a key is a mistake), and a key given twice is reported here,
 * at its second line: the library's duplicate check compares each key with every earlier one, which is
 * quadratic in the size of a mapping. A key `__proto__` is reported too (reserved_names.ts): the schema would
 * drop the entry without a word.
 *
 * @module
 */
import { type Document, isAlias, isMap, isPair, isScalar, isSeq, type Node, type Scalar } from "yaml";
import { RESERVED_NAME, RESERVED_NAME_MESSAGE } from "./reserved_names.ts";

/** Deepest nesting accepted. Config files are about six levels deep; this leaves ample room. */
export const MAX_DEPTH = 64;
/**
 * Most values aliases may add to the document once expanded. A config that shares defaults between a few
 * thousand entries stays far below; an alias bomb (each level nine aliases of the one before) passes it at
 * its sixth level.
 */
export const MAX_ALIAS_EXPANSION = 250_000;

/** A problem of the document's structure, with the path and line of the node that causes it. */
export interface TreeIssue {
  readonly path: string;
  readonly line?: number;
  readonly message: string;
}

/** The outcome of {@linkcode inspectDocument}. */
export interface TreeIndex {
  readonly issues: readonly TreeIssue[];
  /** The 1-based line of each path that exists in the file as written (not through aliases), dot-joined. */
  readonly lines: ReadonlyMap<string, number>;
  /** The node each alias refers to. */
  readonly targets: ReadonlyMap<Node, Node>;
}

/** A collection's expanded size and height, summed up from its children as they finish. */
interface Extent {
  size: number;
  height: number;
}

type Frame =
  | {
    readonly enter: true;
    readonly node: Node;
    readonly path: string;
    readonly depth: number;
    readonly parent: Extent | null;
  }
  | { readonly enter: false; readonly node: Node; readonly own: Extent; readonly parent: Extent | null };

const join = (path: string, segment: string | number): string =>
  path === "" ? String(segment) : `${path}.${segment}`;

/** True for a `<<` merge key (with `merge: true` the library resolves a plain `<<` to a symbol). */
export function isMergeKey(key: unknown): boolean {
  if (!isScalar(key)) return false;
  const value = key.value;
  if (typeof value === "symbol") return value.description === "<<";
  return value === "<<" && (key.type === undefined || key.type === "PLAIN");
}

/** The string a scalar key stands for, the way the YAML library turns keys into object keys. */
export function keyString(key: Scalar): string {
  const value = key.value;
  if (value === null || value === undefined) return "";
  if (typeof value === "symbol") return value.description ?? "";
  return String(value);
}

/**
 * Walks the document once, iteratively (nesting never costs stack), in document order. Stops at the first
 * structural issue that would make the rest meaningless (a cycle, a bomb, too deep); reports all duplicate
 * keys, collection keys and bad merges.
 */
export function inspectDocument(doc: Document, lineAt: (offset: number) => number): TreeIndex {
  const issues: TreeIssue[] = [];
  const lines = new Map<string, number>();
  const targets = new Map<Node, Node>();
  const anchors = new Map<string, Node>();
  /** Expanded size and height of each closed anchored node (what an alias to it adds). */
  const extents = new Map<Node, Extent>();
  const finish = (node: Node, own: Extent, parent: Extent | null) => {
    if (hasAnchor(node)) extents.set(node, own);
    if (parent !== null) {
      parent.size += own.size;
      parent.height = Math.max(parent.height, 1 + own.height);
    }
  };
  const open = new Set<Node>();
  let added = 0;
  const lineOf = (node: unknown): number | undefined => {
    const range = (node as { range?: readonly number[] | null } | null)?.range;
    return range ? lineAt(range[0]) : undefined;
  };
  const report = (path: string, node: unknown, message: string) => {
    issues.push({ path, line: lineOf(node) ?? lines.get(path), message });
  };
  const resolve = (alias: Node & { source: string }): Node | undefined => {
    const target = anchors.get(alias.source);
    if (target !== undefined) targets.set(alias, target);
    return target;
  };

  const root = doc.contents as Node | null;
  if (root === null) return { issues, lines, targets };
  const stack: Frame[] = [{ enter: true, node: root, path: "", depth: 0, parent: null }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const node = frame.node;
    if (!frame.enter) {
      open.delete(node);
      finish(node, frame.own, frame.parent);
      continue;
    }
    const { path, depth } = frame;
    const line = lineOf(node);
    if (line !== undefined && !lines.has(path)) lines.set(path, line);
    if (depth > MAX_DEPTH) {
      report(path, node, `nested more than ${MAX_DEPTH} levels deep`);
      return { issues, lines, targets };
    }
    if (hasAnchor(node)) anchors.set(node.anchor, node);
    if (isAlias(node)) {
      const target = resolve(node);
      if (target === undefined) {
        report(path, node, `unknown alias *${node.source}: its anchor &${node.source} must come before it`);
        continue;
      }
      if (open.has(target)) {
        report(path, node, `alias *${node.source} refers to a value that contains it (a cycle)`);
        return { issues, lines, targets };
      }
      const { size, height } = extents.get(target) ?? { size: 1, height: 1 };
      finish(node, { size, height }, frame.parent);
      if (depth + height - 1 > MAX_DEPTH) {
        report(
          path,
          node,
          `nested more than ${MAX_DEPTH} levels deep once alias *${node.source} is expanded`,
        );
        return { issues, lines, targets };
      }
      added += size - 1;
      if (added > MAX_ALIAS_EXPANSION) {
        report(
          path,
          node,
          `aliases expand to more than ${MAX_ALIAS_EXPANSION} values (an alias bomb?); write the values out`,
        );
        return { issues, lines, targets };
      }
      continue;
    }
    if (isScalar(node)) {
      finish(node, { size: 1, height: 1 }, frame.parent);
      continue;
    }
    if (!isMap(node) && !isSeq(node)) continue;
    open.add(node);
    // A mapping's keys count as values too.
    const own: Extent = { size: 1 + (isMap(node) ? node.items.length : 0), height: 1 };
    stack.push({ enter: false, node, own, parent: frame.parent });
    const children: Frame[] = [];
    if (isSeq(node)) {
      node.items.forEach((item, i) => {
        if (isPair(item)) {
          report(join(path, i), item.key, "!!omap and !!pairs are not supported; use a mapping");
        } else if (item !== null && typeof item === "object") {
          children.push({
            enter: true,
            node: item as Node,
            path: join(path, i),
            depth: depth + 1,
            parent: own,
          });
        }
      });
    } else {
      const seen = new Set<string>();
      for (const pair of node.items) {
        let key: unknown = pair.key;
        if (hasAnchor(key)) anchors.set(key.anchor, key as Node);
        if (isAlias(key)) key = resolve(key);
        if (key !== null && key !== undefined && !isScalar(key)) {
          report(path, pair.key, "a mapping key must be a plain value, not a list or a mapping");
          continue;
        }
        const value = pair.value as Node | null;
        if (isMergeKey(key)) {
          const merged = checkMerge(value, (alias) => resolve(alias));
          if (merged !== null) report(path, pair.key, merged);
          if (value !== null) {
            children.push({ enter: true, node: value, path, depth: depth + 1, parent: own });
          }
          continue;
        }
        const name = key === null || key === undefined ? "" : keyString(key as Scalar);
        const at = join(path, name);
        if (seen.has(name)) {
          report(at, pair.key, `duplicate key "${name}"`);
          continue;
        }
        seen.add(name);
        if (name === RESERVED_NAME) report(at, pair.key, RESERVED_NAME_MESSAGE);
        const keyLine = lineOf(pair.key);
        if (keyLine !== undefined) lines.set(at, keyLine);
        if (value !== null) {
          children.push({ enter: true, node: value, path: at, depth: depth + 1, parent: own });
        }
      }
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
  return { issues, lines, targets };
}

/** Why a `<<` value cannot be merged, or null when it can: a mapping, an alias of one, or a list of those. */
function checkMerge(
  value: Node | null,
  resolve: (alias: Node & { source: string }) => Node | undefined,
): string | null {
  const isMapping = (node: unknown): boolean => {
    const target = isAlias(node) ? resolve(node) : node;
    return isMap(target);
  };
  if (isMapping(value)) return null;
  if (isSeq(value) && value.items.every(isMapping)) return null;
  return "<< (merge) needs a mapping, an alias of one, or a list of them";
}

/**
 * The document as plain data (objects, arrays, scalars), after {@linkcode inspectDocument} found no issue.
 * An alias shares its target's value, like the YAML library does, so the result is acyclic and its expanded
 * size is the bounded one counted there. Merge keys add the keys a mapping does not set itself; the first
 * merged mapping wins over later ones. A `__proto__` key (refused by {@linkcode inspectDocument}, but a caller
 * may convert anyway) is an ordinary own key, never the object's prototype.
 */
export function toPlainData(doc: Document, index: TreeIndex): unknown {
  const memo = new Map<Node, unknown>();
  const convert = (node: unknown): unknown => {
    if (node === null || node === undefined) return null;
    if (isAlias(node)) {
      const target = index.targets.get(node);
      return target === undefined ? null : convert(target);
    }
    if (memo.has(node as Node)) return memo.get(node as Node);
    let out: unknown;
    if (isScalar(node)) {
      out = typeof node.value === "symbol" ? node.value.description : node.value;
    } else if (isSeq(node)) {
      out = node.items.map(convert);
    } else if (isMap(node)) {
      const obj: Record<string, unknown> = {};
      for (const pair of node.items) {
        const key = isAlias(pair.key) ? index.targets.get(pair.key) : pair.key;
        if (isMergeKey(key)) {
          const value = pair.value as Node | null;
          const sources = isSeq(value) ? value.items : [value];
          for (const source of sources) {
            const merged = convert(source);
            if (typeof merged !== "object" || merged === null) continue;
            for (const [k, v] of Object.entries(merged)) if (!Object.hasOwn(obj, k)) set(obj, k, v);
          }
          continue;
        }
        set(obj, isScalar(key) ? keyString(key) : "", convert(pair.value));
      }
      out = obj;
    } else {
      out = null;
    }
    if (hasAnchor(node)) memo.set(node as Node, out);
    return out;
  };
  return convert(doc.contents);
}

function hasAnchor(node: unknown): node is { anchor: string } {
  const anchor = (node as { anchor?: unknown } | null)?.anchor;
  return typeof anchor === "string" && anchor !== "";
}

function set(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") {
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}

/**
 * What the config schema holds a value at a path to: the suggestions for an unknown key read the keys a
 * mapping may have, and interpolation asks whether a value takes only text, so that an unquoted `${VAR}` whose
 * value looks like a number stays the text it is where a string is expected (`owned_by: ${OWNER}`, OWNER=007).
 *
 * @module
 */
import { z } from "zod";
import type { PathSegment } from "./interpolate.ts";
import { configSchema } from "./schema.ts";

/**
 * The schemas a value at `path` is held to: every branch of a union, through `optional`, `default` and `pipe`
 * (a `transform`). A record's entries and a list's items are held to its value schema.
 */
export function schemasAt(path: readonly PathSegment[]): z.core.$ZodType[] {
  let level = unwrapped([configSchema]);
  for (const segment of path) {
    if (level.length === 0) break;
    level = unwrapped(level.flatMap((schema) => childAt(schema, segment)));
  }
  return level;
}

function unwrapped(schemas: readonly z.core.$ZodType[]): z.core.$ZodType[] {
  const out: z.core.$ZodType[] = [];
  const seen = new Set<z.core.$ZodType>();
  const stack = [...schemas];
  while (stack.length > 0) {
    const schema = stack.pop()!;
    if (seen.has(schema)) continue;
    seen.add(schema);
    if (schema instanceof z.ZodOptional || schema instanceof z.ZodDefault) stack.push(schema.unwrap());
    else if (schema instanceof z.ZodUnion) stack.push(...schema.options);
    else if (schema instanceof z.ZodPipe) stack.push(schema.in, schema.out);
    else out.push(schema);
  }
  return out;
}

function childAt(schema: z.core.$ZodType, segment: PathSegment): z.core.$ZodType[] {
  if (schema instanceof z.ZodObject) {
    const shape = schema.shape as Record<string, z.core.$ZodType>;
    return typeof segment === "string" && Object.hasOwn(shape, segment) ? [shape[segment]] : [];
  }
  if (schema instanceof z.ZodRecord) return [schema.valueType];
  if (schema instanceof z.ZodArray) return typeof segment === "number" ? [schema.element] : [];
  return [];
}

/**
 * True when the value at `path` takes text and never a number or a boolean: a string (a URL, a name), an enum
 * or a string literal, in every branch. A key that takes a number, a boolean or either form (`server.port`,
 * a duration such as `30s` or 30000, `server.workers`) is false, as is a path the schema does not know.
 */
export function takesOnlyText(path: readonly PathSegment[]): boolean {
  let text = false;
  for (const schema of schemasAt(path)) {
    const def = schema._zod.def;
    if (def.type === "transform") continue; // the output side of a pipe; its input is the schema that matters
    if (def.type === "string" || def.type === "enum" || def.type === "template_literal") text = true;
    else if (def.type === "literal" && "values" in def && Array.isArray(def.values)) {
      if (!def.values.every((v) => typeof v === "string")) return false;
      text = true;
    } else return false;
  }
  return text;
}

/**
 * What the fake vendors put in a forced tool call: a JSON value that matches the tool's input schema, made
 * deterministically (each string is the fake's answer text, numbers 42, booleans true, arrays one item, every
 * declared property present), so a test knows the document before it asks. Follows local `$ref`s
 * (`#/$defs/…`, `#/definitions/…`) and takes the first branch of `anyOf` / `oneOf`.
 *
 * @module
 */

type Schema = Record<string, unknown>;

const isSchema = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);

/** A value matching `schema` (within `root`, for `$ref`s), with `text` for every string. */
export function valueForSchema(schema: unknown, text: string, root: unknown = schema, depth = 0): unknown {
  if (!isSchema(schema) || depth > 20) return null;
  if (typeof schema.$ref === "string" && schema.$ref.startsWith("#/")) {
    const target = schema.$ref.slice(2).split("/").reduce<unknown>(
      (at, key) => (isSchema(at) ? at[key] : undefined),
      root,
    );
    return valueForSchema(target, text, root, depth + 1);
  }
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const branch = Array.isArray(schema.anyOf)
    ? schema.anyOf[0]
    : Array.isArray(schema.oneOf)
    ? schema.oneOf[0]
    : null;
  if (branch !== null) return valueForSchema(branch, text, root, depth + 1);
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const type = types.find((t) => t !== "null") ?? (isSchema(schema.properties) ? "object" : types[0]);
  switch (type) {
    case "object": {
      const out: Record<string, unknown> = {};
      const properties = isSchema(schema.properties) ? schema.properties : {};
      for (const [key, sub] of Object.entries(properties)) {
        out[key] = valueForSchema(sub, text, root, depth + 1);
      }
      return out;
    }
    case "array":
      return [valueForSchema(schema.items, text, root, depth + 1)];
    case "string":
      return text;
    case "integer":
    case "number":
      return 42;
    case "boolean":
      return true;
    default:
      return null;
  }
}

/** `json` cut into pieces of `size` characters, as a vendor streams a tool's input. */
export function fragments(json: string, size = 7): string[] {
  const out: string[] = [];
  for (let at = 0; at < json.length; at += size) out.push(json.slice(at, at + size));
  return out;
}

/**
 * Full JSON-schema validation against a named component schema of OpenAI's published OpenAPI spec
 * (`../shared/reference/openai-openapi.yaml`, beside the repository; it is never part of it).
 *
 * The spec is OpenAPI 3.1 (JSON Schema 2020-12) with two OpenAPI dialect keywords that a JSON-schema
 * validator does not know, so they are rewritten once before compiling with Ajv's 2020-12 build:
 *
 * - `discriminator` on an `anyOf`/`oneOf` of `$ref`s: OpenAPI says the tag property picks the one schema the
 *   value must match, so the union becomes "the tag is one of these" plus, per tag, an `if`/`then` to its
 *   schema. Same meaning, and an error names the one schema that failed instead of all 60 branches.
 * - `nullable: true` (a 3.0 keyword still in the file): `null` is added to the `type` (and the `enum`).
 *
 * `x-*` annotations, `example`, `format: unixtime` and the like are ignored (Ajv's strict mode off, formats
 * not validated). The spec is read and compiled at most once per test process; each schema is compiled on
 * first use.
 *
 * Without the spec a local run skips the checks ({@linkcode loadOpenApiSchemas} gives null), but CI (the `CI`
 * variable set) must have it and fails.
 *
 * @module
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020";
import { parse as parseYaml } from "yaml";

/** Where the spec is: `shared/reference/` beside the repository. */
export const SPEC_URL = new URL("../../../shared/reference/openai-openapi.yaml", import.meta.url);

/** The `$id` the spec's components are registered under, so `#/components/schemas/X` refs resolve. */
const SPEC_ID = "https://gateway.test/openai-openapi.json";

type Node = { [key: string]: unknown };

function isNode(value: unknown): value is Node {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The component a local `$ref` names, or undefined. */
function refTarget(schemas: Node, ref: unknown): Node | undefined {
  if (typeof ref !== "string" || !ref.startsWith("#/components/schemas/")) return undefined;
  const target = schemas[ref.slice("#/components/schemas/".length)];
  return isNode(target) ? target : undefined;
}

/** The tag values a branch of a discriminated union fixes for `prop` (through `$ref` and `allOf`). */
function tagsOf(schemas: Node, branch: Node, prop: string, depth = 0): string[] {
  if (depth > 8) return [];
  const target = refTarget(schemas, branch.$ref);
  if (target) return tagsOf(schemas, target, prop, depth + 1);
  const own = isNode(branch.properties) ? branch.properties[prop] : undefined;
  if (isNode(own)) {
    if (typeof own.const === "string") return [own.const];
    if (Array.isArray(own.enum)) return own.enum.filter((v): v is string => typeof v === "string");
  }
  if (Array.isArray(branch.allOf)) {
    return branch.allOf.flatMap((part) => isNode(part) ? tagsOf(schemas, part, prop, depth + 1) : []);
  }
  return [];
}

/** One schema node with OpenAPI's dialect rewritten to plain 2020-12 (children are done by the caller). */
function rewriteNode(schemas: Node, node: Node): Node {
  let out = node;
  if (out.nullable === true) {
    const { nullable: _, ...rest } = out;
    out = rest;
    if (typeof out.type === "string") out = { ...out, type: [out.type, "null"] };
    else if (Array.isArray(out.type) && !out.type.includes("null")) {
      out = { ...out, type: [...out.type, "null"] };
    }
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out = { ...out, enum: [...out.enum, null] };
  }
  const disc = out.discriminator;
  const union = out.oneOf ?? out.anyOf;
  if (isNode(disc) && typeof disc.propertyName === "string" && Array.isArray(union)) {
    const prop = disc.propertyName;
    const cases: { tag: string; branch: Node }[] = [];
    for (const branch of union) {
      if (!isNode(branch)) return out;
      const tags = tagsOf(schemas, branch, prop);
      if (tags.length === 0) return out; // not a clean tagged union: leave it as it is
      for (const tag of tags) cases.push({ tag, branch });
    }
    const { discriminator: _d, oneOf: _o, anyOf: _a, ...rest } = out;
    // A tag several branches share (ItemResource's `message`: an input or an output message) takes any of them.
    const byTag = new Map<string, Node[]>();
    for (const { tag, branch } of cases) byTag.set(tag, [...byTag.get(tag) ?? [], branch]);
    const dispatch = [...byTag].map(([tag, branches]) => ({
      if: { properties: { [prop]: { const: tag } }, required: [prop] },
      then: branches.length === 1 ? branches[0] : { anyOf: branches },
    }));
    out = {
      ...rest,
      type: "object",
      required: [prop],
      properties: { [prop]: { enum: [...new Set(cases.map((c) => c.tag))] } },
      allOf: [...(Array.isArray(rest.allOf) ? rest.allOf : []), ...dispatch],
    };
  }
  return out;
}

/** The whole tree rewritten, children first. */
function rewrite(schemas: Node, value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => rewrite(schemas, v));
  if (!isNode(value)) return value;
  const children: Node = {};
  for (const [key, child] of Object.entries(value)) children[key] = rewrite(schemas, child);
  return rewriteNode(schemas, children);
}

/** Validates values against the spec's component schemas. */
export class OpenApiSchemas {
  readonly #ajv: Ajv2020;
  readonly #compiled = new Map<string, ValidateFunction>();
  readonly names: ReadonlySet<string>;

  constructor(spec: Node) {
    const components = isNode(spec.components) ? spec.components : {};
    const schemas = isNode(components.schemas) ? components.schemas : {};
    this.names = new Set(Object.keys(schemas));
    const rewritten = rewrite(schemas, schemas) as Node;
    this.#ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    this.#ajv.addSchema({ $id: SPEC_ID, components: { schemas: rewritten } });
  }

  #validator(name: string): ValidateFunction {
    let fn = this.#compiled.get(name);
    if (fn === undefined) {
      if (!this.names.has(name)) throw new Error(`no component schema '${name}' in the OpenAPI spec`);
      fn = this.#ajv.getSchema(`${SPEC_ID}#/components/schemas/${name}`);
      if (fn === undefined) throw new Error(`cannot compile '${name}'`);
      this.#compiled.set(name, fn);
    }
    return fn;
  }

  /** The violations of `value` against the component `name`, each as "path: message"; empty when valid. */
  errors(name: string, value: unknown): string[] {
    const fn = this.#validator(name);
    if (fn(value)) return [];
    return (fn.errors ?? []).filter(relevant).map((e) => `${e.instancePath || "/"}: ${describe(e)}`);
  }

  /** Throws, naming `what` and every violation, unless `value` validates against the component `name`. */
  assert(name: string, value: unknown, what = name): void {
    const errors = this.errors(name, value);
    if (errors.length > 0) {
      throw new Error(
        `${what} does not validate against ${name}:\n  ${[...new Set(errors)].slice(0, 20).join("\n  ")}\n` +
          `value: ${JSON.stringify(value).slice(0, 2000)}`,
      );
    }
  }
}

/** The `if` that only reports "must match then" adds nothing to the error below it. */
function relevant(error: ErrorObject): boolean {
  return error.keyword !== "if";
}

function describe(error: ErrorObject): string {
  const params = JSON.stringify(error.params);
  return `${error.message ?? error.keyword} ${params === "{}" ? "" : params} (${error.schemaPath})`.trim();
}

/**
 * The schemas of the spec at `url`; null when it is absent and `ci` is unset. With `ci` set an absent spec is
 * an error: CI always has it, and a check that silently skipped would prove nothing.
 */
export async function readOpenApiSchemas(url: URL, ci: string | undefined): Promise<OpenApiSchemas | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(url);
  } catch (err) {
    if (ci) throw new Error(`CI needs the OpenAPI spec at ${url.pathname}: ${err}`);
    console.warn(`OpenAPI spec not found at ${url.pathname}: schema checks skipped`);
    return null;
  }
  return new OpenApiSchemas(parseYaml(text, { maxAliasCount: -1 }) as Node);
}

let loaded: Promise<OpenApiSchemas | null> | undefined;

/** The published spec's schemas ({@linkcode SPEC_URL}), read once per process ({@linkcode readOpenApiSchemas}). */
export function loadOpenApiSchemas(): Promise<OpenApiSchemas | null> {
  loaded ??= readOpenApiSchemas(SPEC_URL, Deno.env.get("CI"));
  return loaded;
}

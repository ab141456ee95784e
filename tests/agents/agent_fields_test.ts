/**
 * The tables in docs/agents.md of what each coding agent sends and what the gateway does with it, held against
 * the code: for every top-level field of a request recorded from the real agent (tests/agents/recorded/, long
 * texts elided), what a native target gets (the body as sent, the target's model in it) and what a translated
 * target gets (translated, dropped and named in `x-gateway-dropped`, or refused), as the client API's parser
 * and native body builder decide it. A change to either that the docs do not follow fails here.
 */
import assert from "node:assert/strict";
import { nativeMessagesBody } from "../../lib/api/messages/native.ts";
import { parseMessagesRequest } from "../../lib/api/messages/request.ts";
import { nativeRequestBody } from "../../lib/api/responses/native.ts";
import { parseResponsesRequest } from "../../lib/api/responses/request.ts";
import type { Tolerance } from "../../lib/http/tolerance.ts";

type Json = Record<string, unknown>;

interface Recorded {
  agent: string;
  path: string;
  headers: Record<string, string>;
  body: Json;
}

/** The recordings and the heading of their table in docs/agents.md. */
const TABLES: [file: string, heading: string][] = [
  ["claude_code.json", "Fields Claude Code sends (`POST /v1/messages`)"],
  ["codex.json", "Fields Codex sends (`POST /v1/responses`)"],
  ["opencode_anthropic.json", "Fields opencode sends to an Anthropic alias (`POST /v1/messages`)"],
];

function recorded(file: string): Recorded {
  return JSON.parse(Deno.readTextFileSync(new URL(`./recorded/${file}`, import.meta.url)));
}

/** What a translated target gets of `field`, from the request's tolerance. */
function translated(field: string, tolerance: Tolerance): string {
  const under = (path: string) =>
    path === field || path.startsWith(`${field}.`) || path.startsWith(`${field}[`);
  if (tolerance.refusal !== null && under(String(tolerance.refusal.param))) return "refused (400)";
  const paths = [...tolerance.native, ...tolerance.dropped].filter(under);
  if (paths.length === 0) return "translated";
  if (paths.includes(field)) return "dropped";
  return `translated; dropped: ${paths.map((p) => `\`${p}\``).join(", ")}`;
}

/** What a native target gets of `field`: the body as sent, but for the model. */
function native(field: string, client: Json, sent: Json): string {
  if (field === "model") return "the target's model";
  assert.deepEqual(sent[field], client[field], `a native target gets ${field} as sent`);
  return "passed as sent";
}

/** The rows the code gives for one recording: `field | native | translated`. */
function rowsOf(rec: Recorded): string[][] {
  const body = rec.body;
  let tolerance: Tolerance;
  let sent: Json;
  if (rec.path === "/v1/messages") {
    tolerance = parseMessagesRequest(body, new Headers(rec.headers)).tolerance;
    sent = nativeMessagesBody(body, { model: "target-model", maxTokens: null });
  } else {
    const parsed = parseResponsesRequest(body);
    tolerance = parsed.tolerance;
    sent = nativeRequestBody(body, { model: "target-model", maxOutputTokens: null, input: parsed.input });
  }
  return Object.keys(body).sort().map((
    field,
  ) => [`\`${field}\``, native(field, body, sent), translated(field, tolerance)]);
}

/** The rows of the table under `heading` in docs/agents.md. */
function docRows(doc: string, heading: string): string[][] {
  const at = doc.indexOf(`### ${heading}`);
  assert.ok(at >= 0, `docs/agents.md has a table "${heading}"`);
  const lines = doc.slice(at).split("\n").slice(1);
  const table = lines.slice(lines.findIndex((l) => l.startsWith("|")));
  const rows = table.slice(0, table.findIndex((l) => !l.startsWith("|")) >>> 0);
  return rows.slice(2).map((line) => line.split("|").slice(1, -1).map((cell) => cell.trim()));
}

Deno.test("agent fields: docs/agents.md's tables say what the code does with every field the agents send", () => {
  const doc = Deno.readTextFileSync(new URL("../../docs/agents.md", import.meta.url));
  for (const [file, heading] of TABLES) {
    assert.deepEqual(docRows(doc, heading), rowsOf(recorded(file)), heading);
  }
});

Deno.test("agent fields: nothing an agent sends is refused on either kind of target", () => {
  for (const [file] of TABLES) {
    for (const [field, , onTranslated] of rowsOf(recorded(file))) {
      assert.notEqual(onTranslated, "refused (400)", `${file}: ${field}`);
    }
  }
});

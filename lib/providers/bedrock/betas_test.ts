/**
 * The built-in list of the betas Bedrock takes: well-formed names, each once (an entry's own list is checked by
 * the config schema instead), and the list docs/providers.md shows operators, so they know what an
 * `anthropic_betas` of their own replaces.
 */
import assert from "node:assert/strict";
import { providerSchema } from "../../config/provider_schema.ts";
import type { BedrockProviderConfig } from "../../config/schema.ts";
import { BEDROCK_ANTHROPIC_BETAS, bedrockBetas } from "./betas.ts";

Deno.test("bedrock betas: the built-in list is what an entry could write, each name once", () => {
  assert.equal(new Set(BEDROCK_ANTHROPIC_BETAS).size, BEDROCK_ANTHROPIC_BETAS.length);
  const entry = { type: "bedrock", region: "us-east-1", anthropic_betas: BEDROCK_ANTHROPIC_BETAS };
  assert.equal(providerSchema.safeParse(entry).success, true);
});

Deno.test("bedrock betas: docs/providers.md lists the built-in betas as the code has them", () => {
  const docs = Deno.readTextFileSync(new URL("../../../docs/providers.md", import.meta.url));
  const paragraph = docs.slice(docs.indexOf("The built-in list"), docs.indexOf("What Bedrock takes differs"));
  const listed = [...paragraph.matchAll(/`([a-z0-9-]+-\d{4}-\d{2}-\d{2})`/g)].map((m) => m[1]);
  assert.deepEqual(listed, [...BEDROCK_ANTHROPIC_BETAS]);
});

Deno.test("bedrock betas: Claude Code's tool-search beta goes to Bedrock under Bedrock's name; the rest as sent", () => {
  const entry = { type: "bedrock", region: "us-east-1" } as BedrockProviderConfig;
  const sent =
    "claude-code-20250219,advanced-tool-use-2025-11-20,effort-2025-11-24,tool-search-tool-2025-10-19";
  assert.deepEqual(bedrockBetas(entry, sent), {
    forwarded: ["tool-search-tool-2025-10-19", "effort-2025-11-24"],
    dropped: ["claude-code-20250219"],
  });
  // An entry whose own list leaves tool search out drops it under the name the client sent.
  const own = { ...entry, anthropic_betas: ["effort-2025-11-24"] };
  assert.deepEqual(bedrockBetas(own, sent).dropped, [
    "claude-code-20250219",
    "advanced-tool-use-2025-11-20",
    "tool-search-tool-2025-10-19",
  ]);
});

Deno.test("bedrock betas: the body's anthropic_beta is held to the entry's list, merged after the header's", () => {
  const own = {
    type: "bedrock",
    region: "us-east-1",
    anthropic_betas: ["interleaved-thinking-2025-05-14", "effort-2025-11-24"],
  } as BedrockProviderConfig;
  const body = ["effort-2025-11-24", "not-allowed-beta", " interleaved-thinking-2025-05-14 ", "x,y", ""];
  assert.deepEqual(bedrockBetas(own, "interleaved-thinking-2025-05-14,claude-code-20250219", body), {
    forwarded: ["interleaved-thinking-2025-05-14", "effort-2025-11-24"],
    dropped: ["claude-code-20250219", "not-allowed-beta", "x,y"],
  });
  // A string holds comma-separated names, as the header does; an entry that is not a string is never sent.
  assert.deepEqual(bedrockBetas(own, null, "effort-2025-11-24, nope"), {
    forwarded: ["effort-2025-11-24"],
    dropped: ["nope"],
  });
  assert.deepEqual(bedrockBetas(own, null, ["effort-2025-11-24", 7, { a: 1 }, 7]), {
    forwarded: ["effort-2025-11-24"],
    dropped: ["7", '{"a":1}'],
  });
  assert.deepEqual(bedrockBetas(own, null, true), { forwarded: [], dropped: ["true"] });
  assert.deepEqual(bedrockBetas(own, null, null), { forwarded: [], dropped: [] });
});

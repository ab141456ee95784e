import assert from "node:assert/strict";
import {
  compactionItem,
  gatewaySummary,
  isUpstreamCompaction,
  upstreamCompactionPaths,
} from "./compaction_item.ts";

const UPSTREAM = { id: "cmp_up", type: "compaction", encrypted_content: "gAAAAB-opaque" };

Deno.test("compaction item: the gateway's own is read back, an upstream's is told apart", () => {
  const own = compactionItem("cmp_1", "The user wants a booking page.");
  assert.equal(gatewaySummary(own), "The user wants a booking page.");
  assert.equal(isUpstreamCompaction(own), false);
  assert.equal(gatewaySummary(UPSTREAM), null);
  assert.equal(isUpstreamCompaction(UPSTREAM), true);
  assert.equal(isUpstreamCompaction({ type: "message", role: "user", content: "hi" }), false);
});

Deno.test("compaction item: every upstream compaction of the input is named, the gateway's are not", () => {
  const input = [
    UPSTREAM,
    { role: "user", content: "hi" },
    compactionItem("cmp_2", "summary"),
    { ...UPSTREAM, id: "cmp_up2" },
  ];
  assert.deepEqual(upstreamCompactionPaths(input), ["input[0].type", "input[3].type"]);
});

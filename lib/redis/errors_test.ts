import assert from "node:assert/strict";
import { CLUSTER_NOT_SUPPORTED, redisErrorText } from "./errors.ts";

Deno.test("redis errors: a cluster node's replies say Redis Cluster is not supported; others are as they came", () => {
  for (
    const reply of ["MOVED 2716 10.0.0.7:6379", "ASK 2716 10.0.0.7:6379", "CLUSTERDOWN Hash slot not served"]
  ) {
    assert.equal(redisErrorText(new Error(reply)), `${reply} (${CLUSTER_NOT_SUPPORTED})`);
  }
  assert.match(CLUSTER_NOT_SUPPORTED, /Redis Cluster is not supported/);
  assert.equal(redisErrorText(new Error("Command timed out")), "Command timed out");
  assert.equal(redisErrorText("NOSCRIPT No matching script"), "NOSCRIPT No matching script");
  assert.equal(redisErrorText(new Error("ERR unknown command 'MOVEDX'")), "ERR unknown command 'MOVEDX'");
});

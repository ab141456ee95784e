import assert from "node:assert/strict";
import { lineWriter } from "./protocol.ts";

Deno.test("lineWriter: a burst of log lines is written whole lines at a time, each write within 4096 bytes", () => {
  const writes: string[] = [];
  const write = lineWriter((t) => writes.push(t));
  const lines = Array.from({ length: 200 }, (_, i) => `{"n":${i},"pad":"${"x".repeat(i % 90)}"}\n`);
  write(lines.join(""));
  assert.ok(writes.length > 1);
  assert.equal(writes.join(""), lines.join(""));
  for (const w of writes) {
    assert.ok(new TextEncoder().encode(w).byteLength <= 4096, `${w.length}`);
    assert.ok(w.endsWith("\n"), "ends at a line end");
  }
  // A short burst is one write; a single line longer than the bound is written as it is.
  writes.length = 0;
  write("a\nb\n");
  assert.deepEqual(writes, ["a\nb\n"]);
  writes.length = 0;
  const long = `${"y".repeat(10_000)}\n`;
  write(long + "z\n");
  assert.deepEqual(writes, [long, "z\n"]);
});

import assert from "node:assert/strict";
import { droppedPaths, newTolerance } from "./tolerance.ts";

Deno.test("dropped paths: client text shown plain and bounded, so the x-gateway-dropped header always takes it", () => {
  const tolerance = newTolerance();
  tolerance.dropped.push(
    `x_${"a".repeat(120)}`,
    "naïve field",
    ...Array.from({ length: 40 }, (_, i) => `f${i}`),
  );
  const paths = droppedPaths(tolerance);
  assert.equal(paths.length, 33, "32 paths and a mark for the rest");
  assert.equal(paths[0].length, 96);
  assert.ok(paths[0].endsWith("..."), "a long path is cut");
  assert.equal(paths[1], "na?ve?field");
  assert.equal(paths.at(-1), "...");
  // A header value takes bytes up to 0xFF only: setting it after routing must not throw.
  const headers = new Headers();
  headers.set("x-gateway-dropped", paths.join(","));
  assert.equal(headers.get("x-gateway-dropped"), paths.join(","));
});

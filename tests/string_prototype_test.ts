/**
 * Every string method call of the process is only as fast as `String.prototype`'s shape: once it is in V8's
 * dictionary mode (which an object made to inherit from it causes, as ioredis's `class VerbatimString extends
 * String` does when it loads), each call takes a full lookup, and the scrubber's scan of each access-log line,
 * the SSE parser and the rest ran several times slower. `lib/redis/connection.ts` turns it back to fast mode;
 * this holds the whole server's import graph to that. A child process, because V8's own check needs
 * `--allow-natives-syntax`.
 *
 * @module
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);

/** What `%HasFastProperties(String.prototype)` says after `code` ran in a fresh Deno. */
async function fastAfter(code: string): Promise<boolean> {
  const script = `${code}
const fast = new Function("o", "return %HasFastProperties(o)");
console.log(JSON.stringify(fast(String.prototype)));`;
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      "--v8-flags=--allow-natives-syntax",
      "--config",
      new URL("deno.json", ROOT).pathname,
      script,
    ],
    cwd: ROOT.pathname,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(output.stdout).trim();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  return JSON.parse(stdout.split("\n").at(-1) ?? "");
}

Deno.test("String.prototype: the probe sees a subclass of String make it slow", async () => {
  assert.equal(await fastAfter("class Wrapped extends String {}; void Wrapped;"), false);
});

Deno.test("String.prototype: still fast once the server's modules (ioredis among them) are loaded", async () => {
  // ioredis is loaded only when Redis is configured, so the Redis modules are imported here by name.
  const graph = [
    "./lib/serve.ts",
    "./lib/cli.ts",
    "./lib/policy/redis_counter_store.ts",
    "./lib/cache/redis_store.ts",
  ];
  assert.equal(await fastAfter(graph.map((m) => `await import("${m}");`).join(" ")), true);
});

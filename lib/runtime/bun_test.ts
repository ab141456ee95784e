import assert from "node:assert/strict";
import { bunGlobal, bunRuntime, type BunServer, shutdownServer, writeAllSync } from "./bun.ts";
import { currentRuntime } from "./mod.ts";

function errno(code: string): Error {
  return Object.assign(new Error(code), { code });
}

Deno.test("writeAllSync: partial writes are continued until every byte is out", () => {
  const written: number[] = [];
  writeAllSync(1, "hello, world", (_fd, bytes) => {
    const n = Math.min(5, bytes.byteLength);
    written.push(...bytes.subarray(0, n));
    return n;
  });
  assert.equal(new TextDecoder().decode(new Uint8Array(written)), "hello, world");
});

Deno.test("writeAllSync: EAGAIN is retried, EPIPE drops the text instead of throwing", () => {
  let calls = 0;
  const out: string[] = [];
  writeAllSync(1, "line\n", (_fd, bytes) => {
    if (calls++ < 2) throw errno("EAGAIN");
    out.push(new TextDecoder().decode(bytes));
    return bytes.byteLength;
  });
  assert.deepEqual(out, ["line\n"]);
  assert.equal(calls, 3);

  let pipeCalls = 0;
  writeAllSync(1, "nobody reads this", () => {
    pipeCalls++;
    throw errno("EPIPE");
  });
  assert.equal(pipeCalls, 1);
});

/** A server whose graceful stop resolves after `drainMs` (never, if null). */
function fakeServer(drainMs: number | null) {
  const calls: boolean[] = [];
  const server: BunServer = {
    hostname: "127.0.0.1",
    port: 1,
    stop(force = false) {
      calls.push(force);
      if (force || drainMs === null) return force ? Promise.resolve() : new Promise(() => {});
      return new Promise((r) => setTimeout(r, drainMs));
    },
  };
  return { server, calls };
}

Deno.test("shutdownServer: a server that drains in time is never force-closed", async () => {
  const { server, calls } = fakeServer(10);
  await shutdownServer(server, 1_000);
  assert.deepEqual(calls, [false]);
});

Deno.test("shutdownServer: after the grace period the open connections are closed", async () => {
  const { server, calls } = fakeServer(null);
  const started = performance.now();
  await shutdownServer(server, 50);
  assert.deepEqual(calls, [false, true]);
  assert.ok(performance.now() - started < 1_000);
});

Deno.test("runtime edges: Deno picks the Deno edge; the Bun edge loads without Bun", async () => {
  assert.equal((await currentRuntime()).name, "deno");
  assert.equal(bunGlobal(), undefined);
  assert.equal(bunRuntime.name, "bun");
  assert.equal(bunRuntime.version, "unknown");
});

/**
 * Issue 26, acceptance 3, measured: a client inventing 100,000 end users against `max_users: 10000` leaves
 * the gateway's memory where 10,000 users put it. The burst runs in a child process with V8's `gc` exposed,
 * so each figure is the heap after a full collection (what is retained), printed and held by the test.
 */
import assert from "node:assert/strict";

Deno.test("end users: memory measured after 10,000 and 100,000 invented users with max_users 10,000", async () => {
  const probe = new URL("./end_user_memory_probe.ts", import.meta.url);
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--v8-flags=--expose-gc",
      "--no-lock",
      probe.pathname,
      "10000",
      "10000",
      "100000",
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  const steps: { users: number; heap: number; tracked: number; counters: number }[] = JSON.parse(
    new TextDecoder().decode(stdout),
  );
  const [start, tenK, hundredK] = steps;
  const mib = (n: number) => (n / 2 ** 20).toFixed(2);
  console.log(
    `heap retained: start ${mib(start.heap)} MiB, 10k users +${mib(tenK.heap - start.heap)} MiB, ` +
      `100k users +${
        mib(hundredK.heap - start.heap)
      } MiB (tracked ${hundredK.tracked}, counters ${hundredK.counters})`,
  );
  assert.equal(tenK.tracked, 10_000);
  assert.equal(hundredK.tracked, 10_000, "never more users tracked than max_users");
  assert.ok(
    hundredK.counters <= 2 * 10_000,
    `two counters (rpm, tpm) per tracked user at most: ${hundredK.counters}`,
  );
  // Ten times the users, the same retained memory (within a slack for the collector's own bookkeeping).
  const perTenK = tenK.heap - start.heap;
  assert.ok(perTenK > 0);
  assert.ok(
    hundredK.heap - start.heap < perTenK * 1.5 + 2 ** 20,
    `100k users retain ${mib(hundredK.heap - start.heap)} MiB vs ${mib(perTenK)} MiB for 10k`,
  );
});

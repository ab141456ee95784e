/**
 * Run by end_user_memory_test.ts in a process of its own with `--v8-flags=--expose-gc`: sends distinct end
 * users through a policy engine with `max_users` and prints, as JSON, the heap after a full collection at the
 * start and after each step, so the test measures what is retained rather than what is not yet collected.
 */
import { createMemoryCounterStore } from "../../lib/policy/memory_counter_store.ts";
import { createPolicyEngine } from "../../lib/policy/engine.ts";
import { model, token } from "../../lib/policy/engine_test_helpers.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --v8-flags=--expose-gc");
const maxUsers = Number(Deno.args[0]);
const steps = Deno.args.slice(1).map(Number);

const store = createMemoryCounterStore();
const engine = createPolicyEngine(store);
const identity = token();
const alias = model({ endUserLimits: { rpm: 5, tpm: 100_000, max_users: maxUsers } });

function heap(): number {
  gc!();
  gc!();
  return Deno.memoryUsage().heapUsed;
}

const out: { users: number; heap: number; tracked: number; counters: number }[] = [];
out.push({ users: 0, heap: heap(), tracked: 0, counters: store.size() });
let sent = 0;
for (const step of steps) {
  for (; sent < step; sent++) {
    const admission = await engine.admit({
      identity,
      endpoint: "chat",
      model: alias,
      body: { model: "chat-default", messages: [], user: `invented-user-${sent}-${"x".repeat(sent % 40)}` },
      estimatedTokens: 10,
    });
    await admission.settle({ tokens: 10, cost: 0 });
  }
  out.push({ users: sent, heap: heap(), tracked: engine.endUsers!.size(), counters: store.size() });
}
console.log(JSON.stringify(out));

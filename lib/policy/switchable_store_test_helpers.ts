/**
 * For the `fail_open` / `fail_closed` tests: a shared counter store over an inner one (in memory) that can be
 * switched off, every call then failing as a Redis call that timed out.
 */
import type { CounterStore } from "./counter_store.ts";

/** Whether the store is off, and how many calls it was asked (answered or not). */
export interface SwitchState {
  down: boolean;
  calls?: number;
}

/** `inner` behind `state`'s switch; `guard` runs any other call (a test's own `settle`) behind it too. */
export function switchableStore(inner: CounterStore, state: SwitchState): {
  store: CounterStore;
  guard: <T>(op: () => Promise<T>) => Promise<T>;
} {
  const guard = <T>(op: () => Promise<T>): Promise<T> => {
    if (state.calls !== undefined) state.calls++;
    return state.down ? Promise.reject(new Error("Command timed out")) : op();
  };
  const store: CounterStore = {
    reserve: (c) => guard(() => inner.reserve(c)),
    adjust: (b, d) => guard(() => inner.adjust(b, d)),
    release: (k) => guard(() => inner.release(k)),
    periodGet: (k, p) => guard(() => inner.periodGet(k, p)),
    periodAdd: (k, p, a, e) => guard(() => inner.periodAdd(k, p, a, e)),
    periodRaise: (k, p, v, e) => guard(() => inner.periodRaise(k, p, v, e)),
    peek: (x) => guard(() => inner.peek!(x)),
  };
  return { store, guard };
}

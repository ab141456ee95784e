/**
 * Starting several fake upstreams for one test: each is started by name, and one `stop()` stops them all, so
 * the set can be handed to `withFakeGateway` as a single fake.
 *
 * @module
 */
import type { Stoppable } from "./gateway.ts";

/** The fakes by name, and `stop()`, which stops every one of them. */
export type Fakes<T extends { [K in keyof T]: Stoppable }> = T & Stoppable;

/** Starts the fake of each starter (in the order given) and returns them by the starter's name. */
export function startFakes<T extends { [K in keyof T]: Stoppable }>(
  starters: { [K in keyof T]: () => T[K] },
): Fakes<T> {
  const names = Object.keys(starters) as (keyof T)[];
  const fakes = {} as T;
  for (const name of names) fakes[name] = starters[name]();
  return {
    ...fakes,
    stop: async () => {
      await Promise.all(names.map((name) => fakes[name].stop()));
    },
  };
}

import assert from "node:assert/strict";
import { holdReloadSignal } from "./held_reload_signal.ts";

/** A runtime whose SIGHUP the test sends. */
function fakeRuntime() {
  const handlers: (() => void)[] = [];
  return {
    onReloadSignal: (handler: () => void) => handlers.push(handler),
    hup: () => handlers.forEach((h) => h()),
  };
}

Deno.test("held reload signal: the handler is installed at once, a signal during the start reloads once after it", () => {
  const runtime = fakeRuntime();
  const held = holdReloadSignal(runtime);
  let reloads = 0;
  runtime.hup();
  held.listen(() => reloads++);
  runtime.hup();
  assert.equal(reloads, 0, "held while starting");
  assert.equal(held.held(), true);
  held.open();
  assert.equal(reloads, 1, "the signals of the start make one reload");
  assert.equal(held.held(), false);
  runtime.hup();
  assert.equal(reloads, 2, "after the start, each signal reloads");
});

Deno.test("held reload signal: opened before the reloader listens, a held signal reaches it when it does", () => {
  const runtime = fakeRuntime();
  const held = holdReloadSignal(runtime);
  let reloads = 0;
  runtime.hup();
  held.open();
  held.listen(() => reloads++);
  assert.equal(reloads, 1);
  held.open();
  assert.equal(reloads, 1);
});

import assert from "node:assert/strict";
import { changeLines } from "./format.ts";

Deno.test("changeLines shows an update as from → to and other changes as they are", () => {
  assert.deepEqual(
    changeLines({ limits: { from: null, to: { rpm: 60 } }, disabled: { from: false, to: true } }),
    [
      'limits: none → {"rpm":60}',
      "disabled: false → true",
    ],
  );
  assert.deepEqual(changeLines({ grace_ms: 60000, models: ["chat-*"] }), [
    "grace_ms: 60000",
    'models: ["chat-*"]',
  ]);
  assert.deepEqual(changeLines({}), []);
});

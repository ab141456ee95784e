import assert from "node:assert/strict";
import { parseScrubbed } from "./scrub_json.ts";

const scrub = (text: string) => text.replaceAll("sk-secret", "***");

Deno.test("scrub json: keys and values at any depth are scrubbed, order and other types kept", () => {
  const text = JSON.stringify({
    a: "bad sk-secret",
    "sk-secret": { "x-sk-secret": ["sk-secret", 1, true, null], n: 2 },
    z: [{ "sk-secret": "v" }],
  });
  const out = parseScrubbed(text, scrub);
  assert.equal(
    JSON.stringify(out),
    '{"a":"bad ***","***":{"x-***":["***",1,true,null],"n":2},"z":[{"***":"v"}]}',
  );
});

Deno.test("scrub json: keys that scrub alike keep the later value; a __proto__ key stays plain data", () => {
  const colliding = parseScrubbed('{"sk-secret":1,"***":2}', scrub) as Record<string, unknown>;
  assert.deepEqual(colliding, { "***": 2 });
  const proto = parseScrubbed('{"__proto__":{"polluted":"sk-secret"},"sk-secret":0}', scrub) as object;
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
  assert.deepEqual(Object.keys(proto), ["__proto__", "***"]);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

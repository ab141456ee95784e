import assert from "node:assert/strict";
import { encodedForms, foldCode, foldText } from "./forms.ts";
import { createScrubber, MASK } from "./scrubber.ts";

const KEY = "sk-proj-Xq7vB2mNp4Lk9TzR8wYc3FhJ6dGs1AeU";
/** A secret whose base64 holds `+` and `/`, so its base64url form differs. */
const ODD = "pw>>>???~~~Xq7vB2mN";

/** base64url of a byte string, unpadded, as JWTs and URL-safe encoders write it. */
function base64url(text: string): string {
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

Deno.test("forms: the encoded forms of a secret are in its base64 after any prefix, in both alphabets", () => {
  assert.ok(btoa(ODD).includes("+") || btoa(ODD).includes("/"), btoa(ODD));
  for (const secret of [KEY, ODD]) {
    const forms = encodedForms(secret);
    for (const prefix of ["", "Bearer ", "user:", ":", "ab", "a"]) {
      for (const encoded of [btoa(`${prefix}${secret}`), base64url(`${prefix}${secret}`)]) {
        assert.ok(forms.some((form) => encoded.includes(form)), `${prefix} ${encoded}`);
      }
    }
    // Each form is the secret's own characters: none longer than its base64, none empty.
    for (const form of forms) {
      assert.ok(form.length >= 4 && form.length <= Math.ceil(secret.length * 4 / 3), form);
    }
  }
});

Deno.test("forms: case folding is ASCII only, the same for a character and a text", () => {
  assert.equal(foldCode(65), 97);
  assert.equal(foldCode(97), 97);
  assert.equal(foldCode("[".charCodeAt(0)), "[".charCodeAt(0));
  assert.equal(foldCode("É".charCodeAt(0)), "É".charCodeAt(0));
  assert.equal(foldText("Sk-PROJ-Éx"), "sk-proj-Éx");
  assert.equal(foldText("already lower"), "already lower");
});

Deno.test("scrubber: a key quoted as base64 of itself, of `Bearer <key>` or of basic auth is masked whole", () => {
  for (const secret of [KEY, ODD]) {
    const s = createScrubber([secret]);
    for (
      const encoded of [
        btoa(secret),
        btoa(`Bearer ${secret}`),
        btoa(`gateway:${secret}`),
        btoa(`:${secret}`),
        base64url(secret),
        base64url(`Bearer ${secret}`),
      ]
    ) {
      const text = `Invalid header value: ${encoded}.`;
      assert.equal(s.test(text), true, text);
      const scrubbed = s.scrub(text);
      assert.ok(scrubbed.includes(MASK), scrubbed);
      // What is left of the encoded text is the prefix's characters and at most one on either side of the mask.
      assert.ok(scrubbed.length <= text.length - encodedForms(secret)[0].length + MASK.length + 8, scrubbed);
    }
  }
  // Base64 text that is not the key's is left alone.
  const s = createScrubber([KEY]);
  const other = btoa("Bearer sk-proj-something-else-entirely");
  assert.equal(s.scrub(other), other);
  assert.equal(s.test(other), false);
});

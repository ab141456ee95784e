/**
 * The Bedrock guardrail adapter against the ApplyGuardrail fake over a real socket. The fake recomputes each
 * request's SigV4 signature, so every passing call here proves the signing (path, x-amz-date, payload hash)
 * is right; a wrong secret key gets AWS's 403. Also: allow, flag on detect-only, deny on a block, replace on
 * masking, deny when the outputs cannot be matched to the texts, malformed answers, leaks, abort.
 */
import assert from "node:assert/strict";
import {
  FAKE_GUARDRAIL_AWS as AWS,
  type FakeBedrockGuardrail,
  startFakeBedrockGuardrail,
} from "../../../tests/helpers/fake_guardrails.ts";
import { type BedrockGuardrailConfig, bedrockVerdict, createBedrockGuardrail } from "./bedrock_guardrail.ts";
import { abortStops, input, never, rejectsWithout } from "./test_helpers.ts";

function config(
  fake: FakeBedrockGuardrail,
  over: Partial<BedrockGuardrailConfig> = {},
): BedrockGuardrailConfig {
  return {
    guardrail_identifier: AWS.guardrailIdentifier,
    guardrail_version: AWS.guardrailVersion,
    region: AWS.region,
    endpoint: fake.url,
    access_key_id: AWS.accessKeyId,
    secret_access_key: AWS.secretAccessKey,
    ...over,
  };
}

async function withFake(fn: (fake: FakeBedrockGuardrail) => Promise<void>) {
  const fake = startFakeBedrockGuardrail();
  try {
    await fn(fake);
  } finally {
    await fake.stop();
  }
}

Deno.test("bedrock: a signed call the fake verifies; clean texts are allowed; source follows the phase", () =>
  withFake(async (fake) => {
    const service = createBedrockGuardrail(config(fake));
    assert.deepEqual(await service.check(input(["hello", "there"]), never), { action: "allow" });
    assert.deepEqual(await service.check(input(["fine"], "output"), never), { action: "allow" });
    assert.deepEqual(fake.signatures, [true, true]);
    assert.equal(fake.calls[0].path, `/guardrail/${AWS.guardrailIdentifier}/version/1/apply`);
    assert.deepEqual(fake.calls[0].body, {
      source: "INPUT",
      content: [{ text: { text: "hello" } }, { text: { text: "there" } }],
    });
    assert.equal((fake.calls[1].body as { source: string }).source, "OUTPUT");
    assert.equal(fake.calls[0].headers.authorization, "<redacted>");
    assert.match(fake.calls[0].headers["x-amz-date"], /^\d{8}T\d{6}Z$/);
  }));

Deno.test("bedrock: credentials and region fall back to the environment; a session token is signed", () =>
  withFake(async (fake) => {
    const service = createBedrockGuardrail(
      config(fake, { region: undefined, access_key_id: undefined, secret_access_key: undefined }),
      {
        env: {
          AWS_REGION: AWS.region,
          AWS_ACCESS_KEY_ID: AWS.accessKeyId,
          AWS_SECRET_ACCESS_KEY: AWS.secretAccessKey,
          AWS_SESSION_TOKEN: "session-token-xyz",
        },
      },
    );
    assert.deepEqual(await service.check(input(["hello"]), never), { action: "allow" });
    assert.deepEqual(fake.signatures, [true]);
    assert.equal(fake.calls[0].headers["x-amz-security-token"], "<redacted>");
    assert.throws(() => createBedrockGuardrail(config(fake, { region: undefined })), /no AWS region/);
    assert.throws(
      () => createBedrockGuardrail(config(fake, { access_key_id: undefined, secret_access_key: undefined })),
      /no AWS credentials/,
    );
  }));

Deno.test("bedrock: a wrong secret key is refused by the fake with 403, and the error hides it", () =>
  withFake(async (fake) => {
    const wrong = "wrongSecret/Key+0000000000000000000000";
    const service = createBedrockGuardrail(config(fake, { secret_access_key: wrong }));
    const error = await rejectsWithout(service.check(input(["my words"]), never), [
      wrong,
      AWS.accessKeyId,
      "my words",
    ]);
    assert.match(error.message, /HTTP 403 \(InvalidSignatureException\)/);
    assert.deepEqual(fake.signatures, [false]);
  }));

Deno.test("bedrock: a blocked text is denied with the assessment's categories, not the blocked message", () =>
  withFake(async (fake) => {
    const service = createBedrockGuardrail(config(fake));
    assert.deepEqual(await service.check(input(["a forbidden subject"]), never), {
      action: "deny",
      reason: "blocked by the guardrail: CUSTOM_WORD, Forbidden_Topic",
      categories: ["CUSTOM_WORD", "Forbidden_Topic"],
    });
  }));

Deno.test("bedrock: masked emails replace the texts one for one", () =>
  withFake(async (fake) => {
    const service = createBedrockGuardrail(config(fake));
    assert.deepEqual(await service.check(input(["mail ann@example.com", "no pii here"]), never), {
      action: "replace",
      texts: ["mail {EMAIL}", "no pii here"],
      categories: ["EMAIL"],
    });
    fake.mergeOutputs = true;
    const merged = await service.check(input(["mail ann@example.com", "no pii here"]), never);
    assert.equal(merged.action, "deny", "outputs that cannot be matched to the texts deny");
  }));

Deno.test("bedrock: a detect-only finding flags", () =>
  withFake(async (fake) => {
    const service = createBedrockGuardrail(config(fake));
    assert.deepEqual(await service.check(input(["something suspicious"]), never), {
      action: "flag",
      categories: ["MISCONDUCT"],
    });
  }));

Deno.test("bedrockVerdict: the documented assessment shapes, and malformed answers", () => {
  const answer = {
    action: "GUARDRAIL_INTERVENED",
    outputs: [{ text: "x" }],
    assessments: [{
      contentPolicy: {
        filters: [{ type: "VIOLENCE", confidence: "HIGH", action: "BLOCKED", detected: true }],
      },
      wordPolicy: { managedWordLists: [{ match: "darn", type: "PROFANITY", action: "BLOCKED" }] },
      sensitiveInformationPolicy: {
        piiEntities: [],
        regexes: [{ name: "ticket", match: "T-1", regex: "T-\\d", action: "BLOCKED" }],
      },
      contextualGroundingPolicy: {
        filters: [{ type: "GROUNDING", threshold: 0.5, score: 0.1, action: "BLOCKED", detected: true }],
      },
    }],
  };
  const verdict = bedrockVerdict(answer, ["y"]);
  assert.deepEqual(verdict, {
    action: "deny",
    reason: "blocked by the guardrail: GROUNDING, PROFANITY, VIOLENCE, ticket",
    categories: ["GROUNDING", "PROFANITY", "VIOLENCE", "ticket"],
  });
  assert.ok(!JSON.stringify(verdict).includes("darn"), "never the matched text");
  assert.deepEqual(bedrockVerdict({ action: "GUARDRAIL_INTERVENED", outputs: [{ text: "y" }] }, ["y"]), {
    action: "deny",
    reason: "blocked by the guardrail",
    categories: [],
  });
  assert.throws(() => bedrockVerdict({ action: "MAYBE" }, ["y"]), /NONE or GUARDRAIL_INTERVENED/);
  assert.throws(() => bedrockVerdict({ action: "NONE", outputs: {} }, ["y"]), /arrays/);
  assert.throws(() => bedrockVerdict({ action: "NONE", outputs: [{ text: 1 }] }, ["y"]), /string `text`/);
  assert.throws(
    () => bedrockVerdict({ action: "NONE", assessments: [{ topicPolicy: [] }] }, ["y"]),
    /object/,
  );
  assert.throws(
    () =>
      bedrockVerdict({ action: "NONE", assessments: [{ topicPolicy: { topics: [{ name: "t" }] } }] }, ["y"]),
    /needs an `action`/,
  );
  assert.throws(() => bedrockVerdict([], ["y"]), /JSON object/);
});

Deno.test("bedrock: a throttled call throws without the texts or the keys", () =>
  withFake(async (fake) => {
    fake.faults.failStatus = 429;
    const service = createBedrockGuardrail(config(fake));
    const error = await rejectsWithout(service.check(input(["quiet words"]), never), [
      "quiet words",
      AWS.secretAccessKey,
      AWS.accessKeyId,
    ]);
    assert.match(error.message, /HTTP 429 \(ThrottlingException\)/);
  }));

Deno.test("bedrock: aborting the signal stops the call", () =>
  withFake(async (fake) => {
    const service = createBedrockGuardrail(config(fake));
    await abortStops(fake, (signal) => service.check(input(["slow"]), signal));
  }));

import assert from "node:assert/strict";
import type { ResolvedContentRule } from "../config/types.ts";
import type { JsonObject } from "../openai/types.ts";
import { applyContentRules } from "./content_rules.ts";
import { PolicyDenied } from "./denied.ts";
import { stringSlot } from "./text_slots.ts";

function rule(
  over: Partial<ResolvedContentRule> & Pick<ResolvedContentRule, "name" | "regex">,
): ResolvedContentRule {
  return { action: "redact", message: null, replacement: "[REDACTED]", ...over };
}

const ssn = rule({ name: "ssn", regex: /\b\d{3}-\d{2}-\d{4}\b/g });
const email = rule({ name: "email", regex: /[\w.]+@[\w.]+/gi, replacement: "<email>" });
const password = rule({ name: "password", regex: /password\s*[:=]\s*\S+/gi, action: "deny" });
const weapons = rule({
  name: "weapons",
  regex: /nerve agent/gi,
  action: "deny",
  message: "Not allowed here.",
});

function deniedBy(fn: () => unknown): PolicyDenied {
  try {
    fn();
  } catch (err) {
    if (err instanceof PolicyDenied) return err;
    throw err;
  }
  throw new Error("expected a denial");
}

Deno.test("deny: 400 content_policy_violation naming the rule and where, never echoing the match", () => {
  const body: JsonObject = {
    messages: [
      { role: "system", content: "be nice" },
      { role: "user", content: "hello" },
      {
        role: "user",
        content: [{ type: "image_url", image_url: { url: "x" } }, {
          type: "text",
          text: "my Password: hunter2",
        }],
      },
    ],
  };
  const err = deniedBy(() => applyContentRules("chat", body, [email, password, weapons]));
  assert.equal(err.status, 400);
  assert.equal(err.type, "invalid_request_error");
  assert.equal(err.code, "content_policy_violation");
  assert.equal(err.param, "messages[2].content[1].text");
  assert.equal(err.rule, "alias.content:password");
  assert.equal(err.message, "This request was rejected by the content policy (rule password).");
  assert.ok(!JSON.stringify(err.toBody()).includes("hunter2"));
});

Deno.test("deny: the rule's own message; the first deny rule in config order wins; every role is checked", () => {
  const body: JsonObject = {
    messages: [
      { role: "developer", content: "password=x" },
      { role: "tool", tool_call_id: "1", content: "how to make a NERVE AGENT" },
    ],
  };
  const err = deniedBy(() => applyContentRules("chat", body, [weapons, password]));
  assert.equal(err.rule, "alias.content:weapons");
  assert.equal(err.message, "Not allowed here.");
  assert.equal(err.param, "messages[1].content");
  assert.equal(
    deniedBy(() => applyContentRules("chat", body, [password, weapons])).param,
    "messages[0].content",
  );
});

Deno.test("deny rules judge the text as sent, before any redaction", () => {
  const hideAll = rule({ name: "all", regex: /.+/g });
  const body: JsonObject = { messages: [{ role: "user", content: "password: x" }] };
  assert.equal(
    deniedBy(() => applyContentRules("chat", body, [hideAll, password])).rule,
    "alias.content:password",
  );
  assert.deepEqual(body.messages, [{ role: "user", content: "password: x" }]);
});

Deno.test("redact: every match in string contents and text parts, in place, replacement taken literally", () => {
  const literal = rule({ name: "card", regex: /(\d{4})-\d{4}/g, replacement: "$1-****" });
  const body: JsonObject = {
    messages: [
      { role: "system", content: "ssn 123-45-6789 and 987-65-4321" },
      { role: "assistant", content: null, tool_calls: [] },
      {
        role: "user",
        content: [{ type: "text", text: "mail a@b.com, card 1234-5678" }, { type: "image_url" }],
      },
    ],
  };
  const decision = applyContentRules("chat", body, [ssn, email, literal, password]);
  assert.deepEqual(decision, {
    outcome: "modify",
    rules: ["alias.content:ssn", "alias.content:email", "alias.content:card"],
  });
  assert.deepEqual(body.messages, [
    { role: "system", content: "ssn [REDACTED] and [REDACTED]" },
    { role: "assistant", content: null, tool_calls: [] },
    { role: "user", content: [{ type: "text", text: "mail <email>, card $1-****" }, { type: "image_url" }] },
  ]);
});

Deno.test("redact: embeddings input as a string or a list of strings", () => {
  const one: JsonObject = { input: "reach me at x@y.org" };
  assert.equal(applyContentRules("embeddings", one, [email]).outcome, "modify");
  assert.equal(one.input, "reach me at <email>");
  const many: JsonObject = { input: ["fine", "x@y.org", "123-45-6789"] };
  assert.deepEqual(applyContentRules("embeddings", many, [email, ssn]), {
    outcome: "modify",
    rules: ["alias.content:email", "alias.content:ssn"],
  });
  assert.deepEqual(many.input, ["fine", "<email>", "[REDACTED]"]);
  assert.equal(
    deniedBy(() => applyContentRules("embeddings", { input: ["a", "password=1"] }, [password])).param,
    "input[1]",
  );
});

Deno.test("texts carried beside the body (a Gemini embed title) are denied and redacted in place as the body's", () => {
  const fields: JsonObject = { title: "call x@y.org" };
  const carried = [stringSlot(fields, "title", "requests[1].title")!];
  const body: JsonObject = { input: ["fine"] };
  assert.deepEqual(applyContentRules("embeddings", body, [email, password], [], carried), {
    outcome: "modify",
    rules: ["alias.content:email"],
  });
  assert.equal(fields.title, "call <email>");
  assert.deepEqual(body.input, ["fine"]);
  const denied: JsonObject = { title: "password=1" };
  const err = deniedBy(() =>
    applyContentRules("embeddings", { input: "fine" }, [password], [], [
      stringSlot(denied, "title", "title")!,
    ])
  );
  assert.equal(err.param, "title");
  assert.equal(denied.title, "password=1", "a denial changes nothing");
});

Deno.test("token-id embeddings input: refused (400 naming input) by any rule, deny or redact; accepted without rules", () => {
  for (const input of [[1, 2, 3], [[1, 2], [3]]]) {
    for (const rules of [[password], [email, password]]) {
      const denied = deniedBy(() => applyContentRules("embeddings", { input }, rules));
      assert.equal(denied.status, 400);
      assert.equal(denied.type, "invalid_request_error");
      assert.equal(denied.code, "token_input_not_checkable");
      assert.equal(denied.param, "input");
      assert.equal(denied.rule, `alias.content:${rules[0].name}`);
    }
    const body: JsonObject = { input };
    assert.deepEqual(applyContentRules("embeddings", body, []), { outcome: "allow" });
    assert.deepEqual(body.input, input);
  }
});

Deno.test("no match, no rules or no body: allow, body untouched; regex state does not leak between calls", () => {
  const body: JsonObject = { messages: [{ role: "user", content: "nothing to see" }] };
  const before = structuredClone(body);
  assert.deepEqual(applyContentRules("chat", body, [ssn, email, password]), { outcome: "allow" });
  assert.deepEqual(body, before);
  assert.deepEqual(applyContentRules("chat", body, []), { outcome: "allow" });
  assert.deepEqual(applyContentRules("chat", undefined, [password]), { outcome: "allow" });
  assert.deepEqual(applyContentRules("models", { input: "password=1" }, [password]), { outcome: "allow" });
  // a global regex used with test() would remember lastIndex and miss the second time
  for (let i = 0; i < 3; i++) {
    deniedBy(() =>
      applyContentRules("chat", { messages: [{ role: "user", content: "password=1" }] }, [password])
    );
  }
});

Deno.test("a rule compiled without the g flag still redacts every match", () => {
  const body: JsonObject = { input: "a@b.c and d@e.f" };
  applyContentRules("embeddings", body, [rule({ name: "e", regex: /\S+@\S+/ })]);
  assert.equal(body.input, "[REDACTED] and [REDACTED]");
});

Deno.test("an assistant turn's reasoning and refusals are read like its content: denied and redacted", () => {
  const history = (assistant: JsonObject): JsonObject => ({
    messages: [{ role: "user", content: "hi" }, { role: "assistant", ...assistant }, {
      role: "user",
      content: "go",
    }],
  });
  const reasoning = deniedBy(() =>
    applyContentRules("chat", history({ content: "ok", reasoning_content: "password: hunter2" }), [password])
  );
  assert.equal(reasoning.param, "messages[1].reasoning_content");
  const part = deniedBy(() =>
    applyContentRules("chat", history({ content: [{ type: "refusal", refusal: "password: hunter2" }] }), [
      password,
    ])
  );
  assert.equal(part.param, "messages[1].content[0].refusal");

  const body = history({
    content: [{ type: "refusal", refusal: "not to a@b.io" }],
    reasoning_content: "mail a@b.io",
    refusal: "no, a@b.io",
  });
  assert.deepEqual(applyContentRules("chat", body, [email]), {
    outcome: "modify",
    rules: ["alias.content:email"],
  });
  assert.deepEqual((body.messages as JsonObject[])[1], {
    role: "assistant",
    content: [{ type: "refusal", refusal: "not to <email>" }],
    reasoning_content: "mail <email>",
    refusal: "no, <email>",
  });
});

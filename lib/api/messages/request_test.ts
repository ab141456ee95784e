import assert from "node:assert/strict";
import { parse, refused } from "./parse_test_helpers.ts";
import { badGateway, GatewayError, inClientTerms, invalidRequest } from "../../errors.ts";
import { messagesClientTerms, parseMessagesRequest } from "./request.ts";
import { effortForBudget } from "../../openai/effort_for_budget.ts";

Deno.test("messages request: a Claude-Code-like conversation in the chat form, params in step", () => {
  const parsed = parse({
    system: [
      { type: "text", text: "You are a coding agent." },
      { type: "text", text: "Be terse.", cache_control: { type: "ephemeral" } },
    ],
    messages: [
      { role: "user", content: [{ type: "text", text: "List files", cache_control: { type: "ephemeral" } }] },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "I should run ls.", signature: "sig" },
          { type: "text", text: "Running ls." },
          { type: "tool_use", id: "toolu_1", name: "bash", input: { command: "ls" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "a.ts\nb.ts" }] },
          { type: "text", text: "Now count them." },
        ],
      },
    ],
    tools: [{ name: "bash", description: "Run a command", input_schema: { type: "object" } }],
    tool_choice: { type: "auto", disable_parallel_tool_use: true },
    metadata: { user_id: "user-42" },
    stream: true,
  }, new Headers({ "anthropic-version": "2023-06-01", "anthropic-beta": "a-1,b-2" }));
  assert.deepEqual(parsed.chat.messages, [
    { role: "system", content: "You are a coding agent.\n\nBe terse." },
    { role: "user", content: [{ type: "text", text: "List files" }] },
    {
      role: "assistant",
      content: "Running ls.",
      reasoning_content: "I should run ls.",
      tool_calls: [{
        id: "toolu_1",
        type: "function",
        function: { name: "bash", arguments: '{"command":"ls"}' },
      }],
    },
    { role: "tool", tool_call_id: "toolu_1", content: "a.ts\nb.ts" },
    { role: "user", content: [{ type: "text", text: "Now count them." }] },
  ]);
  assert.deepEqual(parsed.messageParams, [
    "system",
    "messages.0.content",
    "messages.1.content",
    "messages.2.content.0",
    "messages.2.content",
  ]);
  assert.equal(parsed.droppedThinking, 1);
  assert.equal(parsed.chat.max_completion_tokens, 100);
  assert.equal(parsed.chat.stream, true);
  assert.equal(parsed.stream, true);
  assert.equal(parsed.chat.tool_choice, "auto");
  assert.equal(parsed.chat.parallel_tool_calls, false);
  assert.equal(parsed.chat.user, "user-42");
  assert.deepEqual(parsed.chat.tools, [
    {
      type: "function",
      function: { name: "bash", parameters: { type: "object" }, description: "Run a command" },
    },
  ]);
  assert.equal(parsed.version, "2023-06-01");
  assert.equal(parsed.betas, "a-1,b-2");
  // The prompt-caching markers reach no chat form: a translated target's answer names them as dropped.
  assert.deepEqual(parsed.tolerance, {
    refusal: null,
    native: [],
    dropped: ["system.1.cache_control", "messages.0.content.0.cache_control"],
  });
});

Deno.test("messages request: images, documents, tool results with images and errors", () => {
  const parsed = parse({
    messages: [
      {
        role: "user",
        content: [
          { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
          { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } },
          {
            type: "document",
            title: "notes",
            source: { type: "text", media_type: "text/plain", data: "café" },
          },
          { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0=" } },
        ],
      },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "shot", input: {} }] },
      {
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: "t1",
          is_error: true,
          content: [
            { type: "text", text: "partial" },
            { type: "image", source: { type: "base64", media_type: "image/gif", data: "R0lG" } },
          ],
        }],
      },
    ],
  });
  const [user, , tool, images] = parsed.chat.messages;
  assert.deepEqual(user.content, [
    { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
    { type: "image_url", image_url: { url: "https://example.com/cat.jpg" } },
    {
      type: "file",
      file: { filename: "notes", file_data: `data:text/plain;base64,${btoa("caf\u00c3\u00a9")}` },
    },
    { type: "file", file: { filename: "document", file_data: "data:application/pdf;base64,JVBERi0=" } },
  ]);
  assert.deepEqual(tool, { role: "tool", tool_call_id: "t1", content: "Error: partial" });
  assert.equal(images.role, "user");
  assert.deepEqual((images.content as unknown[])[1], {
    type: "image_url",
    image_url: { url: "data:image/gif;base64,R0lG" },
  });
});

Deno.test("messages request: sampling, stops, thinking budgets, output_config and service tier", () => {
  const parsed = parse({
    messages: [{ role: "user", content: "hi" }],
    max_tokens: 20_000,
    stop_sequences: ["END", "STOP"],
    temperature: 0.5,
    top_p: 0.9,
    top_k: 40,
    thinking: { type: "enabled", budget_tokens: 10_000 },
    service_tier: "standard_only",
  });
  assert.deepEqual(parsed.chat.stop, ["END", "STOP"]);
  assert.deepEqual(parsed.stopSequences, ["END", "STOP"]);
  assert.equal(parsed.chat.temperature, 0.5);
  assert.equal(parsed.chat.top_p, 0.9);
  assert.equal(parsed.chat.top_k, 40);
  assert.equal(parsed.chat.reasoning_effort, "medium");
  assert.equal(parsed.chat.service_tier, "default");
  assert.equal(
    parse({ messages: [{ role: "user", content: "hi" }], service_tier: "auto" }).chat.service_tier,
    undefined,
  );

  assert.equal(effortForBudget(1024), "low");
  assert.equal(effortForBudget(4000), "low");
  assert.equal(effortForBudget(10_000), "medium");
  assert.equal(effortForBudget(31_999), "high");
  const disabled = parse({ messages: [{ role: "user", content: "hi" }], thinking: { type: "disabled" } });
  assert.equal(disabled.chat.reasoning_effort, undefined);
  const adaptive = parse({
    messages: [{ role: "user", content: "hi" }],
    thinking: { type: "adaptive" },
    output_config: { effort: "max", format: { type: "json_schema", schema: { type: "object" } } },
  });
  assert.equal(adaptive.chat.reasoning_effort, "high");
  assert.deepEqual(adaptive.chat.response_format, {
    type: "json_schema",
    json_schema: { name: "output", schema: { type: "object" }, strict: true },
  });
  assert.deepEqual(adaptive.tolerance.dropped, []);
  // output_config's fields the translation does not know are named as dropped, as unknown parameters are.
  const budgeted = parse({
    messages: [{ role: "user", content: "hi" }],
    output_config: { effort: "medium", task_budget: { type: "tokens", total: 400_000 } },
  });
  assert.equal(budgeted.chat.reasoning_effort, "medium");
  assert.deepEqual(budgeted.tolerance.dropped, ["output_config.task_budget"]);
});

Deno.test("messages request: tool_choice any, tool and none", () => {
  const tools = [{ name: "f", input_schema: { type: "object" } }];
  const messages = [{ role: "user", content: "hi" }];
  assert.equal(parse({ messages, tools, tool_choice: { type: "any" } }).chat.tool_choice, "required");
  assert.equal(parse({ messages, tools, tool_choice: { type: "none" } }).chat.tool_choice, "none");
  assert.deepEqual(parse({ messages, tools, tool_choice: { type: "tool", name: "f" } }).chat.tool_choice, {
    type: "function",
    function: { name: "f" },
  });
  assert.equal(parse({ messages, tools, tool_choice: { type: "any" } }).chat.parallel_tool_calls, undefined);
  // A named tool must be one of the request's tools (a server tool's name included), as Anthropic requires;
  // a translated target would otherwise ignore it (or refuse it in its own terms).
  refused({ messages, tools, tool_choice: { type: "tool", name: "g" } }, /^tool_choice\.name: .*'g'/);
  refused({ messages, tool_choice: { type: "tool", name: "f" } }, /^tool_choice\.name: .*'f'/);
  const server = [...tools, { type: "web_search_20250305", name: "web_search" }];
  const served = parse({ messages, tools: server, tool_choice: { type: "tool", name: "web_search" } });
  assert.deepEqual(served.tolerance.native, ["tools.1"]);
});

Deno.test("messages request: client mistakes are Anthropic's 400s naming the field", () => {
  const messages = [{ role: "user", content: "hi" }];
  assert.throws(
    () => parseMessagesRequest({ model: "m", messages }, new Headers()),
    /max_tokens: Field required/,
  );
  refused({ messages, max_tokens: 0 }, /max_tokens: Input should be greater than or equal to 1/);
  // An unknown parameter is not a mistake (issue 22's tolerance rule): a translated target goes without it.
  assert.deepEqual(parse({ messages, frequency_penalty: 1 }).tolerance.dropped, ["frequency_penalty"]);
  refused({ messages: [] }, /messages: At least one message/);
  refused({ messages: [{ role: "tool", content: "x" }] }, /messages\.0\.role/);
  refused(
    { messages: [{ role: "user", content: [] }] },
    /messages\.0\.content: List should have at least 1 item/,
  );
  refused(
    { messages: [{ role: "user", content: [{ type: "tool_use", id: "a", name: "b", input: {} }] }] },
    /assistant turn/,
  );
  refused({ messages, temperature: 1.5 }, /temperature: Input should be less than or equal to 1/);
  refused(
    { messages, thinking: { type: "enabled", budget_tokens: 500 } },
    /budget_tokens: Input should be greater/,
  );
  // A budget above max_tokens is not a mistake with interleaved thinking (the turn's budget across thinking
  // blocks): Anthropic judges it on a Claude target; on a translated one it picks an effort.
  assert.equal(
    parse({ messages, thinking: { type: "enabled", budget_tokens: 2000 } }).chat.reasoning_effort,
    "low",
  );
  refused({ messages, tool_choice: { type: "sometimes" } }, /tool_choice\.type/);
  refused({ messages, system: [{ type: "image" }] }, /system\.0\.type/);
  refused({ messages, stop_sequences: [1] }, /stop_sequences\.0/);
  refused({ messages, metadata: { user_id: 7 } }, /metadata\.user_id/);
  // Base64 media of a type Anthropic does not take is refused, never sent on (nor spliced into a data URL).
  const block = (type: string, media: string) => ({
    messages: [{
      role: "user",
      content: [{ type, source: { type: "base64", media_type: media, data: "AAAA" } }],
    }],
  });
  refused(
    block("image", "image/tiff"),
    /messages\.0\.content\.0\.source\.media_type: Input should be 'image\/jpeg'/,
  );
  refused(block("image", "image/png;x=1,AAAA"), /source\.media_type/);
  refused(
    block("document", "text/html"),
    /messages\.0\.content\.0\.source\.media_type: Input should be 'application\/pdf'/,
  );
});

Deno.test("messages request: what only Claude serves is noted for translated targets, not refused", () => {
  const cases: [Record<string, unknown>, RegExp | null, string[], string[]][] = [
    [{ container: "c_1" }, null, ["container"], []],
    [{ tools: [{ type: "web_search_20250305", name: "web_search" }] }, null, ["tools.0"], []],
    [
      {
        messages: [{
          role: "user",
          content: [{ type: "document", source: { type: "url", url: "https://x/y.pdf" } }],
        }],
      },
      /messages\.0\.content\.0\.source\.type/,
      [],
      [],
    ],
    [
      {
        messages: [{
          role: "user",
          content: [{ type: "search_result", source: "s", title: "t", content: [] }],
        }],
      },
      /messages\.0\.content\.0\.type/,
      [],
      [],
    ],
    [
      { messages: [{ role: "user", content: [{ type: "text", text: "hi", future_field: 1 }] }] },
      null,
      [],
      ["messages.0.content.0.future_field"],
    ],
  ];
  for (const [body, refusal, native, dropped] of cases) {
    const { tolerance } = parse({ messages: [{ role: "user", content: "hi" }], ...body });
    const label = JSON.stringify(body);
    if (refusal === null) assert.equal(tolerance.refusal, null, label);
    else {
      // Content the model must read: a translated target would answer without it, so it is refused there.
      assert.ok(tolerance.refusal instanceof GatewayError, label);
      assert.equal(tolerance.refusal.status, 400);
      assert.match(tolerance.refusal.message, refusal);
    }
    assert.deepEqual([tolerance.native, tolerance.dropped], [native, dropped], label);
  }
});

Deno.test("messages request: what Claude Code sends is taken: unknown parameters, system turns, context edits", () => {
  const parsed = parse({
    messages: [
      { role: "user", content: "hi" },
      {
        role: "system",
        content: [{ type: "text", text: "Tools changed.", cache_control: { type: "ephemeral" } }],
      },
      { role: "user", content: "go on" },
    ],
    context_management: {
      edits: [{ type: "clear_thinking_20251015", keep: "all" }, { type: "clear_tool_uses_20250919" }],
    },
    thinking: { type: "adaptive", display: "omitted" },
    output_config: { effort: "high" },
    a_parameter_from_next_week: { x: 1 },
    speed: "fast",
  });
  assert.deepEqual(parsed.chat.messages.map((m) => [m.role, m.content]), [
    ["user", "hi"],
    ["system", "Tools changed."],
    ["user", "go on"],
  ]);
  assert.equal(parsed.chat.reasoning_effort, "high");
  // Clearing thinking is what a translated target gets anyway; the other edit and the rest are dropped.
  assert.deepEqual(parsed.tolerance.dropped, [
    "context_management.edits.1",
    "a_parameter_from_next_week",
    "messages.1.content.0.cache_control",
    "thinking.display",
    "speed",
  ]);
  refused({ messages: [{ role: "developer", content: "x" }] }, /^messages\.0\.role: /);
});

Deno.test("messages request: a translated target's 400 names the client's own field", () => {
  const parsed = parse({
    system: "Be brief.",
    messages: [{ role: "user", content: "hi" }, { role: "assistant", content: "yo" }],
  });
  const named = (err: GatewayError) => inClientTerms(err, messagesClientTerms(parsed)) as GatewayError;
  const thinking = named(invalidRequest("'reasoning_effort' is not supported.", "reasoning_effort"));
  // The message's mention of the chat form's parameter is the client's field too (Anthropic's error has no param).
  assert.equal(thinking.message, "thinking: 'thinking' is not supported.");
  assert.equal(
    named(invalidRequest("'max_completion_tokens' must be above 1024 with 'reasoning_effort'.", "max_tokens"))
      .message,
    "max_tokens: 'max_tokens' must be above 1024 with 'thinking'.",
  );
  assert.equal(thinking.status, 400);
  // An effort set by output_config.effort is named so, with thinking or without.
  for (
    const extra of [{}, { thinking: { type: "adaptive" } }, {
      max_tokens: 4096,
      thinking: { type: "enabled", budget_tokens: 1024 },
    }]
  ) {
    const effort = parse({
      messages: [{ role: "user", content: "hi" }],
      output_config: { effort: "low" },
      ...extra,
    });
    assert.equal(
      (inClientTerms(
        invalidRequest("no 'reasoning_effort'", "reasoning_effort"),
        messagesClientTerms(effort),
      ) as GatewayError)
        .message,
      "output_config.effort: no 'output_config.effort'",
      JSON.stringify(extra),
    );
    // A hint only without thinking asked for (effort_hint.ts).
    assert.equal(effort.effortHint, !JSON.stringify(extra).includes("enabled"), JSON.stringify(extra));
  }
  assert.equal(
    named(invalidRequest("bad part", "messages[2].content[0].type")).message,
    "messages.1.content: bad part",
  );
  assert.equal(named(invalidRequest("no", "stop")).param, "stop_sequences");
  assert.equal(
    named(invalidRequest("'user' is too long.", "user")).message,
    "metadata.user_id: 'metadata.user_id' is too long.",
  );
  // A word a vendor quotes for something else (a role) is left as it was, where the error is about another field.
  assert.equal(
    named(invalidRequest(
      "Invalid 'messages[2]': Image URLs are only allowed for messages with role 'user', not 'assistant'.",
      "messages[2]",
    )).message,
    "messages.1.content: Invalid 'messages.1.content': Image URLs are only allowed for messages with role 'user', not 'assistant'.",
  );
  // Errors that are not the client's, or name nothing it sent differently, pass as they are.
  const upstream = badGateway("down");
  assert.equal(inClientTerms(upstream, messagesClientTerms(parsed)), upstream);
  const other = invalidRequest("x", "temperature");
  assert.equal(inClientTerms(other, messagesClientTerms(parsed)), other);
});

import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import type { ChatCompletionChunk } from "../../openai/types.ts";
import { parseGeminiRequest } from "./request.ts";
import { GeminiChunks, usageMetadata } from "./response.ts";

Deno.test("gemini request: contents, system instruction, tools and generation config in the chat form", () => {
  const { chat, tolerance } = parseGeminiRequest(
    {
      systemInstruction: { parts: [{ text: "Be brief." }] },
      contents: [
        { role: "user", parts: [{ text: "Weather in " }, { text: "Paris?" }] },
        {
          role: "model",
          parts: [{ text: "thinking…", thought: true }, {
            functionCall: { name: "get_weather", args: { city: "Paris" } },
          }],
        },
        { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { temp: 21 } } }] },
        { role: "user", parts: [{ inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } }] },
      ],
      tools: [{ functionDeclarations: [{ name: "get_weather", parameters: { type: "OBJECT" } }] }],
      toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather"] } },
      generationConfig: {
        temperature: 0.3,
        maxOutputTokens: 100,
        stopSequences: ["END"],
        responseMimeType: "application/json",
        thinkingConfig: { thinkingBudget: 10_000 },
      },
    },
    "alias",
    false,
  );
  assert.deepEqual(chat.messages.map((m) => m.role), ["system", "user", "assistant", "tool", "user"]);
  assert.equal(chat.messages[1].content, "Weather in Paris?");
  const call =
    (chat.messages[2] as unknown as { tool_calls: { id: string; function: { arguments: string } }[] })
      .tool_calls[0];
  assert.equal(call.function.arguments, '{"city":"Paris"}');
  assert.equal(
    (chat.messages[3] as unknown as { tool_call_id: string }).tool_call_id,
    call.id,
    "paired by name",
  );
  assert.deepEqual(chat.tools, [{
    type: "function",
    function: { name: "get_weather", parameters: { type: "object" } },
  }]);
  assert.deepEqual(chat.tool_choice, { type: "function", function: { name: "get_weather" } });
  assert.deepEqual(
    [chat.temperature, chat.max_completion_tokens, chat.stop, chat.reasoning_effort],
    [0.3, 100, ["END"], "medium"],
  );
  assert.deepEqual(chat.response_format, { type: "json_object" });
  assert.deepEqual(tolerance, { refusal: null, native: [], dropped: [] });
});

Deno.test("gemini request: the tolerance rule: dropped, Gemini-only and refused fields; mistakes are 400s", () => {
  const base = { contents: [{ role: "user", parts: [{ text: "Hi" }] }] };
  const { tolerance } = parseGeminiRequest(
    {
      ...base,
      safetySettings: [{ category: "HARM_CATEGORY_HATE_SPEECH", threshold: "BLOCK_NONE" }],
      tools: [{ googleSearch: {} }],
      generationConfig: { responseModalities: ["TEXT"] },
      cachedContent: "cachedContents/abc",
    },
    "alias",
    false,
  );
  assert.deepEqual(tolerance.dropped, ["safetySettings", "generationConfig.responseModalities"]);
  assert.deepEqual(tolerance.native, ["tools[0].googleSearch"]);
  assert.ok(tolerance.refusal instanceof GatewayError);
  assert.equal(tolerance.refusal.param, "cachedContent");
  for (
    const body of [
      { contents: "Hi" },
      { contents: [{ role: "system", parts: [{ text: "x" }] }] },
      { contents: [] },
      { ...base, generationConfig: { candidateCount: 2 } },
      { ...base, generationConfig: { temperature: "hot" } },
    ]
  ) {
    assert.throws(() => parseGeminiRequest(body, "alias", false), (e: unknown) => {
      return e instanceof GatewayError && e.status === 400;
    }, JSON.stringify(body));
  }
});

Deno.test("gemini response: a streamed call is sent whole once its arguments are complete", () => {
  const chunks = new GeminiChunks({ alias: "a", responseId: "r" });
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): ChatCompletionChunk => ({
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "u",
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  assert.equal(chunks.chunk(chunk({ content: "Let me look." })).length, 1);
  const open = { tool_calls: [{ index: 0, id: "c1", function: { name: "get_weather", arguments: '{"ci' } }] };
  assert.deepEqual(chunks.chunk(chunk(open)), [], "held until complete");
  assert.deepEqual(
    chunks.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: 'ty":"Paris"}' } }] })),
    [],
  );
  const last = chunks.finish({ prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 });
  const candidate = (last.candidates as { content: { parts: unknown[] }; finishReason: string }[])[0];
  assert.deepEqual(candidate.content.parts, [{
    functionCall: { name: "get_weather", args: { city: "Paris" }, id: "c1" },
  }]);
  assert.equal(candidate.finishReason, "STOP");
  assert.deepEqual(last.usageMetadata, { promptTokenCount: 3, candidatesTokenCount: 5, totalTokenCount: 8 });
});

Deno.test("gemini response: thoughts are counted beside the candidates, not in them", () => {
  // A Gemini upstream's 20 candidate and 80 thought tokens are 100 completion tokens in the chat form.
  const usage = usageMetadata({
    prompt_tokens: 12,
    completion_tokens: 100,
    total_tokens: 112,
    completion_tokens_details: { reasoning_tokens: 80 },
  });
  assert.deepEqual(usage, {
    promptTokenCount: 12,
    candidatesTokenCount: 20,
    thoughtsTokenCount: 80,
    totalTokenCount: 112,
  });
  assert.equal(
    (usage.promptTokenCount as number) + (usage.candidatesTokenCount as number) +
      (usage.thoughtsTokenCount as number),
    usage.totalTokenCount,
  );
});

Deno.test("gemini request: allowedFunctionNames bounds a call to those functions; only ANY forces one", () => {
  const declarations = ["get_weather", "get_time", "delete_account"].map((name) => ({
    name,
    parameters: { type: "OBJECT", properties: {} },
  }));
  const ask = (config: Record<string, unknown>) =>
    parseGeminiRequest(
      {
        contents: [{ role: "user", parts: [{ text: "Hi" }] }],
        tools: [{ functionDeclarations: declarations }],
        toolConfig: { functionCallingConfig: config },
      },
      "alias",
      false,
    ).chat;
  const names = (chat: Record<string, unknown>) =>
    (chat.tools as { function: { name: string } }[]).map((t) => t.function.name);
  const two = ask({ mode: "ANY", allowedFunctionNames: ["get_weather", "get_time"] });
  assert.deepEqual(names(two), ["get_weather", "get_time"], "only the allowed ones may be called");
  assert.equal(two.tool_choice, "required");
  const one = ask({ mode: "ANY", allowedFunctionNames: ["get_time"] });
  assert.deepEqual(one.tool_choice, { type: "function", function: { name: "get_time" } });
  const any = ask({ mode: "ANY" });
  assert.deepEqual(names(any), ["get_weather", "get_time", "delete_account"]);
  assert.equal(any.tool_choice, "required");
  assert.equal(ask({ mode: "AUTO" }).tool_choice, "auto");
  // VALIDATED lets the model answer in text or call: never a forced call, only the allowed tools offered.
  const validated = ask({ mode: "VALIDATED" });
  assert.deepEqual(names(validated), ["get_weather", "get_time", "delete_account"]);
  assert.equal(validated.tool_choice, "auto");
  const validatedOne = ask({ mode: "VALIDATED", allowedFunctionNames: ["get_time"] });
  assert.deepEqual(names(validatedOne), ["get_time"]);
  assert.equal(validatedOne.tool_choice, "auto");
  assert.throws(
    () => ask({ mode: "ANY", allowedFunctionNames: ["launch"] }),
    (e: unknown) => e instanceof GatewayError && e.status === 400,
    "a name of no declared function",
  );
});

Deno.test("gemini request: each function response answers a call of the model turn before it, by id, else by name", () => {
  type Tool = { role: string; tool_call_id?: string; tool_calls?: { id: string }[] };
  const ids = (contents: unknown[]) => {
    const messages = parseGeminiRequest({ contents }, "alias", false).chat.messages as unknown as Tool[];
    return {
      calls: messages.flatMap((m) => m.tool_calls?.map((c) => c.id) ?? []),
      answers: messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id),
    };
  };
  const ask = { role: "user", parts: [{ text: "Weather in Paris and Rome?" }] };
  const weather = (city: string, id?: string) => ({
    functionCall: { name: "get_weather", args: { city }, id },
  });
  const result = (t: number, id?: string) => ({
    functionResponse: { name: "get_weather", response: { t }, id },
  });

  // Google's documented loop: the model's turn sent back as it came (with the ids the gateway gave its calls),
  // the responses without ids.
  const loop = ids([ask, { role: "model", parts: [weather("Paris", "call_abc")] }, {
    role: "user",
    parts: [result(21)],
  }]);
  assert.deepEqual(loop.answers, ["call_abc"]);

  // Two calls of one name answered in order without ids: one each, never the same id twice.
  const parallel = ids([ask, {
    role: "model",
    parts: [weather("Paris", "toolu_A"), weather("Rome", "toolu_B")],
  }, {
    role: "user",
    parts: [result(21), result(25)],
  }]);
  assert.deepEqual(parallel.answers, ["toolu_A", "toolu_B"]);
  // By id when the response names one, whatever the order.
  const byId = ids([
    ask,
    { role: "model", parts: [weather("Paris", "toolu_A"), weather("Rome", "toolu_B")] },
    {
      role: "user",
      parts: [result(25, "toolu_B"), result(21)],
    },
  ]);
  assert.deepEqual(byId.answers, ["toolu_B", "toolu_A"]);

  // Gemini CLI: the call came without an id; the CLI made its own and sends it only on the response.
  const cli = ids([ask, { role: "model", parts: [weather("Paris")] }, {
    role: "user",
    parts: [result(21, "get_weather-1733000000000-9f3a2c")],
  }]);
  assert.deepEqual(cli.answers, cli.calls);

  // Each turn's responses answer that turn's calls, not an earlier one's.
  const turns = ids([
    ask,
    { role: "model", parts: [weather("Paris")] },
    { role: "user", parts: [result(21)] },
    { role: "model", parts: [weather("Rome")] },
    { role: "user", parts: [result(25)] },
  ]);
  assert.deepEqual(turns.answers, turns.calls);
  assert.notEqual(turns.calls[0], turns.calls[1]);
});

Deno.test("gemini request: Google's REST spellings are read as Google reads them, nothing dropped", () => {
  // Google's cookbook request (Function_calling_config_REST), as published, with a generation config.
  const { chat, tolerance, body } = parseGeminiRequest(
    {
      system_instruction: { parts: { text: "You are a lighting bot." } },
      tools: [{
        function_declarations: [
          { name: "enable_lights", parameters: { type: "object" } },
          {
            name: "set_light_color",
            parameters: { type: "object", properties: { rgb_hex: { type: "string" } } },
          },
        ],
      }],
      tool_config: { function_calling_config: { mode: "any", allowed_function_names: ["set_light_color"] } },
      contents: { role: "user", parts: { text: "Make this place PURPLE!" } },
      generation_config: { response_mime_type: "application/json", max_output_tokens: 50 },
    },
    "alias",
    false,
  );
  assert.deepEqual(chat.messages, [
    { role: "system", content: "You are a lighting bot." },
    { role: "user", content: "Make this place PURPLE!" },
  ]);
  assert.deepEqual(chat.tools, [{
    type: "function",
    function: {
      name: "set_light_color",
      parameters: { type: "object", properties: { rgb_hex: { type: "string" } } },
    },
  }]);
  assert.deepEqual(chat.tool_choice, { type: "function", function: { name: "set_light_color" } });
  assert.equal(chat.max_completion_tokens, 50);
  assert.deepEqual(chat.response_format, { type: "json_object" });
  assert.deepEqual(tolerance, { refusal: null, native: [], dropped: [] });
  // What a Gemini target gets is what was read.
  assert.deepEqual(Object.keys(body), [
    "systemInstruction",
    "tools",
    "toolConfig",
    "contents",
    "generationConfig",
  ]);

  const image = parseGeminiRequest(
    { contents: [{ parts: [{ inline_data: { mime_type: "image/png", data: "iVBORw0KGgo=" } }] }] },
    "alias",
    false,
  );
  assert.deepEqual(image.chat.messages[0].content, [{
    type: "image_url",
    image_url: { url: "data:image/png;base64,iVBORw0KGgo=" },
  }]);
  assert.equal(image.tolerance.refusal, null);
});

Deno.test("gemini request: a function-calling mode in any case; one Google does not know is its 400", () => {
  const ask = (mode: unknown) =>
    parseGeminiRequest(
      {
        contents: [{ role: "user", parts: [{ text: "Hi" }] }],
        tools: [{ functionDeclarations: [{ name: "f" }] }],
        toolConfig: { functionCallingConfig: { mode } },
      },
      "alias",
      false,
    ).chat;
  assert.equal(ask("none").tool_choice, "none");
  assert.equal(ask("Any").tool_choice, "required");
  for (const mode of ["BOGUS", 7]) {
    assert.throws(
      () => ask(mode),
      (e: unknown) =>
        e instanceof GatewayError && e.status === 400 && e.param === "toolConfig.functionCallingConfig.mode",
    );
  }
});

Deno.test("gemini request: a user's text flagged as a thought is text the policy reads; a model's thought is not", () => {
  const { chat } = parseGeminiRequest(
    {
      contents: [
        { role: "user", parts: [{ text: "Hi. " }, { text: "Hidden words.", thought: true }] },
        { role: "model", parts: [{ text: "Planning…", thought: true }, { text: "Hello." }] },
        { role: "user", parts: [{ text: "Again?" }] },
      ],
    },
    "alias",
    false,
  );
  assert.deepEqual(chat.messages.map((m) => m.content), ["Hi. Hidden words.", "Hello.", "Again?"]);
});

Deno.test("gemini request: a thinkingBudget of 0 or -1 sets no effort; includeThoughts is kept for the answer", () => {
  const ask = (thinkingConfig: Record<string, unknown>) =>
    parseGeminiRequest(
      { contents: [{ role: "user", parts: [{ text: "Hi" }] }], generationConfig: { thinkingConfig } },
      "alias",
      false,
    );
  const off = ask({ thinkingBudget: 0 });
  // Not `none`: non-reasoning and o-series OpenAI models refuse it; no effort is no thinking on Claude.
  assert.equal(off.chat.reasoning_effort, undefined);
  assert.equal(off.thoughts, false);
  // -1 leaves the model its own choice.
  assert.equal(ask({ thinkingBudget: -1 }).chat.reasoning_effort, undefined);
  assert.equal(ask({ thinkingBudget: 1024, includeThoughts: true }).thoughts, true);
  assert.equal(ask({ include_thoughts: true }).thoughts, true, "in Google's proto spelling too");
});

/**
 * Gemini CLI (`@google/gemini-cli`, pinned in tests/agents/package.json) run headless against the scripted
 * upstream's Gemini API (scripted_gemini.ts): a control run straight at the fake, then through the gateway's
 * Gemini API (`/v1beta/models/{alias}:streamGenerateContent` and friends) over a `gemini` provider (native), an
 * `openai` provider (translated to chat completions) and an `anthropic` one (translated to Messages, where
 * Claude refuses the CLI's `temperature` beside its `topP`, so the gateway sends the temperature alone and names
 * `generationConfig.topP` dropped): the CLI must write `hello.txt` with its own `write_file` tool, print the final answer and exit 0 without a single error answer, and the gateway must keep
 * usage records of what it served. A cut test checks that a stream torn down mid-way makes the CLI fail or report
 * an error (its control: torn down straight at the CLI, it exits 1). A spent budget test checks that the CLI, its
 * retries on, stops at the first 429 (the gateway's QuotaFailure of a day), not retrying what cannot pass today.
 * How the CLI is started is in agent_commands.ts (`geminiCommand`), the run and its checks in agent_harness.ts.
 *
 * @module
 */
import assert from "node:assert/strict";
import { pollUsageRows } from "../helpers/usage_rows.ts";
import {
  assertCompleted,
  BUDGET_TOKEN,
  CUT_TIMEOUT_MS,
  describe,
  type RunContext,
  SKIP,
  type UsageRow,
  withAgentRun,
} from "./agent_harness.ts";
import { THOUGHT_TEXT } from "./scripted_gemini.ts";
import { FILE_NAME, FINAL_TEXT } from "./scripted_upstream.ts";

Deno.test({
  name: "control: gemini completes the task against the scripted upstream directly (Gemini API, no gateway)",
  ignore: SKIP,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withAgentRun("gemini", "gemini-native", "normal", true, async ({ run, cwd, up, proxy }) => {
      await assertCompleted(run, cwd, up, proxy);
      // The thought summary the fake sends first is shown as a thought, not printed with the answer.
      assert.ok(!run.stdout.includes(THOUGHT_TEXT), describe(run, proxy));
    }),
});

const CASES: { alias: string; kind: string; upstreamApi: string }[] = [
  { alias: "gemini-native", kind: "native (gemini provider)", upstreamApi: "gemini" },
  { alias: "gemini-translated", kind: "translated (openai chat)", upstreamApi: "chat" },
  { alias: "gemini-claude", kind: "translated (anthropic messages)", upstreamApi: "messages" },
];

for (const { alias, kind, upstreamApi } of CASES) {
  Deno.test({
    name: `gemini writes ${FILE_NAME} with its own tool through ${alias}, ${kind}`,
    ignore: SKIP,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: () =>
      withAgentRun("gemini", alias, "normal", false, async ({ run, cwd, gw, up, proxy }) => {
        await assertCompleted(run, cwd, up, proxy);
        // A thought the upstream sent stays a thought.
        assert.ok(!run.stdout.includes(THOUGHT_TEXT), describe(run, proxy));
        // The CLI spoke the Gemini API to the gateway, and the gateway the provider's API to the upstream.
        assert.ok(
          proxy.requests.every((r) => r.path.startsWith("/v1beta/")),
          `the CLI left the Gemini API: ${proxy.requests.map((r) => `${r.method} ${r.path}`)}`,
        );
        assert.ok(
          up.requests.every((r) => r.api === upstreamApi || r.api === "count_tokens"),
          `upstream APIs: ${up.requests.map((r) => `${r.api} ${r.path}`)}`,
        );
        // Every upstream answer the CLI got went through the gateway and left a usage record.
        const upstreamCalls = up.requests.filter((r) => r.api === upstreamApi).length;
        const served = (rows: UsageRow[]) => rows.filter((r) => r.alias === alias && r.status === 200);
        const rows = await pollUsageRows<UsageRow>(gw, (r) => served(r).length >= upstreamCalls, {
          tries: 250,
        });
        assert.ok(served(rows).length >= upstreamCalls, `usage records: ${JSON.stringify(rows)}`);
        assert.ok(
          served(rows).some((r) => r.endpoint === "gemini"),
          `no gemini usage record: ${JSON.stringify(rows)}`,
        );
        if (upstreamApi === "messages") {
          // Claude got the CLI's temperature alone, and every record names the topP it went without.
          for (const r of up.requests.filter((r) => r.api === "messages")) {
            assert.equal(typeof r.body.temperature, "number", JSON.stringify(r.body));
            assert.equal("top_p" in r.body, false, JSON.stringify(r.body));
          }
          for (const r of served(rows).filter((r) => r.endpoint === "gemini")) {
            assert.match(r.dropped ?? "", /(^|,)generationConfig\.topP(,|$)/, JSON.stringify(r));
          }
        }
      }),
  });
}

/** The checks of a cut run: something was cut, the CLI failed or said so, no file, no final answer. */
async function assertCut({ run, cwd, up, proxy }: RunContext): Promise<void> {
  const why = describe(run, proxy);
  assert.ok(!run.timedOut, `agent killed after ${CUT_TIMEOUT_MS} ms\n${why}`);
  assert.ok(
    up.requests.some((r) => r.answer === "cut"),
    `no answer was cut (upstream answers: ${up.requests.map((r) => r.answer)})\n${why}`,
  );
  const saidError = /error|fail|terminated|disconnect/i.test(run.stdout + run.stderr);
  assert.ok(run.code !== 0 || saidError, `the CLI neither failed nor reported an error\n${why}`);
  assert.ok(!run.stdout.includes(FINAL_TEXT), why);
  const written = await Deno.stat(`${cwd}/${FILE_NAME}`).then(() => true, () => false);
  assert.ok(!written, `${FILE_NAME} written although the tool call was cut\n${why}`);
}

// The cut's control: a stream torn down straight at the CLI fails it (`TypeError: terminated`, exit 1).
Deno.test({
  name: "control: gemini fails when the scripted upstream's stream is cut mid-way (no gateway)",
  ignore: SKIP,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withAgentRun("gemini", "gemini-native", "cut", true, async (ctx) => {
      await assertCut(ctx);
      assert.notEqual(ctx.run.code, 0, describe(ctx.run, ctx.proxy));
    }),
});

Deno.test({
  name: "gemini reports an error when the upstream stream through gemini-native is cut mid-way",
  ignore: SKIP,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withAgentRun("gemini", "gemini-native", "cut", false, async (ctx) => {
      await assertCut(ctx);
      // The gateway ends a broken stream with Google's error chunk and a cut connection: the CLI fails.
      assert.notEqual(ctx.run.code, 0, describe(ctx.run, ctx.proxy));
    }),
});

// Gemini CLI retries a 429 on its own backoff (5 s, 10 s, … up to `maxAttempts`) unless its details say not to: a
// `QuotaFailure` whose quota id names a day, or a `RetryInfo` over 300 s. A spent daily budget says both.
Deno.test({
  name: "gemini stops at the first 429 of a spent budget, its retries on",
  ignore: SKIP,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withAgentRun("gemini", "gemini-native", "normal", false, async ({ run, gw, up, proxy }) => {
      const why = describe(run, proxy);
      assert.ok(!run.timedOut, why);
      assert.notEqual(run.code, 0, why);
      const denied = proxy.requests.filter((r) => r.status === 429);
      assert.equal(denied.length, 1, `the CLI asked again for what its budget cannot allow today\n${why}`);
      assert.match(denied[0].error ?? "", /TokenBudgetPerDay/, why);
      assert.equal(up.requests.length, 1, "only the request that spent the budget reached the upstream");
      // The gateway recorded the one denial, by the budget.
      const rows = await pollUsageRows<UsageRow>(gw, (r) => r.some((row) => row.status === 429));
      assert.deepEqual(rows.filter((r) => r.status === 429).map((r) => r.outcome), ["deny"]);
    }, {
      token: BUDGET_TOKEN,
      maxAttempts: 3,
      before: async (gw) => {
        // One answer spends the budget of one token.
        const spent = await fetch(`${gw.url}/v1beta/models/gemini-native:generateContent`, {
          method: "POST",
          headers: { "x-goog-api-key": BUDGET_TOKEN, "content-type": "application/json" },
          body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Hi" }] }] }),
        });
        assert.equal(spent.status, 200, await spent.text());
      },
    }),
});

/**
 * Real coding agents (Claude Code, Codex, opencode; pinned in tests/agents/package.json and installed with
 * `npm install --prefix tests/agents`) run non-interactively through the gateway against the scripted upstream
 * (scripted_upstream.ts), through a native alias and a translated one: each must call its own file-writing tool
 * (the file `hello.txt` appears in its temp working dir), print the final answer and exit 0, without getting a
 * single error answer on the way (agents retry around some 400s), and the gateway must have usage records of
 * the requests. A "cut" test per agent checks that a stream torn down mid-way makes the agent report an error.
 * Control runs point each agent at the scripted upstream directly, so a failure through the gateway is the
 * gateway's. The agent reaches the gateway through a recording proxy (recording_proxy.ts) that keeps what it
 * sent and every error body it got back. How each agent is started is in agent_commands.ts, the run and its
 * checks in agent_harness.ts; Codex over the gateway's Responses WebSocket is codex_websocket_test.ts.
 *
 * Skipped (with a message) only when tests/agents/node_modules is missing and `CI` is not set; in CI they run.
 * `AGENTS_RECORD_DIR=<dir>` writes what each agent sent (every request, and a summary) there as JSON.
 *
 * @module
 */
import assert from "node:assert/strict";
import { pollUsageRows } from "../helpers/usage_rows.ts";
import type { Agent } from "./agent_commands.ts";
import {
  assertCompleted,
  CUT_TIMEOUT_MS,
  describe,
  SKIP,
  type UsageRow,
  withAgentRun,
} from "./agent_harness.ts";
import { FILE_NAME, FINAL_TEXT } from "./scripted_upstream.ts";

// Control runs: each agent against the scripted upstream directly, no gateway. They show that the fake and the
// agent agree, so a failure through the gateway is the gateway's.
const CONTROL: { agent: Agent; model: string; api: string }[] = [
  { agent: "claude", model: "claude-native", api: "Anthropic Messages" },
  { agent: "codex", model: "codex-native", api: "OpenAI Responses" },
  {
    agent: "opencode",
    model: "opencode-openai",
    api: "OpenAI chat completions",
  },
  { agent: "opencode", model: "opencode-anthropic", api: "Anthropic Messages" },
];

for (const { agent, model, api } of CONTROL) {
  Deno.test({
    name: `control: ${agent} completes the task against the scripted upstream directly (${api}, no gateway)`,
    ignore: SKIP,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: () =>
      withAgentRun(
        agent,
        model,
        "normal",
        true,
        async ({ run, cwd, up, proxy }) => {
          await assertCompleted(run, cwd, up, proxy);
        },
      ),
  });
}

const CASES: { agent: Agent; alias: string; kind: string; endpoint: string }[] = [
  {
    agent: "claude",
    alias: "claude-native",
    kind: "native (anthropic passthrough)",
    endpoint: "messages",
  },
  {
    agent: "claude",
    alias: "claude-translated",
    kind: "translated (openai chat)",
    endpoint: "messages",
  },
  {
    agent: "codex",
    alias: "codex-native",
    kind: "native (responses passthrough)",
    endpoint: "responses",
  },
  {
    agent: "codex",
    alias: "codex-translated",
    kind: "translated (responses → chat)",
    endpoint: "responses",
  },
  {
    agent: "opencode",
    alias: "opencode-openai",
    kind: "OpenAI-compatible (chat)",
    endpoint: "chat",
  },
  {
    agent: "opencode",
    alias: "opencode-anthropic",
    kind: "Anthropic (messages passthrough)",
    endpoint: "messages",
  },
];

for (const { agent, alias, kind, endpoint } of CASES) {
  Deno.test({
    name: `${agent} writes ${FILE_NAME} with its own tool through ${alias}, ${kind}`,
    ignore: SKIP,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: () =>
      withAgentRun(
        agent,
        alias,
        "normal",
        false,
        async ({ run, cwd, gw, up, proxy }) => {
          await assertCompleted(run, cwd, up, proxy);
          // Every upstream answer the agent got went through the gateway and left a usage record.
          const upstreamCalls = up.requests.filter((r) => r.api !== "count_tokens").length;
          const served = (rows: UsageRow[]) => rows.filter((r) => r.alias === alias && r.status === 200);
          const rows = await pollUsageRows<UsageRow>(
            gw,
            (r) => served(r).length >= upstreamCalls,
            {
              tries: 250,
            },
          );
          assert.ok(
            served(rows).length >= upstreamCalls,
            `usage records: ${JSON.stringify(rows)}`,
          );
          assert.ok(
            served(rows).some((r) => r.endpoint === endpoint),
            `no ${endpoint} usage record: ${JSON.stringify(rows)}`,
          );
        },
      ),
  });
}

const CUT_CASES: { agent: Agent; alias: string }[] = [
  { agent: "claude", alias: "claude-native" },
  { agent: "codex", alias: "codex-native" },
  { agent: "opencode", alias: "opencode-openai" },
];

for (const { agent, alias } of CUT_CASES) {
  Deno.test({
    name: `${agent} reports an error when the upstream stream through ${alias} is cut mid-way`,
    ignore: SKIP,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: () =>
      withAgentRun(
        agent,
        alias,
        "cut",
        false,
        async ({ run, cwd, up, proxy }) => {
          const why = describe(run, proxy);
          assert.ok(
            !run.timedOut,
            `agent killed after ${CUT_TIMEOUT_MS} ms\n${why}`,
          );
          assert.ok(
            up.requests.some((r) => r.answer === "cut"),
            `no answer was cut (upstream answers: ${up.requests.map((r) => r.answer)})\n${why}`,
          );
          const saidError = /error|fail|disconnect/i.test(
            run.stdout + run.stderr,
          );
          assert.ok(
            run.code !== 0 || saidError,
            `agent neither failed nor reported an error\n${why}`,
          );
          assert.ok(!run.stdout.includes(FINAL_TEXT), why);
          const written = await Deno.stat(`${cwd}/${FILE_NAME}`).then(
            () => true,
            () => false,
          );
          assert.ok(
            !written,
            `${FILE_NAME} written although the tool call was cut`,
          );
        },
      ),
  });
}

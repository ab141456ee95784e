/**
 * The harness of the agent tests (agents_test.ts, codex_websocket_test.ts, gemini_cli_test.ts): whether the agents are installed,
 * the gateway config with every alias they use, running an agent with a timeout, one whole run (scripted
 * upstream, gateway, recording proxy, agent) and the checks of a completed task.
 *
 * @module
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { type Agent, agentCommand, type AgentOptions } from "./agent_commands.ts";
import { type ProxiedRequest, type RecordingProxy, startRecordingProxy } from "./recording_proxy.ts";
import {
  FILE_NAME,
  FILE_TEXT,
  FINAL_TEXT,
  type RecordedRequest,
  type ScriptedUpstream,
  startScriptedUpstream,
  summarize,
} from "./scripted_upstream.ts";

/** This directory, and where the agents' executables are. */
export const HERE = new URL(".", import.meta.url).pathname;
export const BIN = `${HERE}node_modules/.bin`;
/** How long a run may take. */
export const TIMEOUT_MS = 120_000;
/** opencode retries a failed stream six times with backoff (about 80 s) before it gives up. */
export const CUT_TIMEOUT_MS = 150_000;

/** Whether the agents are installed (tests/agents/node_modules). */
export function installed(): boolean {
  try {
    return Deno.statSync(`${HERE}node_modules`).isDirectory;
  } catch {
    return false;
  }
}

/** Skip the agent tests: the agents are not installed, and this is not CI. */
export const SKIP = !installed() && !Deno.env.get("CI");
if (SKIP) {
  console.warn(
    "agents_test: SKIPPED — tests/agents/node_modules is missing (run `npm install --prefix tests/agents`); " +
      "in CI (CI set) these tests run and fail without it.",
  );
}

/** A token whose daily budget is one token: its first answer spends it (gemini_cli_test.ts). */
export const BUDGET_TOKEN = "gw-agent-budget-0123456789abcdef";
const BUDGET_HASH = hashToken(BUDGET_TOKEN);

/** The gateway config: every alias the agents use, over the one scripted upstream. */
export function gatewayConfig(up: ScriptedUpstream): string {
  return `
providers:
  anthropic: { type: anthropic, base_url: "${up.url}", api_key: "sk-ant-fake-upstream-0123456789" }
  openai: { type: openai, base_url: "${up.url}/v1", api_key: "sk-fake-upstream-0123456789" }
  openai-native: { type: openai, base_url: "${up.url}/v1", api_key: "sk-fake-upstream-0123456789", native_responses: true }
  gemini: { type: gemini, base_url: "${up.url}/v1beta", api_key: "fake-gemini-upstream-key-0123456789" }
models:
  claude-native: { type: chat, targets: [ { provider: anthropic, model: claude-sonnet-4-5 } ] }
  claude-translated: { type: chat, targets: [ { provider: openai, model: gpt-fake-chat } ] }
  codex-native: { type: chat, targets: [ { provider: openai-native, model: gpt-fake-responses } ] }
  codex-translated: { type: chat, targets: [ { provider: openai, model: gpt-fake-chat } ] }
  opencode-openai: { type: chat, targets: [ { provider: openai, model: gpt-fake-chat } ] }
  opencode-anthropic: { type: chat, targets: [ { provider: anthropic, model: claude-sonnet-4-5 } ] }
  gemini-native: { type: chat, targets: [ { provider: gemini, model: gemini-fake } ] }
  gemini-translated: { type: chat, targets: [ { provider: openai, model: gpt-fake-chat } ] }
  gemini-claude: { type: chat, targets: [ { provider: anthropic, model: claude-sonnet-4-5 } ] }
  chat-unused: { type: chat, targets: [ { provider: openai, model: gpt-fake-chat } ] } # TEST_TOKENS_YAML's narrow token needs a chat-* alias
${TEST_TOKENS_YAML}
  - { name: agent-budget, sha256: ${BUDGET_HASH}, models: ["*"], budget: { tokens: 1, period: day } }
`;
}

/** What an agent run gave. */
export interface Run {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
  timedOut: boolean;
}

/** Runs `bin` with `args` in `cwd` with exactly `env` (plus PATH), killing it after `timeoutMs`. */
export async function runAgent(
  bin: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<Run> {
  if (!installed()) {
    throw new Error(
      `${BIN}/${bin} is missing: run \`npm install --prefix tests/agents\` before these tests`,
    );
  }
  const started = performance.now();
  const child = new Deno.Command(`${BIN}/${bin}`, {
    args,
    cwd,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      TERM: "dumb",
      NO_COLOR: "1",
      ...env,
    },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
  }, timeoutMs);
  const out = await child.output();
  clearTimeout(timer);
  const decoder = new TextDecoder();
  return {
    code: out.code,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
    ms: Math.round(performance.now() - started),
    timedOut,
  };
}

/** The columns of a usage record the agent tests look at. */
export interface UsageRow {
  alias: string;
  endpoint: string;
  status: number;
  outcome: string;
  error_code: string | null;
  provider: string;
  /** What a translated target went without, as `x-gateway-dropped` named it. */
  dropped: string | null;
}

/** Every answer of the gateway to the agent that was an error: status, path and body. */
export function gatewayErrors(proxy: RecordingProxy): string[] {
  return proxy.requests.filter((r) => r.status >= 400).map((r) =>
    `${r.status} ${r.method} ${r.path}: ${(r.error ?? "").slice(0, 600)}`
  );
}

/** Logs what a run sent and what the upstream saw; with `AGENTS_RECORD_DIR`, writes it there as JSON. */
export async function record(
  name: string,
  requests: RecordedRequest[],
  sent: ProxiedRequest[],
  run: Run,
  gw: TestGateway,
): Promise<void> {
  const summary = summarize(requests);
  const agentSent = summarize(
    sent.map((r) => ({ ...r, answer: String(r.status) })),
  );
  console.log(
    `[${name}] exit ${run.code}${run.timedOut ? " (killed at timeout)" : ""} in ${run.ms} ms; ` +
      `the agent sent (answer statuses from the gateway):\n${JSON.stringify(agentSent)}\n` +
      `the upstream saw:\n${JSON.stringify(summary)}`,
  );
  const dir = Deno.env.get("AGENTS_RECORD_DIR");
  if (dir) {
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(
      `${dir}/${name}.json`,
      JSON.stringify(
        { run, agentSent, summary, sent, gatewayLogs: gw.logs, requests },
        null,
        1,
      ),
    );
  }
}

/** What a check of a run gets. */
export interface RunContext {
  run: Run;
  cwd: string;
  gw: TestGateway;
  up: ScriptedUpstream;
  proxy: RecordingProxy;
}

/** How a run is set up beyond its agent's options. */
export interface RunOptions extends AgentOptions {
  /** Asked of the gateway before the agent starts (a budget spent). */
  before?: (gw: TestGateway) => Promise<void>;
}

/**
 * One run of `agent` on `alias` (mode `cut` tears the main answers down mid-stream); `direct` points the agent
 * at the scripted upstream itself, not the gateway (the control runs); `options` set the agent up further.
 */
export async function withAgentRun(
  agent: Agent,
  alias: string,
  mode: "normal" | "cut",
  direct: boolean,
  check: (ctx: RunContext) => Promise<void>,
  options: RunOptions = {},
): Promise<void> {
  const root = await Deno.realPath(
    await Deno.makeTempDir({ prefix: `agent-${agent}-` }),
  );
  const home = `${root}/home`;
  const cwd = `${root}/work`;
  await Deno.mkdir(home, { recursive: true });
  await Deno.mkdir(cwd, { recursive: true });
  const up = startScriptedUpstream({ workdir: cwd, mode });
  const gw = await startGateway(gatewayConfig(up));
  // The agent talks to the gateway (or, in control runs, the upstream) through a recording proxy.
  const proxy = startRecordingProxy(direct ? up.url : gw.url);
  try {
    await options.before?.(gw);
    const { bin, args, env } = await agentCommand(
      agent,
      alias,
      proxy,
      home,
      cwd,
      options,
    );
    const run = await runAgent(
      bin,
      args,
      cwd,
      env,
      mode === "cut" ? CUT_TIMEOUT_MS : TIMEOUT_MS,
    );
    const name = `${agent}-${alias}${mode === "cut" ? "-cut" : ""}${direct ? "-direct" : ""}${
      options.websocket ? "-websocket" : ""
    }`;
    await record(name, up.requests, proxy.requests, run, gw);
    await check({ run, cwd, gw, up, proxy });
  } finally {
    await proxy.stop();
    await gw.stop();
    await up.stop();
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
}

/** A run's exit, output and every error answer the agent got, for assertion messages. */
export function describe(run: Run, proxy: RecordingProxy): string {
  return `exit ${run.code}${run.timedOut ? " (killed at timeout)" : ""}\n--- stdout\n${
    run.stdout.slice(-3000)
  }\n` +
    `--- stderr\n${run.stderr.slice(-3000)}` +
    `\n--- error answers to the agent\n${gatewayErrors(proxy).join("\n")}`;
}

/** The checks of a completed task: exit 0, the file written by the agent's tool, the final answer printed. */
export async function assertCompleted(
  run: Run,
  cwd: string,
  up: ScriptedUpstream,
  proxy: RecordingProxy,
): Promise<void> {
  const why = describe(run, proxy);
  assert.ok(!run.timedOut, `agent killed after ${TIMEOUT_MS} ms\n${why}`);
  // Agents retry around some refusals (Claude Code resends without what a 400 named): none may happen.
  assert.deepEqual(
    gatewayErrors(proxy),
    [],
    `the agent got error answers\n${why}`,
  );
  assert.equal(run.code, 0, why);
  const written = await Deno.readTextFile(`${cwd}/${FILE_NAME}`).catch(() => undefined);
  assert.ok(written !== undefined, `${FILE_NAME} not written\n${why}`);
  assert.equal(written.trim(), FILE_TEXT);
  assert.ok(run.stdout.includes(FINAL_TEXT), why);
  const called = up.requests.filter((r) => r.answer === "tool_call");
  const finals = up.requests.filter((r) => r.answer === "final");
  assert.ok(
    called.length >= 1 && finals.length >= 1,
    `upstream answers: ${up.requests.map((r) => r.answer)}`,
  );
}

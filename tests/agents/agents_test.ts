/**
 * Real coding agents (Claude Code, Codex, opencode; pinned in tests/agents/package.json and installed with
 * `npm install --prefix tests/agents`) run non-interactively through the gateway against the scripted upstream
 * (scripted_upstream.ts), through a native alias and a translated one: each must call its own file-writing tool
 * (the file `hello.txt` appears in its temp working dir), print the final answer and exit 0, without getting a
 * single error answer on the way (agents retry around some 400s), and the gateway must have usage records of
 * the requests. A "cut" test per agent checks that a stream torn down mid-way makes the agent report an error.
 * Control runs point each agent at the scripted upstream directly, so a failure through the gateway is the
 * gateway's. The agent reaches the gateway through a recording proxy (recording_proxy.ts) that keeps what it
 * sent and every error body it got back.
 *
 * Skipped (with a message) only when tests/agents/node_modules is missing and `CI` is not set; in CI they run.
 * `AGENTS_RECORD_DIR=<dir>` writes what each agent sent (every request, and a summary) there as JSON.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";
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

const HERE = new URL(".", import.meta.url).pathname;
const BIN = `${HERE}node_modules/.bin`;
const TIMEOUT_MS = 120_000;
/** opencode retries a failed stream six times with backoff (about 80 s) before it gives up. */
const CUT_TIMEOUT_MS = 150_000;

function installed(): boolean {
  try {
    return Deno.statSync(`${HERE}node_modules`).isDirectory;
  } catch {
    return false;
  }
}

const SKIP = !installed() && !Deno.env.get("CI");
if (SKIP) {
  console.warn(
    "agents_test: SKIPPED — tests/agents/node_modules is missing (run `npm install --prefix tests/agents`); " +
      "in CI (CI set) these tests run and fail without it.",
  );
}

const TASK = `Create a file named ${FILE_NAME} in the current directory containing exactly the text ` +
  `"${FILE_TEXT}", using your file-writing tool. Then reply with one line: ${FINAL_TEXT}`;

/** The gateway config: every alias the agents use, over the one scripted upstream. */
function gatewayConfig(up: ScriptedUpstream): string {
  return `
providers:
  anthropic: { type: anthropic, base_url: "${up.url}", api_key: "sk-ant-fake-upstream-0123456789" }
  openai: { type: openai, base_url: "${up.url}/v1", api_key: "sk-fake-upstream-0123456789" }
  openai-native: { type: openai, base_url: "${up.url}/v1", api_key: "sk-fake-upstream-0123456789", native_responses: true }
models:
  claude-native: { type: chat, targets: [ { provider: anthropic, model: claude-sonnet-4-5 } ] }
  claude-translated: { type: chat, targets: [ { provider: openai, model: gpt-fake-chat } ] }
  codex-native: { type: chat, targets: [ { provider: openai-native, model: gpt-fake-responses } ] }
  codex-translated: { type: chat, targets: [ { provider: openai, model: gpt-fake-chat } ] }
  opencode-openai: { type: chat, targets: [ { provider: openai, model: gpt-fake-chat } ] }
  opencode-anthropic: { type: chat, targets: [ { provider: anthropic, model: claude-sonnet-4-5 } ] }
  chat-unused: { type: chat, targets: [ { provider: openai, model: gpt-fake-chat } ] } # TEST_TOKENS_YAML's narrow token needs a chat-* alias
${TEST_TOKENS_YAML}`;
}

/** What an agent run gave. */
interface Run {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
  timedOut: boolean;
}

/** Runs `bin` with `args` in `cwd` with exactly `env` (plus PATH), killing it after `timeoutMs`. */
async function runAgent(
  bin: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<Run> {
  if (!installed()) {
    throw new Error(`${BIN}/${bin} is missing: run \`npm install --prefix tests/agents\` before these tests`);
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

type Agent = "claude" | "codex" | "opencode";

/** Where an agent is pointed: the gateway, or (control runs) the scripted upstream itself. */
interface Endpoint {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** `url + "/v1"` */
  baseURL: string;
}

/** The command line and environment of `agent` for `alias`, after writing its config files under `home`. */
async function agentCommand(
  agent: Agent,
  alias: string,
  gw: Endpoint,
  home: string,
  cwd: string,
): Promise<{ bin: string; args: string[]; env: Record<string, string> }> {
  if (agent === "claude") {
    return {
      bin: "claude",
      args: [
        "-p",
        TASK,
        "--output-format",
        "text",
        "--model",
        alias,
        // As root, --dangerously-skip-permissions is refused: allow the Write tool instead.
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        "Write",
      ],
      env: {
        HOME: home,
        ANTHROPIC_BASE_URL: gw.url,
        ANTHROPIC_AUTH_TOKEN: TEST_TOKEN,
        ANTHROPIC_MODEL: alias,
        ANTHROPIC_SMALL_FAST_MODEL: alias,
        ANTHROPIC_DEFAULT_HAIKU_MODEL: alias,
        ANTHROPIC_DEFAULT_SONNET_MODEL: alias,
        ANTHROPIC_DEFAULT_OPUS_MODEL: alias,
        CLAUDE_CODE_SUBAGENT_MODEL: alias,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
        DISABLE_TELEMETRY: "1",
        DISABLE_ERROR_REPORTING: "1",
        DISABLE_BUG_COMMAND: "1",
        CLAUDE_CODE_MAX_RETRIES: "0",
      },
    };
  }
  if (agent === "codex") {
    const codexHome = `${home}/.codex`;
    await Deno.mkdir(codexHome, { recursive: true });
    await Deno.writeTextFile(
      `${codexHome}/config.toml`,
      `model = "${alias}"
model_provider = "gateway"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.gateway]
name = "gateway"
base_url = "${gw.baseURL}"
env_key = "GATEWAY_TOKEN"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`,
    );
    return {
      bin: "codex",
      args: [
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "--color",
        "never",
        "-C",
        cwd,
        "-m",
        alias,
        TASK,
      ],
      env: {
        HOME: home,
        CODEX_HOME: codexHome,
        GATEWAY_TOKEN: TEST_TOKEN,
        RUST_LOG: "error",
      },
    };
  }
  const config = `${home}/opencode.json`;
  const model = alias === "opencode-openai" ? "gw-openai/opencode-openai" : "gw-anthropic/opencode-anthropic";
  await Deno.writeTextFile(
    config,
    JSON.stringify(
      {
        $schema: "https://opencode.ai/config.json",
        autoupdate: false,
        share: "disabled",
        permission: { edit: "allow", bash: "allow", webfetch: "deny" },
        provider: {
          "gw-openai": {
            npm: "@ai-sdk/openai-compatible",
            name: "Gateway (OpenAI-compatible)",
            options: { baseURL: gw.baseURL, apiKey: TEST_TOKEN },
            models: {
              "opencode-openai": { name: "opencode-openai", tool_call: true },
            },
          },
          "gw-anthropic": {
            npm: "@ai-sdk/anthropic",
            name: "Gateway (Anthropic)",
            options: { baseURL: gw.baseURL, apiKey: TEST_TOKEN },
            models: {
              "opencode-anthropic": {
                name: "opencode-anthropic",
                tool_call: true,
              },
            },
          },
        },
        model,
        small_model: model,
      },
      null,
      2,
    ),
  );
  return {
    bin: "opencode",
    args: ["run", "--model", model, TASK],
    env: {
      HOME: home,
      XDG_CONFIG_HOME: `${home}/.config`,
      XDG_DATA_HOME: `${home}/.local/share`,
      XDG_CACHE_HOME: `${home}/.cache`,
      XDG_STATE_HOME: `${home}/.local/state`,
      OPENCODE_CONFIG: config,
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_MODELS_FETCH: "1",
      OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
      OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
      OPENCODE_DISABLE_SHARE: "1",
      OPENCODE_DISABLE_CLAUDE_CODE: "1",
      OPENCODE_DISABLE_EXTERNAL_SKILLS: "1",
    },
  };
}

interface UsageRow {
  alias: string;
  endpoint: string;
  status: number;
  outcome: string;
  error_code: string | null;
  provider: string;
}

/** Every answer of the gateway to the agent that was an error: status, path and body. */
function gatewayErrors(proxy: RecordingProxy): string[] {
  return proxy.requests.filter((r) => r.status >= 400).map((r) =>
    `${r.status} ${r.method} ${r.path}: ${(r.error ?? "").slice(0, 600)}`
  );
}

async function record(
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

/**
 * One run of `agent` on `alias` (mode `cut` tears the main answers down mid-stream); `direct` points the agent
 * at the scripted upstream itself, not the gateway (the control runs).
 */
async function withAgentRun(
  agent: Agent,
  alias: string,
  mode: "normal" | "cut",
  direct: boolean,
  check: (
    ctx: {
      run: Run;
      cwd: string;
      gw: TestGateway;
      up: ScriptedUpstream;
      proxy: RecordingProxy;
    },
  ) => Promise<void>,
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
    const target = proxy;
    const { bin, args, env } = await agentCommand(
      agent,
      alias,
      target,
      home,
      cwd,
    );
    const run = await runAgent(
      bin,
      args,
      cwd,
      env,
      mode === "cut" ? CUT_TIMEOUT_MS : TIMEOUT_MS,
    );
    const name = `${agent}-${alias}${mode === "cut" ? "-cut" : ""}${direct ? "-direct" : ""}`;
    await record(name, up.requests, proxy.requests, run, gw);
    await check({ run, cwd, gw, up, proxy });
  } finally {
    await proxy.stop();
    await gw.stop();
    await up.stop();
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
}

function describe(run: Run, proxy: RecordingProxy): string {
  return `exit ${run.code}${run.timedOut ? " (killed at timeout)" : ""}\n--- stdout\n${
    run.stdout.slice(-3000)
  }\n` +
    `--- stderr\n${run.stderr.slice(-3000)}` +
    `\n--- error answers to the agent\n${gatewayErrors(proxy).join("\n")}`;
}

/** The checks of a completed task: exit 0, the file written by the agent's tool, the final answer printed. */
async function assertCompleted(
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
  { agent: "claude", alias: "claude-native", kind: "native (anthropic passthrough)", endpoint: "messages" },
  { agent: "claude", alias: "claude-translated", kind: "translated (openai chat)", endpoint: "messages" },
  { agent: "codex", alias: "codex-native", kind: "native (responses passthrough)", endpoint: "responses" },
  { agent: "codex", alias: "codex-translated", kind: "translated (responses → chat)", endpoint: "responses" },
  { agent: "opencode", alias: "opencode-openai", kind: "OpenAI-compatible (chat)", endpoint: "chat" },
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
      withAgentRun(agent, alias, "normal", false, async ({ run, cwd, gw, up, proxy }) => {
        await assertCompleted(run, cwd, up, proxy);
        // Every upstream answer the agent got went through the gateway and left a usage record.
        const upstreamCalls = up.requests.filter((r) => r.api !== "count_tokens").length;
        const served = (rows: UsageRow[]) => rows.filter((r) => r.alias === alias && r.status === 200);
        const rows = await pollUsageRows<UsageRow>(gw, (r) => served(r).length >= upstreamCalls, {
          tries: 250,
        });
        assert.ok(served(rows).length >= upstreamCalls, `usage records: ${JSON.stringify(rows)}`);
        assert.ok(
          served(rows).some((r) => r.endpoint === endpoint),
          `no ${endpoint} usage record: ${JSON.stringify(rows)}`,
        );
      }),
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
      withAgentRun(agent, alias, "cut", false, async ({ run, cwd, up, proxy }) => {
        const why = describe(run, proxy);
        assert.ok(!run.timedOut, `agent killed after ${CUT_TIMEOUT_MS} ms\n${why}`);
        assert.ok(
          up.requests.some((r) => r.answer === "cut"),
          `no answer was cut (upstream answers: ${up.requests.map((r) => r.answer)})\n${why}`,
        );
        const saidError = /error|fail|disconnect/i.test(run.stdout + run.stderr);
        assert.ok(run.code !== 0 || saidError, `agent neither failed nor reported an error\n${why}`);
        assert.ok(!run.stdout.includes(FINAL_TEXT), why);
        const written = await Deno.stat(`${cwd}/${FILE_NAME}`).then(() => true, () => false);
        assert.ok(!written, `${FILE_NAME} written although the tool call was cut`);
      }),
  });
}

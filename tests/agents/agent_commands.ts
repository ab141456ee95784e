/**
 * How each real coding agent is started for the agent tests (agents_test.ts, codex_websocket_test.ts,
 * gemini_cli_test.ts): the
 * task it is given, and its command line, environment and config files for an alias of the gateway (or, in
 * control runs, for the scripted upstream itself).
 *
 * @module
 */
import { TEST_TOKEN } from "../helpers/gateway.ts";
import { FILE_NAME, FILE_TEXT, FINAL_TEXT } from "./scripted_upstream.ts";

/** The task every agent is given. */
export const TASK = `Create a file named ${FILE_NAME} in the current directory containing exactly the text ` +
  `"${FILE_TEXT}", using your file-writing tool. Then reply with one line: ${FINAL_TEXT}`;

export type Agent = "claude" | "codex" | "opencode" | "gemini";

/** Where an agent is pointed: the gateway, or (control runs) the scripted upstream itself. */
export interface Endpoint {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** `url + "/v1"` */
  baseURL: string;
}

/** How an agent is set up beyond its alias. */
export interface AgentOptions {
  /**
   * Codex only: the provider declares `supports_websockets = true`, so Codex speaks the Responses API over a
   * WebSocket (`GET /v1/responses` upgraded; it falls back to HTTP POSTs for the rest of the session when that
   * fails, saying "Falling back from WebSockets to HTTPS transport" on stderr).
   */
  websocket?: boolean;
  /** Gemini CLI only: the token it sends (TEST_TOKEN by default). */
  token?: string;
  /** Gemini CLI only: its `maxAttempts` for a failed request (1 by default: no retries). */
  maxAttempts?: number;
}

/** The command line and environment of `agent` for `alias`, after writing its config files under `home`. */
export async function agentCommand(
  agent: Agent,
  alias: string,
  gw: Endpoint,
  home: string,
  cwd: string,
  options: AgentOptions = {},
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
${options.websocket ? "supports_websockets = true\n" : ""}`,
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
  if (agent === "gemini") return await geminiCommand(alias, gw, home, options);
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

/**
 * Gemini CLI, headless (`-p`), every tool call approved (`--approval-mode yolo`), on the Gemini API at the
 * gateway's root (`GOOGLE_GEMINI_BASE_URL`, no `/v1beta`; the token as `GEMINI_API_KEY`, sent as
 * `x-goog-api-key`). The auth type must be `gemini-api-key` in settings: with only `GOOGLE_GEMINI_BASE_URL` set,
 * 0.61.0 picks its `gateway` auth type, which its own startup check then refuses ("Invalid auth method
 * selected.", exit 41). Its settings file also stops telemetry, usage statistics, update checks, folder trust and
 * IDE prompts, and the retries of a failed request (one attempt, as the other agents run without retries, unless
 * `options.maxAttempts` says more).
 */
async function geminiCommand(
  alias: string,
  gw: Endpoint,
  home: string,
  options: AgentOptions,
): Promise<{ bin: string; args: string[]; env: Record<string, string> }> {
  const dir = `${home}/.gemini`;
  await Deno.mkdir(dir, { recursive: true });
  // It writes an error report (`gemini-client-error-*.json`) to the temp dir: keep it in the run's dir.
  await Deno.mkdir(`${home}/tmp`, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/settings.json`,
    JSON.stringify(
      {
        general: {
          enableAutoUpdate: false,
          enableAutoUpdateNotification: false,
          checkpointing: { enabled: false },
          maxAttempts: options.maxAttempts ?? 1,
          retryFetchErrors: false,
        },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false, logPrompts: false },
        model: { name: alias },
        security: { auth: { selectedType: "gemini-api-key" }, folderTrust: { enabled: false } },
        ide: { enabled: false },
      },
      null,
      2,
    ),
  );
  return {
    bin: "gemini",
    args: ["-p", TASK, "--model", alias, "--approval-mode", "yolo", "--output-format", "text"],
    env: {
      HOME: home,
      GOOGLE_GEMINI_BASE_URL: gw.url,
      GEMINI_API_KEY: options.token ?? TEST_TOKEN,
      GEMINI_CLI_NO_RELAUNCH: "true",
      TMPDIR: `${home}/tmp`,
    },
  };
}

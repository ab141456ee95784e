/**
 * docs/agents.md's recipes are the settings the agent tests run the real agents with (agent_commands.ts), test
 * flags aside: every environment variable of the Claude Code recipe is one the tests set, every key of the
 * Codex provider block is in the config.toml the tests write with the same value (the address aside), and the
 * opencode providers use the packages and options the tests use. A recipe that drifts from what was tested
 * fails here.
 */
import assert from "node:assert/strict";
import { agentCommand } from "./agent_commands.ts";

const DOC = Deno.readTextFileSync(new URL("../../docs/agents.md", import.meta.url));
const GATEWAY = { url: "http://127.0.0.1:9", baseURL: "http://127.0.0.1:9/v1" };

/** The first fenced block of `lang` after `heading`. */
function block(heading: string, lang: string): string {
  const from = DOC.indexOf(`## ${heading}`);
  assert.ok(from >= 0, heading);
  const start = DOC.indexOf("```" + lang + "\n", from);
  assert.ok(start >= 0, `${heading}: a ${lang} block`);
  const body = start + lang.length + 4;
  return DOC.slice(body, DOC.indexOf("```", body));
}

async function commandOf(agent: "claude" | "codex" | "opencode" | "gemini", options = {}) {
  const home = await Deno.makeTempDir();
  const command = await agentCommand(agent, "opencode-openai", GATEWAY, home, home, options);
  return { home, command };
}

Deno.test("agent recipes: Claude Code's variables are the ones the tests set", async () => {
  const exported = [...block("Claude Code", "sh").matchAll(/^export (\w+)=(\S+)/gm)];
  assert.ok(exported.length >= 3);
  const { home, command } = await commandOf("claude");
  for (const [, name, value] of exported) {
    assert.ok(name in command.env, `the tests set ${name}`);
    if (name === "ANTHROPIC_BASE_URL") {
      assert.ok(!value.endsWith("/v1") && !command.env[name].endsWith("/v1"), "the gateway's root, no /v1");
    }
  }
  await Deno.remove(home, { recursive: true });
});

Deno.test("agent recipes: Codex's provider block is the one the tests write", async () => {
  const doc = block("Codex", "toml");
  const { home, command } = await commandOf("codex", { websocket: true });
  const written = await Deno.readTextFile(`${command.env.CODEX_HOME}/config.toml`);
  const pairs = (toml: string) =>
    new Map([...toml.matchAll(/^(\w+)\s*=\s*("[^"]*"|\w+)/gm)].map(([, key, value]) => [key, value]));
  const tested = pairs(written);
  for (const [key, value] of pairs(doc)) {
    assert.ok(tested.has(key), `the tests set ${key}`);
    if (key === "base_url") assert.ok(value.endsWith('/v1"') && tested.get(key)!.endsWith('/v1"'));
    else if (key !== "model") assert.equal(tested.get(key), value, key);
  }
  assert.ok(doc.includes("[model_providers.gateway]") && written.includes("[model_providers.gateway]"));
  await Deno.remove(home, { recursive: true });
});

Deno.test("agent recipes: opencode's providers use the packages and options the tests use", async () => {
  type Providers = Record<string, { npm: string; options: Record<string, string> }>;
  const doc = JSON.parse(block("opencode", "json")).provider as Providers;
  const { home, command } = await commandOf("opencode");
  const tested = JSON.parse(await Deno.readTextFile(command.env.OPENCODE_CONFIG)).provider as Providers;
  const shape = (providers: Providers) =>
    Object.values(providers).map((
      p,
    ) => [p.npm, Object.keys(p.options).sort(), p.options.baseURL.endsWith("/v1")])
      .sort();
  assert.deepEqual(shape(doc), shape(tested));
  await Deno.remove(home, { recursive: true });
});

Deno.test("agent recipes: Gemini CLI's variables and auth setting are the ones the tests use", async () => {
  const exported = [...block("Gemini CLI", "sh").matchAll(/^export (\w+)=(\S+)/gm)];
  const { home, command } = await commandOf("gemini");
  for (const [, name, value] of exported) {
    assert.ok(name in command.env, `the tests set ${name}`);
    if (name === "GOOGLE_GEMINI_BASE_URL") {
      assert.ok(!value.includes("/v1beta") && !command.env[name].includes("/v1beta"));
    }
  }
  const doc = JSON.parse(block("Gemini CLI", "json"));
  const tested = JSON.parse(await Deno.readTextFile(`${command.env.HOME}/.gemini/settings.json`));
  assert.deepEqual(doc.security.auth, tested.security.auth);
  await Deno.remove(home, { recursive: true });
});

/**
 * Acceptance for the admin console in headless Chromium (Debian's `chromium` driven by `playwright-core`): a
 * gateway on a real socket, a seeded run of real requests through it with the `openai` SDK (allowed calls, a
 * content-rule denial, an rpm denial, a forbidden alias, upstream errors, a target failing until it is
 * ejected, a team spending past an alert threshold), then a browser session (helpers/console_browser_steps.ts,
 * in its own process; see helpers/browser_process.ts for why) that checks: only the login page before signing
 * in, wrong and client tokens refused, the overview charts and breakdowns populated, a token drilled into,
 * denials with their rules, the ejected target in live state, the team's spend and members, the alerts sent
 * and their deliveries, and a token created in the console working with the SDK until it is revoked there. A
 * screenshot of every view is saved under `test-results/console/` (`console-binary/` when run against the
 * single binary, `GATEWAY_BIN`). A second session checks what operators make through the admin API
 * (helpers/console_admin_steps.ts), a third the usage of a token and a team gone from the config file
 * (helpers/console_gone_steps.ts).
 *
 * Off CI the test is skipped when /usr/bin/chromium is missing; with `CI=true` it runs and fails instead.
 */
import {
  CHROMIUM_PATH,
  hasChromium,
  runBrowserScript,
  screenshotDir,
  skipBrowserTests,
} from "../helpers/browser_process.ts";
import { seedRequests, seedSpend, startConsoleGateway } from "../helpers/console_seed.ts";
import { ADMIN_TOKEN, GONE_TEAM_ID } from "../helpers/console_fixture.ts";
import { makeRecord } from "../helpers/usage.ts";
import { waitForUsage } from "../helpers/usage_rows.ts";

Deno.test({
  name:
    "console: sign in, read the seeded run, find denials and the ejected target, issue and revoke a token",
  ignore: skipBrowserTests(),
  async fn(t) {
    // Reached without the browser only in CI, where a missing browser is a failure, not a skip.
    if (!hasChromium()) throw new Error(`${CHROMIUM_PATH} is missing: apt-get install -y chromium`);
    // Against the single binary (GATEWAY_BIN, in CI) the screenshots go beside the Deno run's, not over them.
    const shots = screenshotDir(Deno.env.get("GATEWAY_BIN") ? "console-binary" : "console");
    await Deno.remove(shots, { recursive: true }).catch(() => {});
    await Deno.mkdir(shots, { recursive: true });
    const { gw, stop } = await startConsoleGateway({ spend: true });
    try {
      const sent = await seedRequests(gw) + await seedSpend(gw);
      await waitForUsage(gw, sent, { adminToken: ADMIN_TOKEN });
      await runBrowserScript(t, new URL("../helpers/console_browser_steps.ts", import.meta.url), {
        CONSOLE_URL: gw.url,
        CONSOLE_SHOTS: shots,
      });
    } finally {
      await stop();
    }
  },
});

Deno.test({
  name:
    "console: what operators make through the admin API (audit trail, rotation, re-issued name, explain, odd text)",
  ignore: skipBrowserTests(),
  async fn(t) {
    if (!hasChromium()) throw new Error(`${CHROMIUM_PATH} is missing: apt-get install -y chromium`);
    const shots = screenshotDir(Deno.env.get("GATEWAY_BIN") ? "console-admin-binary" : "console-admin");
    await Deno.remove(shots, { recursive: true }).catch(() => {});
    await Deno.mkdir(shots, { recursive: true });
    // web-app's content-rule denial of three days ago: outside the policy view's last 24 hours.
    const old = makeRecord(0, {
      time: new Date(Date.now() - 3 * 86_400_000).toISOString(),
      token: "web-app",
      token_id: "cfg_web-app",
      environment: "production",
      provider: null,
      upstream_model: null,
      status: 400,
      outcome: "deny",
      rule: "alias.content:secrets",
      prompt_tokens: 0,
      completion_tokens: 0,
      cost: 0,
    });
    const { gw, stop } = await startConsoleGateway({ records: [{ ...old, uid: "old-denial" }] });
    try {
      await runBrowserScript(t, new URL("../helpers/console_admin_steps.ts", import.meta.url), {
        CONSOLE_URL: gw.url,
        CONSOLE_SHOTS: shots,
      });
    } finally {
      await stop();
    }
  },
});

Deno.test({
  name:
    "console: usage of a token and a team that are gone from the config file (names, Details, marked text)",
  ignore: skipBrowserTests(),
  async fn(t) {
    if (!hasChromium()) throw new Error(`${CHROMIUM_PATH} is missing: apt-get install -y chromium`);
    const shots = screenshotDir(Deno.env.get("GATEWAY_BIN") ? "console-gone-binary" : "console-gone");
    await Deno.remove(shots, { recursive: true }).catch(() => {});
    await Deno.mkdir(shots, { recursive: true });
    // An hour ago, in the overview's last 24 hours: two requests of `retired-bot`, a token of the config file
    // (team `sunset`, of the file too) that has since been removed from it with its team; and one of web-app
    // in a team made through the admin API whose name holds a right-to-left override and markup (the
    // gateway's team names never do; the console must show any a record holds as text, visibly).
    const at = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();
    const retired = (i: number) =>
      makeRecord(i, {
        time: at(60 + i),
        token: "retired-bot",
        token_id: "cfg_retired-bot",
        team: "sunset",
        team_id: GONE_TEAM_ID,
      });
    const odd = makeRecord(3, {
      time: at(30),
      token: "web-app",
      token_id: "cfg_web-app",
      team: "\u202Elanruoj<b>x</b>",
      team_id: "tm_0123456789abcdef01234567",
    });
    const records = [retired(1), retired(2), odd].map((r) => ({ ...r, uid: `gone-${r.request_id}` }));
    const { gw, stop } = await startConsoleGateway({ records });
    try {
      await runBrowserScript(t, new URL("../helpers/console_gone_steps.ts", import.meta.url), {
        CONSOLE_URL: gw.url,
        CONSOLE_SHOTS: shots,
      });
    } finally {
      await stop();
    }
  },
});

Deno.test({
  name: "console: costs far below 1 drawn to scale, and a token list longer than a page says so and pages on",
  ignore: skipBrowserTests(),
  async fn(t) {
    if (!hasChromium()) throw new Error(`${CHROMIUM_PATH} is missing: apt-get install -y chromium`);
    const shots = screenshotDir(Deno.env.get("GATEWAY_BIN") ? "console-scale-binary" : "console-scale");
    await Deno.remove(shots, { recursive: true }).catch(() => {});
    await Deno.mkdir(shots, { recursive: true });
    // In the overview's last 24 hours: 0.0001 twice in one hour, 0.0003 in another (0.0005 in all), nothing else.
    const at = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();
    const records = [[180, 0.0001], [175, 0.0001], [60, 0.0003]].map(([minutes, cost], i) => ({
      ...makeRecord(i, { time: at(minutes), token: "web-app", token_id: "cfg_web-app", cost }),
      uid: `scale-${i}`,
    }));
    const { gw, stop } = await startConsoleGateway({ records });
    try {
      await runBrowserScript(t, new URL("../helpers/console_scale_steps.ts", import.meta.url), {
        CONSOLE_URL: gw.url,
        CONSOLE_SHOTS: shots,
      });
    } finally {
      await stop();
    }
  },
});

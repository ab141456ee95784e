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
 * single binary, `GATEWAY_BIN`).
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
import { ADMIN_TOKEN } from "../helpers/console_fixture.ts";
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

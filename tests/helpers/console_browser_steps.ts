/**
 * The console's browser session, run by tests/admin/console_browser_test.ts in a process of its own (see
 * helpers/browser_process.ts for why): Chromium signs in to the console of the gateway at `CONSOLE_URL`, which
 * the test started and seeded, and checks every view an operator uses; each step is reported to the test, and a
 * screenshot of each view goes to `CONSOLE_SHOTS`.
 *
 * @module
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import type { Page } from "playwright-core";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { launchBrowser, type TestBrowser } from "./browser.ts";
import {
  figureByCaption,
  heading,
  nav,
  openView,
  type Row,
  signIn,
  step,
  tableByCaption,
  waitForChart,
  waitForRows,
  waitUntil,
} from "./console_page.ts";
import {
  ADMIN_TOKEN,
  ALERT_HOOK_PATH,
  ALERT_SECRET,
  ask,
  CI_BOT_TOKEN,
  PAYMENTS_API_TOKEN,
  PAYMENTS_BATCH_TOKEN,
  sdk,
  SECRET_PROMPT,
  WEB_APP_TOKEN,
} from "./console_fixture.ts";

const CHARTS = ["Requests", "Tokens", "Cost", "Error rate", "Latency"];
const BREAKDOWNS = ["By token", "By team", "By environment", "By alias", "By provider", "By upstream model"];

/**
 * Text the console must never show: client secrets, their hashes, an upstream key, prompt text, the alert
 * receiver's signing secret and the key in its URL's path.
 */
const NEVER_SHOWN = [
  ...[ADMIN_TOKEN, CI_BOT_TOKEN, WEB_APP_TOKEN, PAYMENTS_API_TOKEN, PAYMENTS_BATCH_TOKEN].flatMap((t) => [
    t,
    hashToken(t),
  ]),
  "sk-upstream-secret-0123456789",
  SECRET_PROMPT,
  ALERT_SECRET,
  ALERT_HOOK_PATH,
];

async function assertNothingSecret(page: Page, extra: string[] = []): Promise<void> {
  const text = await page.locator("body").innerText();
  const html = await page.content();
  for (const secret of [...NEVER_SHOWN, ...extra]) {
    assert.ok(!text.includes(secret) && !html.includes(secret), `the page shows "${secret.slice(0, 24)}…"`);
  }
}

/** Only the login page: its heading, field and button, and no navigation, view heading or table. */
async function assertOnlyLogin(page: Page): Promise<void> {
  await heading(page, "Gateway console").waitFor();
  await page.getByLabel("Admin token", { exact: true }).waitFor();
  assert.equal(await page.getByLabel("Admin token", { exact: true }).getAttribute("type"), "password");
  assert.equal(
    await page.getByRole("navigation", { name: "Console" }).count(),
    0,
    "navigation before sign-in",
  );
  assert.deepEqual(
    (await page.getByRole("heading", { level: 1 }).allInnerTexts()).map((h) => h.trim()),
    ["Gateway console"],
  );
  assert.equal(await page.getByRole("table").count(), 0, "a table before sign-in");
  assert.equal(await page.getByRole("figure").count(), 0, "a chart before sign-in");
}

const hasValue = (row: Row, value: string) => Object.values(row).includes(value);

async function session(url: string, shots: string, browser: TestBrowser): Promise<void> {
  const page = browser.page;
  page.setDefaultTimeout(10_000);
  // The console must work offline: every request it makes goes to the gateway.
  const foreign: string[] = [];
  const scriptErrors: string[] = [];
  page.on("request", (r) => {
    const target = r.url();
    if (!target.startsWith(url) && !/^(data|blob|about):/.test(target)) foreign.push(target);
  });
  page.on("pageerror", (err) => scriptErrors.push(String(err)));

  let signedIn = false;
  /** A view's step: runs `fn` (unless signing in failed), then saves the view's screenshot either way. */
  const view = (name: string, shot: string, fn: () => Promise<void>, needsSignIn = true) =>
    step(name, async () => {
      if (needsSignIn && !signedIn) throw new Error("not signed in (an earlier step failed)");
      try {
        await fn();
      } finally {
        // A missing screenshot is worth a warning, not a second failure on top of the step's own.
        await page.screenshot({ path: `${shots}${shot}.png`, fullPage: true }).catch((err) =>
          console.error(`screenshot ${shot} failed: ${err}`)
        );
      }
    });

  await view("before sign-in only the login page shows, on any route", "01-login", async () => {
    await page.goto(`${url}/console#/tokens`);
    await assertOnlyLogin(page);
    await page.goto(`${url}/console`);
    await assertOnlyLogin(page);
  }, false);

  await view("a wrong token is refused with an alert", "02-login-wrong-token", async () => {
    await signIn(page, "gw-not-a-real-admin-token-0123456789");
    await page.getByRole("alert").waitFor();
    await assertOnlyLogin(page);
  }, false);

  await view("a client token cannot sign in", "03-login-client-token", async () => {
    await page.goto(`${url}/console`);
    await signIn(page, CI_BOT_TOKEN);
    await page.getByRole("alert").waitFor();
    await assertOnlyLogin(page);
    assert.equal(await page.evaluate("sessionStorage.getItem('gateway.adminToken')"), null);
  }, false);

  await view("the admin token signs in; kept only in the session", "04-signed-in", async () => {
    // By keyboard this time: type the token, Tab to the button, press Enter.
    await page.getByLabel("Admin token", { exact: true }).fill(ADMIN_TOKEN);
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate("document.activeElement?.textContent?.trim()"), "Sign in");
    await page.keyboard.press("Enter");
    await page.getByRole("navigation", { name: "Console" }).waitFor();
    signedIn = true;
    const links = [
      "Overview",
      "Policy",
      "Requests",
      "Live state",
      "Tokens",
      "Teams",
      "Audit",
      "Alerts",
      "Explain",
    ];
    for (const link of links) {
      assert.equal(await nav(page, link).count(), 1, `nav link ${link}`);
    }
    await page.getByRole("button", { name: "Sign out", exact: true }).waitFor();
    assert.equal(await page.evaluate("sessionStorage.getItem('gateway.adminToken')"), ADMIN_TOKEN);
    assert.equal(await page.evaluate("JSON.stringify(localStorage).includes('gw-')"), false);
    assert.deepEqual((await browser.context.cookies()).filter((c) => c.value.includes(ADMIN_TOKEN)), []);
  }, false);

  await view("overview: charts and breakdowns show the seeded run", "05-overview", async () => {
    await openView(page, "Overview");
    await page.getByLabel("Time range", { exact: true }).selectOption("24h");
    for (const caption of CHARTS) await waitForChart(page, caption);
    for (const caption of BREAKDOWNS) await waitForRows(page, caption, (rows) => rows.length > 0);
    const byToken = await waitForRows(page, "By token", (rows) => rows.length >= 2);
    assert.ok(byToken.some((r) => hasValue(r, "ci-bot")) && byToken.some((r) => hasValue(r, "web-app")));
    const byAlias = await waitForRows(page, "By alias", (rows) => rows.length >= 3);
    for (const alias of ["chat-default", "chat-fallback", "chat-broken", "embed-default"]) {
      assert.ok(byAlias.some((r) => hasValue(r, alias)), `By alias: ${alias}`);
    }
    // The cache columns: no alias here has a cache, so nothing looked it up (no rate, not 0%), nothing saved.
    for (const row of [...byToken, ...byAlias]) {
      assert.deepEqual([row["Hit rate"], row["Saved"]], ["—", "0"], JSON.stringify(row));
    }
    const summary = await page.locator("dl").first().innerText();
    const terms = ["Requests", "Tokens", "Cost", "Cache hit rate", "Saved by cache", "Error rate"];
    for (const term of [...terms, "p50 latency", "p99 latency"]) {
      assert.ok(summary.includes(term), `summary: ${term}`);
    }
    await assertNothingSecret(page);
  });

  await view(
    "overview: drilling into a token filters everything to it",
    "06-overview-ci-bot",
    async () => {
      await tableByCaption(page, "By token").getByRole("link", { name: "ci-bot", exact: true }).click();
      // By the token's id (a config token's is `cfg_<name>`), not by its name.
      await page.getByText("token_id: cfg_ci-bot", { exact: true }).waitFor();
      await page.getByRole("button", { name: "Clear filters", exact: true }).waitFor();
      assert.match(page.url(), /[#?&].*token_id=cfg_ci-bot/);
      const byToken = await waitForRows(page, "By token", (rows) => rows.length === 1);
      assert.ok(hasValue(byToken[0], "ci-bot"));
      const byEnvironment = await waitForRows(page, "By environment", (rows) => rows.length === 1);
      assert.ok(hasValue(byEnvironment[0], "staging"), "ci-bot runs in staging only");
      await waitForChart(page, "Requests");
    },
  );

  await view("overview: Clear filters shows every token again", "06b-overview-cleared", async () => {
    await page.getByRole("button", { name: "Clear filters", exact: true }).click();
    await waitForRows(page, "By token", (rows) => rows.length >= 2);
    assert.equal(
      await page.getByText("token_id: cfg_ci-bot", { exact: true }).count(),
      0,
      "the chip is gone",
    );
  });

  await view(
    "a token's page: config tokens are read-only, with their requests",
    "07-token-ci-bot",
    async () => {
      const row = tableByCaption(page, "By token").getByRole("row").filter({
        has: page.getByRole("link", { name: "ci-bot", exact: true }),
      });
      const details = row.getByRole("link", { name: "Details", exact: true });
      // In sight as the page opens, not past the table's scroll edge (a half-width table at 1280 px).
      const [shown, frame] = await Promise.all([
        details.boundingBox(),
        tableByCaption(page, "By token").locator("xpath=..").boundingBox(),
      ]);
      assert.ok(
        shown && frame && shown.x + shown.width <= frame.x + frame.width,
        JSON.stringify({ shown, frame }),
      );
      await details.click();
      await heading(page, "ci-bot").waitFor();
      await page.getByText("Defined in the config file (read-only)").waitFor();
      assert.equal(await page.getByRole("button", { name: "Revoke", exact: true }).count(), 0);
      assert.equal(await page.getByRole("button", { name: "Rotate", exact: true }).count(), 0);
      const recent = await waitForRows(page, "Recent requests", (rows) => rows.length > 0);
      assert.ok(!recent.some((r) => hasValue(r, "web-app")), "only ci-bot's requests");
      await page.getByRole("link", { name: "Explain", exact: true }).last().waitFor();
    },
  );

  await view("policy: denials by rule and the recent denied requests", "08-policy", async () => {
    await openView(page, "Policy");
    await waitForChart(page, "Denials over time");
    const byRule = await waitForRows(page, "Denials by rule", (rows) => rows.length >= 2);
    for (const rule of ["alias.content:secrets", "token.rpm"]) {
      assert.ok(byRule.some((r) => hasValue(r, rule)), `Denials by rule: ${rule}`);
    }
    const modified = await waitForRows(page, "Modifications by rule", (rows) => rows.length > 0);
    assert.ok(
      modified.some((r) => hasValue(r, "alias.content:email")),
      "Modifications by rule: the redaction",
    );
    const byToken = await waitForRows(page, "Denials by token", (rows) => rows.length > 0);
    assert.ok(byToken.some((r) => hasValue(r, "web-app")));
    const recent = await waitForRows(page, "Recent denied requests", (rows) => rows.length >= 2);
    const contentDenial = recent.find((r) => r.Rule === "alias.content:secrets");
    assert.ok(contentDenial, "the content-rule denial is listed");
    assert.equal(contentDenial.Token, "web-app");
    assert.equal(contentDenial.Alias, "chat-default");
    assert.equal(contentDenial.Status, "400");
    assert.ok(recent.some((r) => r.Rule === "token.rpm" && r.Status === "429"));
    await assertNothingSecret(page);
  });

  await view("request log: filtered to denials, with their rules", "09-requests-deny", async () => {
    await openView(page, "Requests");
    await waitForRows(page, "Request log", (rows) => rows.length > 0);
    await page.getByLabel("Outcome", { exact: true }).selectOption("deny");
    await page.getByRole("button", { name: "Apply", exact: true }).click();
    const denied = await waitForRows(
      page,
      "Request log",
      (rows) => rows.length >= 2 && rows.every((r) => r.Outcome === "deny"),
    );
    const denial = denied.find((r) => r.Rule === "alias.content:secrets");
    assert.ok(denial, "the content-rule denial is in the log");
    assert.equal(denial.Token, "web-app");
    assert.equal(denial.Status, "400");
    // The same filter from the address, as a bookmarked link would open it.
    await page.goto(`${url}/console#/requests?outcome=deny&token=web-app`);
    await heading(page, "Requests").waitFor();
    await waitForRows(
      page,
      "Request log",
      (rows) => rows.length >= 2 && rows.every((r) => r.Outcome === "deny" && r.Token === "web-app"),
    );
    await assertNothingSecret(page);
  });

  await view("live state: the failing target is ejected", "10-live-state", async () => {
    await openView(page, "Live state");
    const targets = await waitForRows(
      page,
      "Targets",
      (rows) => rows.some((r) => r.Alias === "chat-fallback"),
    );
    const flaky = targets.find((r) => r.Alias === "chat-fallback" && r.Provider === "flaky");
    assert.ok(flaky, "chat-fallback's flaky target is listed");
    assert.match(flaky.State, /^ejected\b/);
    assert.equal(flaky.Model, "always-fails");
    const fallback = targets.find((r) => r.Alias === "chat-fallback" && r.Provider === "local");
    assert.match(fallback?.State ?? "", /^healthy\b/);
    await page.getByRole("heading", { level: 2, name: "Configuration", exact: true }).waitFor();
    await page.getByText("Last reload").first().waitFor();
    // The shared stores as /readyz reports them: one node on the embedded defaults.
    const facts = await page.locator('dl[aria-label="Configuration"]').innerText();
    assert.match(facts, /Counters\s+memory: ok/);
    assert.match(facts, /Usage database\s+(sqlite|postgres): ok/);
    assert.match(facts, /Response cache\s+memory: ok/);
    await assertNothingSecret(page);
  });

  await view("teams: the payments team's spend, rules and members", "10b-teams", async () => {
    await openView(page, "Teams");
    const team = page.getByRole("region", { name: "payments", exact: true });
    await team.waitFor();
    assert.ok((await team.innerText()).includes("Card payments squad"), "the team's description");
    const facts = await team.getByLabel("Team payments", { exact: true }).innerText();
    for (
      const fact of ["1,000 tokens / month", "600 / 1,000 tokens (60%)", "400 tokens", "600 rpm", "chat-*"]
    ) {
      assert.ok(facts.includes(fact), `team payments: "${fact}" in ${JSON.stringify(facts)}`);
    }
    assert.match(facts, /\d{4}-\d{2}, resets \d{4}-\d{2}-01 00:00:00 UTC/, "the period and its reset");
    // The bar: the share spent, as a native meter.
    assert.equal(
      await team.locator("meter").evaluate((m) => Number((m as unknown as { value: number }).value)),
      600,
    );
    const members = await waitForRows(page, "Members of payments", (rows) => rows.length === 2);
    assert.deepEqual(members.map((r) => [r.Token, r.Source]), [
      ["payments-api", "config"],
      ["payments-batch", "config"],
    ]);
    await assertNothingSecret(page);
  });

  await view("teams: a member links to its token's page", "10c-team-member", async () => {
    await tableByCaption(page, "Members of payments").getByRole("link", { name: "payments-api", exact: true })
      .click();
    await heading(page, "payments-api").waitFor();
    assert.match(page.url(), /#\/tokens\/cfg_payments-api$/);
  });

  await view(
    "alerts: the budget threshold and the ejections, delivered to the receiver",
    "10d-alerts",
    async () => {
      await openView(page, "Alerts");
      // The seeded run ejected both flaky targets (chat-fallback's and chat-broken's); then the team spent.
      const alerts = await waitForRows(page, "Recent alerts", (rows) => rows.length >= 3);
      assert.deepEqual(alerts.map((r) => r.Type), ["budget", "ejection", "ejection"], "newest first");
      assert.match(
        alerts[0].Summary,
        /^team payments reached 50% of its budget \(600 \/ 1,000 tokens, \d{4}-\d{2}\)$/,
      );
      for (const target of ["flaky/always-fails", "flaky/down"]) {
        const line = new RegExp(`^target ${target} ejected after 2 failures, until \\d{4}-\\d{2}-\\d{2} `);
        assert.ok(alerts.some((r) => line.test(r.Summary)), `the ejection of ${target}`);
      }
      for (const row of alerts) {
        assert.match(row.Time, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
        // The receiver by host and index only: the path (its key) stays out of the console.
        assert.match(row.Deliveries, /^127\.0\.0\.1:\d+ \(#0\): delivered, 1 attempt$/);
      }
      await assertNothingSecret(page);
    },
  );

  let secret = "";
  await view(
    "tokens: a token created in the console works with the SDK",
    "11-token-created",
    async () => {
      await openView(page, "Tokens");
      await waitForRows(page, "Tokens", (rows) => rows.some((r) => r.Name === "ci-bot"));
      // Escape closes the dialog without creating anything; then open it again.
      await page.getByRole("button", { name: "New token", exact: true }).click();
      await page.getByRole("dialog").waitFor();
      await page.keyboard.press("Escape");
      await page.getByRole("dialog").waitFor({ state: "hidden" });
      await page.getByRole("button", { name: "New token", exact: true }).click();
      const dialog = page.getByRole("dialog");
      await dialog.getByLabel("Name", { exact: true }).fill("console-made");
      await dialog.getByLabel("Environment", { exact: true }).fill("staging");
      await dialog.getByLabel("Models", { exact: true }).fill("chat-default");
      await dialog.getByLabel("Requests per minute", { exact: true }).fill("30");
      await dialog.getByLabel("Description", { exact: true }).fill("made by the browser test");
      await dialog.getByRole("button", { name: "Create token", exact: true }).click();
      const secretInput = dialog.getByLabel("New token secret", { exact: true });
      await secretInput.waitFor();
      secret = await secretInput.inputValue();
      assert.match(secret, /^gw-/);
      assert.equal(
        await secretInput.getAttribute("readonly") !== null,
        true,
        "the secret field is read-only",
      );
      await dialog.getByRole("button", { name: "Copy", exact: true }).waitFor();
      const baseUrl = dialog.getByLabel("Base URL", { exact: true });
      const shown = (await baseUrl.innerText()).trim() || await baseUrl.inputValue();
      assert.equal(shown, `${url}/v1`);
      const answer = await ask(sdk(`${url}/v1`, secret), "chat-default", "hello from a new token");
      assert.match(answer.choices[0].message.content ?? "", /hello from a new token/);
    },
  );

  await view(
    "tokens: revoked in the console, the SDK's next call is refused",
    "12-token-revoked",
    async () => {
      assert.ok(secret, "a token was created");
      await page.getByRole("dialog").getByRole("button", { name: "Done", exact: true }).click();
      await page.getByRole("dialog").waitFor({ state: "hidden" });
      const rows = await waitForRows(
        page,
        "Tokens",
        (rows) => rows.some((r) => r.Name === "console-made"),
      );
      assert.equal(
        rows.find((r) => r.Name === "console-made")?.Status,
        "active",
      );
      await tableByCaption(page, "Tokens").getByRole("link", { name: "console-made", exact: true })
        .click();
      await heading(page, "console-made").waitFor();
      await page.getByRole("button", { name: "Revoke", exact: true }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Revoke token", exact: true }).click();
      await page.getByText("revoked", { exact: true }).first().waitFor();
      await assert.rejects(ask(sdk(`${url}/v1`, secret), "chat-default"), OpenAI.AuthenticationError);
      await assertNothingSecret(page, [secret, hashToken(secret)]);
    },
  );

  await view(
    "audit: the creation and the revocation, by the admin, without the secret",
    "13-audit",
    async () => {
      await openView(page, "Audit");
      const entries = await waitForRows(
        page,
        "Audit trail",
        (rows) =>
          ["create", "revoke"].every((a) =>
            rows.some((r) => r.Action === a && r["Token or team"] === "console-made")
          ),
      );
      assert.ok(entries.every((r) => r.Actor === "ops-admin"));
      await assertNothingSecret(page, [secret, hashToken(secret)]);
    },
  );

  await view("explain: a forbidden alias names the rule that forbids it", "14-explain", async () => {
    await openView(page, "Explain");
    await page.getByLabel("Token", { exact: true }).fill("web-app");
    await page.getByLabel("Alias", { exact: true }).fill("chat-fallback");
    await page.getByRole("button", { name: "Explain", exact: true }).click();
    const region = page.getByRole("region", { name: "Explanation", exact: true });
    await region.getByText("Denied by token.models").waitFor();
    await tableByCaption(page, "Checks").waitFor();
    await tableByCaption(page, "Targets").waitFor();
  });

  await view("signing out returns to the login page and forgets the token", "15-signed-out", async () => {
    await page.getByRole("button", { name: "Sign out", exact: true }).click();
    await assertOnlyLogin(page);
    assert.equal(await page.evaluate("sessionStorage.getItem('gateway.adminToken')"), null);
    assert.equal(await figureByCaption(page, "Requests").count(), 0);
    // A token the API refuses (401) is dropped at once, and only the login page shows.
    await page.evaluate("sessionStorage.setItem('gateway.adminToken', 'gw-stale-admin-token-0123456789')");
    await page.goto(`${url}/console#/overview`);
    await page.reload();
    await assertOnlyLogin(page);
    await waitUntil(
      "the refused token to be dropped from the session",
      () => page.evaluate("sessionStorage.getItem('gateway.adminToken')"),
      (token) => token === null,
    );
  });

  await step("the console made no request beyond the gateway and threw no script error", () => {
    assert.deepEqual(foreign, []);
    assert.deepEqual(scriptErrors, []);
  });
}

const url = Deno.env.get("CONSOLE_URL");
const shots = Deno.env.get("CONSOLE_SHOTS");
if (!url || !shots) {
  throw new Error("CONSOLE_URL and CONSOLE_SHOTS must be set (run by console_browser_test.ts)");
}
const browser = await launchBrowser();
try {
  await session(url, shots, browser);
} finally {
  await browser.close();
}

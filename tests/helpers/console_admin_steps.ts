/**
 * The console's pages about what operators make through the admin API, run by tests/admin/console_browser_test.ts
 * in a process of its own (see helpers/browser_process.ts for why): the script makes teams and tokens through
 * the API of the gateway at `CONSOLE_URL` (and a few requests through it), then Chromium checks what the
 * console shows of them: the audit trail, a rotation, a re-issued name's usage and links, bidi controls and
 * long unbroken text, explain's money budgets, and a policy row's time window (over a denial the test seeded
 * three days back). Each step is reported to the test, and a screenshot of each view goes to `CONSOLE_SHOTS`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { launchBrowser, type TestBrowser } from "./browser.ts";
import { heading, openView, signIn, step, tableByCaption, waitForRows, waitUntil } from "./console_page.ts";
import { ADMIN_TOKEN, SECRET_PROMPT, WEB_APP_TOKEN } from "./console_fixture.ts";

/** An admin API call that must succeed; answers its JSON. */
async function admin(
  url: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json();
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

async function session(url: string, shots: string, browser: TestBrowser): Promise<void> {
  const page = browser.page;
  page.setDefaultTimeout(10_000);
  const scriptErrors: string[] = [];
  page.on("pageerror", (err) => scriptErrors.push(String(err)));
  const view = (name: string, shot: string, fn: () => Promise<void>) =>
    step(name, async () => {
      try {
        await fn();
      } finally {
        await page.screenshot({ path: `${shots}${shot}.png`, fullPage: true }).catch((err) =>
          console.error(`screenshot ${shot} failed: ${err}`)
        );
      }
    });

  await view("teams made through the API are in the audit trail", "a1-audit-teams", async () => {
    await admin(url, "POST", "/admin/teams", { name: "growth", description: "made through the API" });
    await admin(url, "PATCH", "/admin/teams/growth", { limits: { rpm: 10 } });
    await admin(url, "POST", "/admin/teams", { name: "short-lived" });
    await admin(url, "DELETE", "/admin/teams/short-lived");
    await page.goto(`${url}/console`);
    await signIn(page, ADMIN_TOKEN);
    await page.getByRole("navigation", { name: "Console" }).waitFor();
    await openView(page, "Audit");
    const rows = await waitForRows(page, "Audit trail", (rows) => rows.length >= 4);
    assert.deepEqual(
      rows.map((r) => [r.Action, r["Token or team"]]),
      [
        ["delete", "short-lived (team)"],
        ["create", "short-lived (team)"],
        ["update", "growth (team)"],
        ["create", "growth (team)"],
      ],
    );
    // Every action the API records can be filtered on.
    assert.deepEqual(
      await page.getByLabel("Action", { exact: true }).locator("option").allInnerTexts(),
      ["any", "create", "update", "rotate", "revoke", "delete"],
    );
  });

  await view(
    "a team's audit entry leads to the team, not to a token page",
    "a2-audit-team-link",
    async () => {
      await tableByCaption(page, "Audit trail").getByRole("link", { name: "growth", exact: true }).first()
        .click();
      await heading(page, "Teams").waitFor();
      assert.match(page.url(), /#\/teams\/growth$/);
      await page.getByRole("region", { name: "growth", exact: true }).getByText("made through the API")
        .waitFor();
      assert.equal(await page.getByRole("region").count(), 1, "that team alone");
      assert.equal(await page.getByRole("alert").count(), 0);
    },
  );

  await view(
    "the delete filter finds the deleted team, which is said to be gone",
    "a3-audit-delete",
    async () => {
      await openView(page, "Audit");
      await page.getByLabel("Action", { exact: true }).selectOption("delete");
      await page.getByRole("button", { name: "Apply", exact: true }).click();
      const rows = await waitForRows(page, "Audit trail", (rows) => rows.length === 1);
      assert.deepEqual(rows.map((r) => [r.Action, r["Token or team"]]), [["delete", "short-lived (team)"]]);
      await tableByCaption(page, "Audit trail").getByRole("link", { name: "short-lived", exact: true })
        .click();
      await page.getByRole("status").getByText('No team is named "short-lived" now').waitFor();
    },
  );

  await view(
    "a rotation without grace says the old secret no longer works",
    "a4-rotate-no-grace",
    async () => {
      const token = await admin(url, "POST", "/admin/tokens", { name: "rotating", models: ["chat-default"] });
      await page.goto(`${url}/console#/tokens/${token.id}`);
      await heading(page, "rotating").waitFor();
      await page.getByRole("button", { name: "Rotate", exact: true }).click();
      const dialog = page.getByRole("dialog");
      await dialog.getByLabel("Grace period", { exact: true }).fill("0s");
      await dialog.getByRole("button", { name: "Rotate secret", exact: true }).click();
      await dialog.getByLabel("New token secret", { exact: true }).waitFor();
      const note = await dialog.locator(".warning").innerText();
      assert.match(note, /The old secret no longer works\.$/);
      // The old secret is indeed refused.
      const old = await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${token.token}` } });
      await old.body?.cancel();
      assert.equal(old.status, 401);
      await dialog.getByRole("button", { name: "Done", exact: true }).click();
    },
  );

  await view(
    "a re-issued name's token page shows its own usage, not its predecessor's; the overview a row per token",
    "a5-reissued",
    async () => {
      const chat = (secret: unknown) =>
        fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "chat-default", messages: [{ role: "user", content: "hi" }] }),
        }).then((r) => r.json());
      // Its third request is denied (its rpm), for the policy view's denials by token.
      const old = await admin(url, "POST", "/admin/tokens", {
        name: "reissued",
        models: ["chat-default"],
        limits: { rpm: 2 },
      });
      for (let i = 0; i < 3; i++) await chat(old.token);
      await admin(url, "DELETE", `/admin/tokens/${old.id}`);
      const fresh = await admin(url, "POST", "/admin/tokens", {
        name: "reissued",
        models: ["chat-default"],
        limits: { rpm: 1 },
      });
      await chat(fresh.token);
      // Records are written off the request path: the page is opened once all four are in.
      await waitUntil(
        "the four records under the name",
        async () => ((await admin(url, "GET", "/admin/requests?token=reissued")).data as unknown[]).length,
        (n) => n === 4,
      );
      await page.goto(`${url}/console#/tokens/${fresh.id}`);
      await heading(page, "reissued").waitFor();
      const usage = page.getByLabel("Usage", { exact: true });
      await usage.waitFor();
      assert.match(await usage.innerText(), /Requests\s+1\b/);
      const recent = await waitForRows(page, "Recent requests", (rows) => rows.length > 0);
      assert.equal(recent.length, 1, "only the new token's request");

      // Its links lead to its own usage too, not to everything ever recorded under the name.
      await page.getByRole("link", { name: "Request log", exact: true }).click();
      await heading(page, "Requests").waitFor();
      const log = await waitForRows(page, "Request log", (rows) => rows.length > 0);
      assert.equal(log.length, 1, "the request log of the new token alone");
      await page.goBack();
      await heading(page, "reissued").waitFor();
      await page.getByRole("link", { name: "Usage in the overview", exact: true }).click();
      await heading(page, "Overview").waitFor();
      const summary = page.getByLabel("Summary", { exact: true });
      await summary.waitFor();
      assert.match(await summary.innerText(), /Requests\s+1\b/, "the overview of the new token alone");
      // The filter is named so it can be removed like any other.
      await page.getByRole("group", { name: "Filters" }).getByRole("button", {
        name: /^Remove filter token_id: tok_/,
      })
        .waitFor();

      // Unfiltered, "By token" has a row per token, not per name: each its own count and its own page.
      await page.getByRole("button", { name: "Clear filters", exact: true }).click();
      const short = (id: unknown) => `${String(id).slice(0, 12)}…`;
      const named = await waitForRows(
        page,
        "By token",
        (rows) => rows.filter((r) => r.Value.startsWith("reissued")).length >= 2,
      );
      assert.deepEqual(
        named.filter((r) => r.Value.startsWith("reissued")).map((r) => [r.Value, r.Requests]).sort(),
        [[`reissued · ${short(fresh.id)}`, "1"], [`reissued · ${short(old.id)} (revoked)`, "3"]].sort(),
      );
      const oldRow = tableByCaption(page, "By token").getByRole("row").filter({ hasText: short(old.id) });
      await oldRow.getByRole("link", { name: "Details", exact: true }).click();
      await heading(page, "reissued").waitFor();
      assert.match(page.url(), new RegExp(`#/tokens/${old.id}$`));
      await page.getByText(/^This token was revoked at /).waitFor();

      // The policy view's denials by token are per token as well: the new token's denial is not the old one's.
      await chat(fresh.token); // its second in the minute: denied
      await waitUntil(
        "the two denials under the name",
        async () =>
          ((await admin(url, "GET", "/admin/requests?token=reissued&outcome=deny")).data as unknown[]).length,
        (n) => n === 2,
      );
      await page.goto(`${url}/console#/policy`);
      const denied = await waitForRows(
        page,
        "Denials by token",
        (rows) => rows.filter((r) => r.Token.startsWith("reissued")).length >= 2,
      );
      assert.deepEqual(
        denied.filter((r) => r.Token.startsWith("reissued")).map((r) => [r.Token, r.Denied]).sort(),
        [[`reissued · ${short(fresh.id)}`, "1"], [`reissued · ${short(old.id)}`, "1"]].sort(),
      );
    },
  );

  await view(
    "bidi controls in descriptions show as code points, not as reordered text",
    "a6-bidi",
    async () => {
      // A right-to-left override makes "nimda" draw as "admin" when the browser obeys it.
      const spoof = 'owned by "\u202Enimda" \u2066x\u2069\u200B';
      await admin(url, "POST", "/admin/teams", { name: "bidi-team", description: spoof });
      const token = await admin(url, "POST", "/admin/tokens", {
        name: "bidi-token",
        models: ["chat-default"],
        description: spoof,
      });
      const shown = 'owned by "⟨U+202E⟩nimda" ⟨U+2066⟩x⟨U+2069⟩⟨U+200B⟩';
      await page.goto(`${url}/console#/teams/bidi-team`);
      const team = page.getByRole("region", { name: "bidi-team", exact: true });
      assert.equal(await team.locator(".note").innerText(), shown);
      await page.goto(`${url}/console#/tokens/${token.id}`);
      await heading(page, "bidi-token").waitFor();
      const details = await page.getByText(shown, { exact: true }).count();
      assert.equal(details, 1, "the token's description, marked");
      const text = await page.locator("body").innerText();
      assert.doesNotMatch(
        text,
        /[\u202A-\u202E\u2066-\u2069\u200B-\u200F]/,
        "no bidi or zero-width character",
      );
    },
  );

  await view(
    "explain shows money budgets as money, the team's budget too, without float noise",
    "a7-explain-money",
    async () => {
      await admin(url, "POST", "/admin/teams", {
        name: "thrifty",
        budget: { cost: 1, period: "day" },
        models: ["chat-default"],
      });
      const token = await admin(url, "POST", "/admin/tokens", {
        name: "thrifty-bot",
        models: ["chat-default"],
        budget: { cost: 5, period: "day" },
        team: "thrifty",
      });
      // chat-default is priced (0.001 a prompt token, 0.002 an answer token): a call costs a few thousandths.
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${token.token}`, "content-type": "application/json" },
          body: JSON.stringify({
            model: "chat-default",
            messages: [{ role: "user", content: "hello budget" }],
          }),
        });
        assert.equal(res.status, 200);
        await res.body?.cancel();
      }
      // A request's spend is settled after its answer: the page is opened once both budgets hold the same.
      type Used = { budget?: { used: number | null }; team_budget?: { used: number | null } };
      await waitUntil(
        "the requests' spend in both budgets",
        async () => await admin(url, "GET", "/admin/explain?token=thrifty-bot&model=chat-default") as Used,
        (x) => (x.budget?.used ?? 0) > 0 && x.team_budget?.used === x.budget?.used,
      );
      await page.goto(`${url}/console#/explain?token=thrifty-bot&model=chat-default`);
      const budgets = page.getByLabel("Budget and ceilings", { exact: true });
      await budgets.waitFor();
      const rows = Object.fromEntries(
        (await budgets.locator("div").allInnerTexts()).map((t) => t.split("\n").map((p) => p.trim())),
      );
      // Money as the Teams view writes it: three significant digits below 1, two decimals above.
      assert.match(rows.Budget, /^token\.budget: 0\.0*[1-9]\d{0,2} of 5\.00 cost this day \(4\.9\d left\)$/);
      assert.match(
        rows["Team budget"],
        /^team\.budget: 0\.0*[1-9]\d{0,2} of 1\.00 cost this day \(0\.9\d{0,2} left\)$/,
      );
      const checks = await waitForRows(page, "Checks", (rows) => rows.length > 0);
      for (const rule of ["token.budget", "team.budget"]) {
        const detail = checks.find((r) => r.Rule === rule)?.Detail ?? "";
        assert.match(
          detail,
          /^0\.0*[1-9]\d{0,5} of [15] cost used in \d{4}-\d{2}-\d{2}, [0-4]\.9\d{0,5} left$/,
          rule,
        );
      }
    },
  );

  await view(
    "a policy row's request log keeps the policy view's time window",
    "a8-policy-window",
    async () => {
      // The test seeded web-app's same denial three days ago; this one is now.
      const denied = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${WEB_APP_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "chat-default", messages: [{ role: "user", content: SECRET_PROMPT }] }),
      });
      assert.equal(denied.status, 400);
      await denied.body?.cancel();
      await waitUntil(
        "both denials in the usage records",
        async () =>
          ((await admin(url, "GET", "/admin/requests?rule=alias.content:secrets")).data as unknown[]).length,
        (n) => n === 2,
      );
      await openView(page, "Policy");
      const byRule = await waitForRows(page, "Denials by rule", (rows) => rows.length > 0);
      assert.deepEqual(
        byRule.filter((r) => r.Rule === "alias.content:secrets").map((r) => [r.Rule, r.Denied]),
        [["alias.content:secrets", "1"]],
        "last 24 hours",
      );
      await tableByCaption(page, "Denials by rule").getByRole("row").filter({
        hasText: "alias.content:secrets",
      })
        .getByRole("link", { name: "Requests", exact: true }).click();
      await heading(page, "Requests").waitFor();
      const log = await waitForRows(page, "Request log", (rows) => rows.length > 0);
      assert.equal(log.length, 1, "the denial of the last 24 hours, as the policy view counted");
      assert.equal(log[0].Rule, "alias.content:secrets");
    },
  );

  await view("long unbroken text wraps inside the page's width", "a9-long-text", async () => {
    const long = "Z".repeat(500);
    await admin(url, "POST", "/admin/teams", { name: "long-description", description: long });
    // The page's own width at the browser's 1280 px: wider means a horizontal scroll bar for every view.
    type Box = { scrollWidth: number; clientWidth: number };
    const overflow = () =>
      page.locator("html").evaluate((el) =>
        (el as unknown as Box).scrollWidth - (el as unknown as Box).clientWidth
      );
    const views: [string, () => Promise<void>][] = [
      ["teams", () => page.getByRole("region", { name: "long-description", exact: true }).waitFor()],
      [`teams/${long}`, () => page.getByRole("status").waitFor()],
      [`overview?token=${long}`, () => page.getByRole("group", { name: "Filters" }).waitFor()],
      [`requests?environment=${long}`, () => page.getByText("Also filtered by").waitFor()],
    ];
    const wide: string[] = [];
    for (const [route, shown] of views) {
      await page.goto(`${url}/console#/${route}`);
      await shown();
      const excess = await overflow();
      if (excess > 0) wide.push(`${route.slice(0, 30)}…: ${excess} px too wide`);
    }
    assert.deepEqual(wide, []);
  });

  await step("the console threw no script error", () => assert.deepEqual(scriptErrors, []));
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

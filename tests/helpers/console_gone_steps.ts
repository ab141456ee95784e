/**
 * The console's usage of tokens and teams that are gone, run by tests/admin/console_browser_test.ts in a process
 * of its own (see helpers/browser_process.ts for why), over the records that test seeded:
 * the overview's "By team" names each team by the name its records carry (a team removed from the config file
 * too), with hidden characters marked, never obeyed; a token removed from the config file keeps its "Details"
 * link, which leads to a page saying it was removed, with its usage and requests; an id nothing was ever
 * recorded under is still "not found". A screenshot of each view goes to `CONSOLE_SHOTS`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { launchBrowser, type TestBrowser } from "./browser.ts";
import { heading, openView, signIn, step, tableByCaption, waitForRows } from "./console_page.ts";
import { ADMIN_TOKEN, GONE_TEAM_ID } from "./console_fixture.ts";

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

  await view(
    "the overview names each team of the usage, a team gone from the file too",
    "g1-by-team",
    async () => {
      await page.goto(`${url}/console`);
      await signIn(page, ADMIN_TOKEN);
      await openView(page, "Overview");
      const rows = await waitForRows(page, "By team", (rows) => rows.length >= 2);
      assert.deepEqual(
        rows.map((r) => [r.Value, r.Requests]).sort(),
        [["sunset", "2"], ["⟨U+202E⟩lanruoj<b>x</b>", "1"]].sort(),
      );
      // The id is a hover away, and the row's drill-down filters by it.
      const table = tableByCaption(page, "By team");
      assert.equal(
        await table.getByRole("link", { name: "sunset", exact: true }).getAttribute("title"),
        GONE_TEAM_ID,
      );
      assert.equal(await table.locator("b").count(), 0, "markup in a name is text");
      assert.doesNotMatch(await page.locator("body").innerText(), /\u202E/, "no bidi override obeyed");
      await table.getByRole("link", { name: "sunset", exact: true }).click();
      await page.getByRole("group", { name: "Filters" }).getByRole("button", {
        name: `Remove filter team_id: ${GONE_TEAM_ID}`,
      }).waitFor();
      const teamRows = await waitForRows(page, "By team", (rows) => rows.length === 1);
      assert.deepEqual(teamRows.map((r) => [r.Value, r.Requests]), [["sunset", "2"]]);
    },
  );

  await view(
    "a token removed from the config file keeps its Details link, to a page saying so, with its usage",
    "g2-removed-token",
    async () => {
      await page.goto(`${url}/console#/overview`);
      const rows = await waitForRows(page, "By token", (rows) => rows.some((r) => r.Value === "retired-bot"));
      assert.deepEqual(rows.filter((r) => r.Value === "retired-bot").map((r) => r.Requests), ["2"]);
      await tableByCaption(page, "By token").getByRole("row").filter({ hasText: "retired-bot" })
        .getByRole("link", { name: "Details", exact: true }).click();
      await heading(page, "retired-bot").waitFor();
      assert.match(page.url(), /#\/tokens\/cfg_retired-bot$/);
      await page.getByText(/removed from it: no request can use it now/).waitFor();
      assert.equal(await page.locator(".status-line").innerText(), "Status: removed");
      const usage = page.getByLabel("Usage", { exact: true });
      await usage.waitFor();
      assert.match(await usage.innerText(), /Requests\s+2\b/);
      const recent = await waitForRows(page, "Recent requests", (rows) => rows.length > 0);
      assert.equal(recent.length, 2);
      assert.equal(await page.getByRole("alert").count(), 0, "no 'not found'");
      // Nothing to change on a token that is not there.
      assert.equal(await page.getByRole("button", { name: "Revoke", exact: true }).count(), 0);
      await page.screenshot({ path: `${shots}g2-removed-token-page.png`, fullPage: true });
      await page.getByRole("link", { name: "Request log", exact: true }).click();
      await heading(page, "Requests").waitFor();
      const log = await waitForRows(page, "Request log", (rows) => rows.length > 0);
      assert.equal(log.length, 2, "the removed token's requests");
    },
  );

  await view("an id nothing was recorded under is still not found", "g3-unknown-token", async () => {
    await page.goto(`${url}/console#/tokens/cfg_never-was`);
    await heading(page, "Token").waitFor();
    await page.getByRole("alert").getByText("No token with id 'cfg_never-was'.").waitFor();
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

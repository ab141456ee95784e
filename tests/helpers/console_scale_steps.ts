/**
 * The console at the scales it must not hide, run by tests/admin/console_browser_test.ts in a process of its own
 * (see helpers/browser_process.ts for why), over the records that test seeded (requests costing 0.0001 and
 * 0.0003 in the last hours, nothing else): the overview's Cost chart draws them across its height, its y axis
 * scaled to them with ticks that say so (not a flat line on a 0–1 axis); and the Tokens view, given a page
 * smaller than the tokens that match, says more match, leads to the next page, and back. A screenshot of each
 * view goes to `CONSOLE_SHOTS`.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { launchBrowser, type TestBrowser } from "./browser.ts";
import { figureByCaption, heading, signIn, step, waitForChart, waitForRows } from "./console_page.ts";
import { ADMIN_TOKEN } from "./console_fixture.ts";

/** The Cost chart's line colour (console/charts.ts COLORS[3]) as RGB. */
const COST_RGB = [0x9a, 0x67, 0x00] as const;

/** The part of a canvas element read here (the test process has no DOM types). */
interface Canvas {
  readonly width: number;
  readonly height: number;
  getContext(kind: "2d"): {
    getImageData(x: number, y: number, w: number, h: number): {
      data: Uint8ClampedArray;
      width: number;
      height: number;
    };
  };
}

/**
 * The rows of the Cost chart's canvas that hold its line's colour, top and bottom, and the canvas's height (in
 * canvas pixels): how far up the plot the line reaches, read from what was drawn.
 */
function lineExtent(page: Page): Promise<{ top: number; bottom: number; height: number }> {
  return figureByCaption(page, "Cost").locator("canvas").first().evaluate((node, rgb) => {
    const canvas = node as unknown as Canvas;
    const { data, width, height } = canvas.getContext("2d")!.getImageData(0, 0, canvas.width, canvas.height);
    let top = height;
    let bottom = -1;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const i = (y * width + x) * 4;
        const near = Math.abs(data[i] - rgb[0]) < 30 && Math.abs(data[i + 1] - rgb[1]) < 30 &&
          data[i + 2] < 50 && data[i + 3] > 200;
        if (near) {
          top = Math.min(top, y);
          bottom = Math.max(bottom, y);
        }
      }
    }
    return { top, bottom, height };
  }, COST_RGB);
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

  await view(
    "the Cost chart scales to costs far below 1, and its ticks say so",
    "s1-cost-chart",
    async () => {
      await page.goto(`${url}/console`);
      await signIn(page, ADMIN_TOKEN);
      await page.getByRole("navigation", { name: "Console" }).waitFor();
      await page.goto(`${url}/console#/overview?range=24h`);
      await heading(page, "Overview").waitFor();
      await waitForChart(page, "Cost");
      const summary = await page.locator("dl").first().innerText();
      assert.match(summary, /Cost\s+0\.0005\b/, summary);
      // Drawn: the line climbs from 0 to the 0.0003 bucket, most of the plot's height, not a flat line at 0.
      const extent = await lineExtent(page);
      assert.ok(extent.bottom >= 0, "the cost line is drawn");
      assert.ok(
        extent.bottom - extent.top > extent.height * 0.4,
        `the cost line spans ${extent.bottom - extent.top} of ${extent.height} pixels`,
      );
      // Read: the y axis's ticks are small amounts, written out (no 1, no exponent), topped just above 0.0003.
      const figure = figureByCaption(page, "Cost");
      const ticks = (await figure.getAttribute("data-y-ticks") ?? "").split(" ").filter((t) => t !== "");
      assert.ok(ticks.length >= 3, `ticks: ${ticks}`);
      for (const tick of ticks) assert.match(tick, /^0(\.\d+)?$/, `tick ${tick}`);
      const top = Math.max(...ticks.map(Number));
      assert.ok(top >= 0.0002 && top <= 0.0003, `top tick ${top}`);
      const label = await figure.locator("canvas").first().getAttribute("aria-label");
      assert.equal(label, `Cost chart, y axis ${ticks[0]} to ${ticks[ticks.length - 1]}`);
      // Counts keep their whole axis: the Requests chart is not scaled below one request.
      const requests = await figureByCaption(page, "Requests").getAttribute("data-y-ticks");
      assert.ok((requests ?? "").split(" ").map(Number).some((t) => t >= 1), `requests ticks: ${requests}`);
    },
  );

  // Seven tokens whose names hold "bulk-", and a page of three: more match than are shown.
  const names: string[] = [];
  for (let i = 0; i < 7; i++) {
    const name = `bulk-${String(i).padStart(2, "0")}`;
    const res = await fetch(`${url}/admin/tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ name, models: ["chat-default"] }),
    });
    assert.equal(res.status, 201, await res.text());
    names.push(name);
  }

  await view(
    "the Tokens view says when more tokens match than it shows, and pages on",
    "s2-tokens-pages",
    async () => {
      await page.goto(`${url}/console#/tokens?q=bulk-&limit=3`);
      await heading(page, "Tokens").waitFor();
      const seen: string[] = [];
      const first = await waitForRows(page, "Tokens", (rows) => rows.length > 0);
      assert.deepEqual(first.map((r) => r.Name), names.slice(0, 3));
      seen.push(...first.map((r) => r.Name));
      const notice = page.getByRole("status").filter({ hasText: "more match" });
      assert.match(await notice.innerText(), /Showing the first 3 tokens that match, by name; more match\./);
      await page.screenshot({ path: `${shots}s2-tokens-first-page.png`, fullPage: true });
      // On to the end, page by page, each saying where it is.
      for (const expected of [names.slice(3, 6), names.slice(6)]) {
        await page.getByRole("link", { name: "Next 3 tokens", exact: true }).click();
        const rows = await waitForRows(
          page,
          "Tokens",
          (rows) => rows.length > 0 && rows[0].Name === expected[0],
        );
        assert.deepEqual(
          rows.map((r) => r.Name),
          expected,
        );
        seen.push(...rows.map((r) => r.Name));
        await page.getByRole("link", { name: "First page", exact: true }).waitFor();
      }
      assert.deepEqual(seen, names, "every token reached, each once");
      assert.equal(
        await page.getByRole("link", { name: "Next 3 tokens", exact: true }).count(),
        0,
        "the last page",
      );
      await page.getByRole("link", { name: "First page", exact: true }).click();
      await waitForRows(page, "Tokens", (rows) => rows.length > 0 && rows[0].Name === names[0]);
      // A filter narrowing the list to what one page holds: no notice, no paging.
      await page.goto(`${url}/console#/tokens?q=bulk-05&limit=3`);
      await waitForRows(page, "Tokens", (rows) => rows.length === 1);
      assert.equal(await page.getByRole("status").filter({ hasText: "more match" }).count(), 0);
      assert.equal(await page.getByRole("link", { name: /^Next/ }).count(), 0);
    },
  );

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

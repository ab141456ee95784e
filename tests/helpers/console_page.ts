/**
 * Reading the admin console the way an operator does, for browser tests: tables by caption as rows of
 * header → cell text, and bounded waits for data that arrives from the admin API after the page renders.
 *
 * @module
 */
import type { Locator, Page } from "playwright-core";
import { reportStep } from "./browser_process.ts";

/** One table row: the column header's text → the cell's visible text. */
export type Row = Record<string, string>;

/**
 * Polls `read` until `ok` holds, for at most `ms`; the error names `what` and the last value read, so a
 * failure says what the page showed instead of only that something timed out.
 */
export async function waitUntil<T>(
  what: string,
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  ms = 10_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: T | undefined;
  let failure: unknown;
  while (true) {
    try {
      last = await read();
      failure = undefined;
      if (ok(last)) return last;
    } catch (err) {
      failure = err;
    }
    if (Date.now() > deadline) {
      const seen = failure !== undefined ? `error: ${String(failure).split("\n")[0]}` : JSON.stringify(last);
      throw new Error(`timed out after ${ms} ms waiting for ${what}; last seen: ${seen?.slice(0, 1500)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The table whose caption (its accessible name) is `caption`. */
export function tableByCaption(page: Page, caption: string): Locator {
  return page.getByRole("table", { name: caption, exact: true });
}

/**
 * The body rows of a table as header → text. Rows with fewer cells than headers (an "empty" placeholder row
 * spanning the table) are left out, so an empty table reads as no rows. Headers and rows are read in one step
 * inside the page, so a table that the console replaces meanwhile cannot mix two renderings.
 */
export function readTable(table: Locator): Promise<Row[]> {
  // The function runs in the page; tests are type-checked without the DOM library, hence the structural type.
  type Cell = { innerText?: string };
  return table.evaluate((element) => {
    const text = (cell: unknown) => ((cell as Cell).innerText ?? "").trim();
    const headers = [...element.querySelectorAll("thead th")].map(text);
    if (headers.length === 0) return [];
    const rows: Record<string, string>[] = [];
    for (const row of element.querySelectorAll("tbody tr")) {
      const cells = [...row.querySelectorAll("td, th")].map(text);
      if (cells.length < headers.length) continue;
      rows.push(Object.fromEntries(headers.map((h, i) => [h, cells[i]])));
    }
    return rows;
  });
}

/** Waits for the table captioned `caption` to show rows satisfying `ok`; answers its rows. */
export function waitForRows(
  page: Page,
  caption: string,
  ok: (rows: Row[]) => boolean,
  ms = 10_000,
): Promise<Row[]> {
  const table = tableByCaption(page, caption);
  return waitUntil(`table "${caption}"`, () => readTable(table), ok, ms);
}

/** The `figure` whose `figcaption` is `caption`. */
export function figureByCaption(page: Page, caption: string): Locator {
  return page.getByRole("figure", { name: caption, exact: true });
}

/** Waits for a chart figure to report time buckets with data (`data-points` > 0) and to hold its canvas. */
export async function waitForChart(page: Page, caption: string, ms = 10_000): Promise<number> {
  const figure = figureByCaption(page, caption);
  const points = await waitUntil(
    `chart "${caption}" with data-points > 0`,
    async () => Number(await figure.getAttribute("data-points", { timeout: 1_000 })),
    (n) => n > 0,
    ms,
  );
  await figure.locator("canvas").first().waitFor({ state: "attached", timeout: ms });
  return points;
}

/** The `h1` of the view on screen. */
export function heading(page: Page, name: string): Locator {
  return page.getByRole("heading", { level: 1, name, exact: true });
}

/** The console's navigation link named `link`. */
export function nav(page: Page, link: string): Locator {
  return page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: link, exact: true });
}

/** Goes to a view through the navigation and waits for its heading. */
export async function openView(page: Page, link: string, title = link): Promise<void> {
  await nav(page, link).click();
  await heading(page, title).waitFor();
}

/** Fills the login page's field with `token` and signs in. */
export async function signIn(page: Page, token: string): Promise<void> {
  await page.getByLabel("Admin token", { exact: true }).fill(token);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

/** Runs `fn` as one reported step; a failure is reported and the session goes on with the next view. */
export async function step(name: string, fn: () => Promise<void> | void): Promise<void> {
  try {
    await fn();
    reportStep({ name, ok: true });
  } catch (err) {
    reportStep({ name, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  }
}

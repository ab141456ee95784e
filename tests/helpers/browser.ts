/**
 * Headless Chromium for browser tests: Debian's `chromium` driven by `playwright-core` (which ships no browser
 * of its own), launched so that it never reaches for the network — CI machines have none, and a refused
 * connection to an update or sync service would only slow the test down or fail it. Loaded only by browser
 * scripts, which run in their own process (see browser_process.ts for why).
 *
 * @module
 */
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { CHROMIUM_PATH, hasChromium } from "./browser_process.ts";

/**
 * Switches that keep Chromium offline and quiet: no GPU, no QUIC, no first-run, background, component-update or
 * sync traffic. `--no-sandbox` because CI runs as root in a container, where the sandbox cannot start.
 */
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A running browser with one page; `close` ends the browser and removes its profile. */
export interface TestBrowser {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

/** Launches Chromium with a fresh profile (its own `--user-data-dir`) and a laptop-sized window. */
export async function launchBrowser(): Promise<TestBrowser> {
  if (!hasChromium()) {
    throw new Error(`${CHROMIUM_PATH} is missing: install Debian's chromium (apt-get install -y chromium)`);
  }
  const profile = await Deno.makeTempDir({ prefix: "gateway-chromium-" });
  let context: BrowserContext;
  try {
    // A persistent context is how playwright takes an explicit --user-data-dir; the directory is new and
    // empty, so nothing carries over between runs.
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 800 },
      timeout: 30_000,
    });
  } catch (err) {
    await Deno.remove(profile, { recursive: true }).catch(() => {});
    throw err;
  }
  const page = context.pages()[0] ?? await context.newPage();
  return {
    context,
    page,
    async close() {
      await context.close().catch(() => {});
      await Deno.remove(profile, { recursive: true }).catch(() => {});
    },
  };
}

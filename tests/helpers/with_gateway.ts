/**
 * Running a test body against a gateway and the fakes it is configured for, and stopping all of it whatever the
 * body (or the gateway's start) throws: the one skeleton behind the end-to-end tests' `withGateway`s. A test's
 * setup starts its fakes and writes the config for them; the helper starts the gateway (over a socket, or
 * in-process), runs the body, then stops the gateway first (so no request of it is still reading a fake) and the
 * fakes last.
 *
 * @module
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import type { RouteDeps } from "../../lib/routing/route.ts";
import { startGateway, type Stoppable, TEST_TOKEN, type TestGateway } from "./gateway.ts";
import { type InProcessGateway, inProcessGateway } from "./in_process.ts";

/** What a test's setup started, and the config that points a gateway at it. */
export interface Started<F> {
  /** Handed to the test body as they are: a fake, a set of them (`startFakes`), or what the test reads them by. */
  fakes: F;
  /** The whole config file the gateway serves. */
  config: string;
  /** Stops what the setup started, after the gateway; by default the fakes' own `stop()`, when they have one. */
  stop?: () => Promise<void>;
}

/** A setup for a gateway on a socket ({@linkcode startGateway}: in-process, or the binary `GATEWAY_BIN` names). */
export interface GatewaySetup<F> extends Started<F> {
  /** The gateway's environment. */
  env?: Record<string, string>;
  /** The grace its stop gives requests still in flight ({@linkcode TestGateway.stop}'s default when unset). */
  graceMs?: number;
}

/** A setup for a gateway run in-process ({@linkcode inProcessGateway}). */
export interface InProcessSetup<F> extends Started<F> {
  /** Routing's dependencies swapped in (a health registry on a clock the test moves). */
  routing?: Partial<RouteDeps>;
}

/** Starts a setup: its fakes, the config for them. */
type Setup<S> = () => S | Promise<S>;

/**
 * Runs `fn` against a gateway on a socket with what `setup` started; stops the gateway, then the fakes, whatever
 * happens (a gateway that fails to start too: its fakes are stopped all the same).
 */
export function withTestGateway<F>(
  setup: Setup<GatewaySetup<F>>,
  fn: (gw: TestGateway, fakes: F) => Promise<void>,
): Promise<void> {
  return withStarted(setup, async ({ fakes, config, env, graceMs }) => {
    const gw = await startGateway(config, env);
    try {
      await fn(gw, fakes);
    } finally {
      await gw.stop(graceMs);
    }
  });
}

/** Runs `fn` against a gateway run in-process with what `setup` started; stops the fakes whatever happens. */
export function withInProcessGateway<F>(
  setup: Setup<InProcessSetup<F>>,
  fn: (gw: InProcessGateway, fakes: F) => Promise<void>,
): Promise<void> {
  return withStarted(setup, ({ fakes, config, routing }) => fn(inProcessGateway(config, routing), fakes));
}

/**
 * Runs `fn` with a fresh fake upstream (or a `startFakes` set), a gateway configured for it and an openai SDK
 * client that does not retry (so every status reaches the test), and stops both whatever happens.
 */
export function withFakeGateway<F extends Stoppable>(
  startFake: () => F,
  configFor: (fake: F) => string,
  fn: (gw: TestGateway, fake: F, client: OpenAI) => Promise<void>,
  env: Record<string, string> = {},
): Promise<void> {
  return withTestGateway(() => {
    const fake = startFake();
    return { fakes: fake, config: configFor(fake), env };
  }, (gw, fake) => fn(gw, fake, openaiClient(gw)));
}

/** An openai SDK client of `gw` that does not retry, so every status reaches the test. */
export function openaiClient(gw: TestGateway, token: string = TEST_TOKEN): OpenAI {
  return new OpenAI({ apiKey: token, baseURL: gw.baseURL, maxRetries: 0 });
}

/** An Anthropic SDK client of `gw` (its Messages API) that does not retry, so every status reaches the test. */
export function anthropicClient(gw: TestGateway): Anthropic {
  return new Anthropic({ apiKey: TEST_TOKEN, baseURL: gw.url, maxRetries: 0 });
}

/** Starts `setup`, runs `body` with it, and stops what it started whatever `body` throws. */
async function withStarted<S extends Started<unknown>>(setup: Setup<S>, body: (started: S) => Promise<void>) {
  const started = await setup();
  try {
    await body(started);
  } finally {
    await (started.stop ? started.stop() : stopOf(started.fakes));
  }
}

/** Stops `fakes` when it is something that stops (a fake, a `startFakes` set); a test's plain value is left. */
async function stopOf(fakes: unknown): Promise<void> {
  const stop = (fakes as Partial<Stoppable> | undefined)?.stop;
  if (typeof stop === "function") await stop.call(fakes);
}

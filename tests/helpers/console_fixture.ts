/**
 * What the console's browser test and its gateway share: the tokens of the seeded run, the prompt that trips the
 * content rule, and an `openai` SDK client. Kept apart from the gateway code, so the browser process (which does
 * not start a gateway) loads only this.
 *
 * @module
 */
import OpenAI from "openai";

/** The admin token the test signs in with, and the client tokens of the seeded run. */
export const ADMIN_TOKEN = "gw-console-admin-0123456789abcdef";
export const CI_BOT_TOKEN = "gw-console-ci-bot-0123456789abcdef";
export const WEB_APP_TOKEN = "gw-console-web-app-0123456789abcdef";
/** The members of the `payments` team (only with `spend: true`): the first spends 60% of its budget. */
export const PAYMENTS_API_TOKEN = "gw-console-payments-api-0123456789abcdef";
export const PAYMENTS_BATCH_TOKEN = "gw-console-payments-batch-0123456789abcdef";

/**
 * The id of a config team whose records the "gone" browser test seeds, though the config has no such team (it
 * was removed from the file): its records still name it, `sunset`.
 */
export const GONE_TEAM_ID = "team_sunset";

/** The alert receiver's signing secret and the key in its path: neither may ever reach the console. */
export const ALERT_SECRET = "whsec-console-0123456789abcdef";
export const ALERT_HOOK_PATH = "/hooks/console-hook-key-0123456789";

/** The content rule's pattern and the prompt that trips it (the console must never show prompt text). */
export const SECRET_PROMPT = "please summarise the TOPSECRET launch plan for tomorrow";

/** An SDK client that never retries, so every status reaches the caller. */
export function sdk(baseURL: string, token: string): OpenAI {
  return new OpenAI({ apiKey: token, baseURL, maxRetries: 0 });
}

/** A one-message chat call. */
export function ask(client: OpenAI, model: string, content = "hello console") {
  return client.chat.completions.create({ model, messages: [{ role: "user", content }] });
}

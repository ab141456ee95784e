/**
 * Alert webhooks (`alerts:`): where the gateway posts a JSON alert when a budget crosses a threshold, when a
 * counted limit keeps denying the same owner, or when outlier detection ejects a target. Absent: no alert is
 * ever evaluated and the request path pays nothing for it. Each entry is one receiver, and only gets the kinds
 * of alert it names. lib/alerts/ sends them; across a fleet each alert is claimed once in the shared counter
 * store, so a receiver hears of a crossing once, not once per replica.
 *
 * @module
 */
import { z } from "zod";
import { headerMap } from "./header_map.ts";
import { duration } from "./units_schema.ts";

/**
 * An `http://` or `https://` URL without credentials: a query is allowed (many receivers take their key
 * there), a user and password are not, since they would be sent to whoever the URL points to next.
 */
function isWebhookUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return (u.protocol === "http:" || u.protocol === "https:") && u.username === "" && u.password === "";
  } catch {
    return false;
  }
}

const alertTargetSchema = z.strictObject({
  /** The receiver; every alert is a `POST` of a JSON body here. */
  url: z.string().max(2_048).refine(isWebhookUrl, "expected an http:// or https:// URL without credentials"),
  /**
   * The HMAC-SHA256 key that signs each body (`x-gateway-signature: sha256=<hex>`), so the receiver can tell
   * the gateway's alerts from anyone else's posts. Never logged, nor shown by the admin API.
   */
  secret: z.string().min(1).max(1_024).optional(),
  /** Sent with every alert (a receiver's API key); secrets, masked like every header value. */
  headers: headerMap.optional(),
  /**
   * Percentages of a budget's limit (above 0, at most 1000: an overdraft can be worth hearing of too) whose
   * crossing is alerted, once per budget, period and threshold. Deduplicated and sorted, so that a list
   * written twice or out of order means the same. Absent: this receiver gets no budget alerts.
   */
  budget_thresholds: z.array(
    z.number().refine((p) => p > 0 && p <= 1_000, "must be above 0 and at most 1000"),
  ).max(32).transform((ps) => [...new Set(ps)].sort((a, b) => a - b)).optional(),
  /**
   * More than `count` denials of one rule for one owner within `minutes` (fixed windows) is alerted, once
   * per window: one denial is a client being told no, a stream of them is a client or a limit gone wrong.
   * Absent: this receiver gets no denial alerts.
   */
  denials: z.strictObject({
    count: z.number().int().min(1).max(1_000_000_000),
    minutes: z.number().int().min(1).max(1_440),
  }).optional(),
  /** Each target that outlier detection ejects is alerted: off unless set, since ejections can be routine. */
  ejections: z.boolean().default(false),
  /** Per delivery attempt; a slower receiver counts as failed for that attempt (and it is retried). */
  timeout: duration.refine((ms) => ms > 0 && ms <= 300_000, "must be above 0 and at most 5m").default(5_000),
  /**
   * Further attempts after a network error, a timeout, a 5xx or a 429, with exponential backoff; any other
   * answer is final.
   */
  retries: z.number().int().min(0).max(10).default(3),
});

/** The `alerts:` key: up to 32 receivers, enough for every team's channel and few enough to bound fan-out. */
export const alertsSchema = z.array(alertTargetSchema).max(32);

export type AlertsConfig = z.output<typeof alertsSchema>;
export type AlertTargetConfig = z.output<typeof alertTargetSchema>;

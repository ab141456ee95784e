/**
 * The start-up warning for a `server.connections.header_timeout` the runtime edge cannot apply: on Bun a
 * connection's first request head is bounded by Bun's own fixed deadline, not by the setting, and an operator
 * who set it (to harden an exposed port, or to let slow clients in) should hear at start that it does not
 * hold, rather than find out from a stalled connection.
 *
 * @module
 */
import type { Logger } from "./log.ts";
import type { Runtime } from "./runtime/types.ts";

/** Logs `header_timeout_not_applied` when `runtime` has a fixed head deadline other than `headerTimeoutMs`. */
export function warnFixedHeadDeadline(
  runtime: Pick<Runtime, "name" | "fixedHeadDeadlineMs">,
  headerTimeoutMs: number,
  logger: Logger,
): void {
  const fixed = runtime.fixedHeadDeadlineMs;
  if (fixed === undefined || fixed === headerTimeoutMs) return;
  logger.warn("header_timeout_not_applied", {
    runtime: runtime.name,
    header_timeout_ms: headerTimeoutMs,
    runtime_head_deadline_ms: fixed,
    effect: headerTimeoutMs < fixed
      ? "a silent or stalled first request head is closed by the runtime after about its own deadline (up to 4 s later), without a 408"
      : "a first request head not complete by the runtime's own deadline (up to 4 s later) is closed without a 408, before header_timeout",
  });
}

/**
 * The composition root's part of telemetry: the settings from the file and the environment, the dropped
 * counter on the gateway's registry, one log line saying where spans go. Null when telemetry is off.
 *
 * @module
 */
import type { ResolvedConfig } from "../config/types.ts";
import type { Logger } from "../log.ts";
import type { GatewayMetrics } from "../metrics/gateway_metrics.ts";
import { loggableUrl, sdkDisabled, telemetrySettings } from "./settings.ts";
import type { Telemetry } from "./telemetry.ts";

/**
 * OpenTelemetry export as the file and the `OTEL_*` variables set it, or null (off): the dropped counter is
 * registered only then, so a gateway without telemetry shows no telemetry series. The SDK is loaded only then.
 */
export async function configuredTelemetry(
  config: ResolvedConfig,
  outside: { env: Readonly<Record<string, string | undefined>> },
  metrics: GatewayMetrics,
  logger: Logger,
): Promise<Telemetry | null> {
  const settings = telemetrySettings(config.telemetry, outside.env);
  if (settings === null) {
    if (sdkDisabled(outside.env)) logger.info("telemetry_disabled", { by: "OTEL_SDK_DISABLED" });
    return null;
  }
  for (const note of settings.notes) logger.warn("telemetry_variable_ignored", { note });
  const dropped = metrics.registry.counter(
    "gateway_telemetry_dropped_total",
    "Spans and metric exports dropped because the collector was down, slow or the queue full, by signal.",
    ["signal"],
  );
  logger.info("telemetry_export", {
    traces: loggableUrl(settings.tracesUrl),
    metrics: loggableUrl(settings.metricsUrl),
    protocol: settings.protocol,
    sample_ratio: settings.sampleRatio,
    parent_based: settings.parentBased,
    capture_content: settings.captureContent,
  });
  const { createTelemetry } = await import("./telemetry.ts");
  return createTelemetry({ settings, dropped });
}

/**
 * OpenTelemetry export (`telemetry:`): where traces and metrics go over OTLP/HTTP, how many traces are kept,
 * and whether prompts and answers go into spans. Absent (and no `OTEL_EXPORTER_OTLP_*ENDPOINT` in the
 * environment): nothing is traced and the request path pays nothing for it. docs/observability.md explains
 * each key.
 *
 * @module
 */
import { z } from "zod";
import { headerMap } from "./header_map.ts";
import { byteSize, timerDuration } from "./units_schema.ts";

/**
 * An `http://` or `https://` URL without credentials, query or fragment: the collector's URL is logged and
 * is no secret, so a password or an API key has to go in the headers (masked), never in the URL. Exported so
 * the `OTEL_EXPORTER_OTLP_*ENDPOINT` variables are held to the same rule (telemetry/settings.ts).
 */
export function isCollectorUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return (u.protocol === "http:" || u.protocol === "https:") && u.username === "" && u.password === "" &&
      u.search === "" && u.hash === "";
  } catch {
    return false;
  }
}

/**
 * `OTEL_EXPORTER_OTLP_HEADERS`: `key=value` pairs, comma-separated, values percent-encoded. Here, beside the
 * file's `headers`, because both read it: telemetry/settings.ts for what is sent, config/secrets.ts for what
 * is masked, so the two can never disagree on a value.
 */
export function parseOtlpHeaders(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (text ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    try {
      out[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch { /* a malformed pair is skipped, as the SDKs do */ }
  }
  return out;
}

const otlpSchema = z.strictObject({
  /**
   * The collector's base URL (`/v1/traces` and `/v1/metrics` are added); the `OTEL_EXPORTER_OTLP_*ENDPOINT`
   * variables fill it in when absent.
   */
  endpoint: z.string().refine(isCollectorUrl, "expected an http:// or https:// URL without credentials")
    .optional(),
  /** OTLP/HTTP with protobuf bodies, or with JSON. */
  protocol: z.enum(["http/protobuf", "http/json"]).optional(),
  /** Sent with every export (a backend's API key); secrets, masked like every header value. */
  headers: headerMap.optional(),
  /** Share of new traces kept; an incoming sampled (or unsampled) `traceparent` decides for its own trace. */
  sample_ratio: z.number().min(0).max(1).optional(),
  /** Per export; a slower collector counts as down and the batch is dropped (and counted). */
  timeout: timerDuration.refine((ms) => ms > 0, "must be above 0").default(10_000),
  /** Spans held for export at most; past it new spans are dropped (and counted), never waited for. */
  max_queue: z.number().int().min(1).max(1_000_000).default(4_096),
  /** How often queued spans and metrics are sent. */
  interval: timerDuration.refine((ms) => ms > 0, "must be above 0").default(1_000),
});

export const telemetrySchema = z.strictObject({
  otlp: otlpSchema.default(otlpSchema.parse({})),
  /** Prompts and answers in spans (after the alias's content rules): off unless set. */
  capture_content: z.boolean().default(false),
  /** At most this many UTF-8 bytes of captured messages per span attribute; past it text is cut, still JSON. */
  max_content_size: byteSize.refine((n) => n > 0, "must be above 0").default(16 * 1024),
  /** The `service.name` of what is exported. */
  service_name: z.string().min(1).max(256).default("model-gateway"),
});

export type TelemetryConfig = z.output<typeof telemetrySchema>;

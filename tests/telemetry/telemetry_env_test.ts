/**
 * The standard OpenTelemetry variables, end to end, with export turned on by `OTEL_EXPORTER_OTLP_ENDPOINT` alone:
 * `OTEL_TRACES_SAMPLER` decides which traces reach the collector (`always_off` none, not even a sampled caller's;
 * `parentbased_always_off` only a sampled caller's; `always_on` every one, an unsampled caller's too),
 * `OTEL_SDK_DISABLED=true` exports nothing, and `OTEL_EXPORTER_OTLP_PROTOCOL=grpc` (which the gateway does not
 * speak) refuses the start instead of exporting OTLP/HTTP to a gRPC port.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { startOtlpReceiver } from "../helpers/otlp_receiver.ts";

const CONFIG = `
providers:
  local: { type: builtin }
models:
  echo: { type: chat, targets: [{ provider: local, model: echo }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`;

const SAMPLED = "4bf92f3577b34da6a3ce929d0e0e4736";
const UNSAMPLED = "5bf92f3577b34da6a3ce929d0e0e4737";

async function ask(gw: TestGateway, traceparent?: string): Promise<void> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      "content-type": "application/json",
      ...(traceparent ? { traceparent } : {}),
    },
    body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(res.status, 200);
  await res.text();
}

/** Which of a sampled caller's, an unsampled caller's and a new trace reached the collector under `sampler`. */
async function exportedUnder(sampler: string) {
  const otlp = startOtlpReceiver();
  const gw = await startGateway(CONFIG, {
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_TRACES_SAMPLER: sampler,
  });
  let stopped = false;
  try {
    await ask(gw, `00-${SAMPLED}-00f067aa0ba902b7-01`);
    await ask(gw, `00-${UNSAMPLED}-00f067aa0ba902b7-00`);
    await ask(gw);
    // A graceful stop sends whatever was sampled.
    await gw.stop(5_000);
    stopped = true;
    const servers = otlp.spans().filter((s) => s.kind === "SERVER" && s.name === "POST /v1/chat/completions");
    return {
      sampledCaller: servers.some((s) => s.traceId === SAMPLED),
      unsampledCaller: servers.some((s) => s.traceId === UNSAMPLED),
      newTrace: servers.some((s) => s.traceId !== SAMPLED && s.traceId !== UNSAMPLED),
    };
  } finally {
    if (!stopped) await gw.stop(500);
    await otlp.stop();
  }
}

Deno.test("telemetry env: OTEL_TRACES_SAMPLER decides which traces are exported", async () => {
  assert.deepEqual(await exportedUnder("always_off"), {
    sampledCaller: false,
    unsampledCaller: false,
    newTrace: false,
  });
  assert.deepEqual(await exportedUnder("parentbased_always_off"), {
    sampledCaller: true,
    unsampledCaller: false,
    newTrace: false,
  });
  assert.deepEqual(await exportedUnder("always_on"), {
    sampledCaller: true,
    unsampledCaller: true,
    newTrace: true,
  });
});

Deno.test("telemetry env: OTEL_SDK_DISABLED=true exports nothing and says so at start", async () => {
  const otlp = startOtlpReceiver();
  const gw = await startGateway(CONFIG, { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_SDK_DISABLED: "true" });
  let stopped = false;
  try {
    await ask(gw, `00-${SAMPLED}-00f067aa0ba902b7-01`);
    assert.ok(gw.logs.some((l) => l.msg === "telemetry_disabled"), "the start log says why");
    assert.ok(!gw.logs.some((l) => l.msg === "telemetry_export"));
    await gw.stop(5_000);
    stopped = true;
    assert.deepEqual(otlp.requests.map((r) => r.path), [], "nothing reached the collector");
  } finally {
    if (!stopped) await gw.stop(500);
    await otlp.stop();
  }
});

// A binary that refuses to start is the CLI's to test (tests/binary/cli_test.ts: check and serve alike); the
// binary helper waits for a listening line that never comes.
Deno.test({
  name: "telemetry env: OTEL_EXPORTER_OTLP_PROTOCOL=grpc refuses the start, naming the variable",
  ignore: Deno.env.get("GATEWAY_BIN") !== undefined,
}, async () => {
  const otlp = startOtlpReceiver();
  try {
    await assert.rejects(
      startGateway(CONFIG, { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }),
      /OTEL_EXPORTER_OTLP_PROTOCOL is "grpc": the gateway exports OTLP over HTTP only/,
    );
  } finally {
    await otlp.stop();
  }
});

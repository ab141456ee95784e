/**
 * How the file's `telemetry:` block and the standard `OTEL_*` variables decide export (off unless one asks for
 * it; the variables fill in what the block leaves out), and which semantic-convention names are emitted.
 */
import assert from "node:assert/strict";
import { telemetrySchema } from "../config/telemetry_schema.ts";
import { semconvNames } from "./semconv.ts";
import { telemetrySettings, TelemetrySetupError } from "./settings.ts";

const block = (input: unknown) => telemetrySchema.parse(input);

Deno.test("telemetry settings: off without a block and without an OTLP endpoint variable", () => {
  assert.equal(telemetrySettings(null, {}), null);
  assert.equal(
    telemetrySettings(null, { OTEL_SERVICE_NAME: "x", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }),
    null,
  );
});

Deno.test("telemetry settings: OTEL_EXPORTER_OTLP_ENDPOINT alone turns export on, with the variables' settings", () => {
  const settings = telemetrySettings(null, {
    OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/",
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=abc%20def,broken,other=1",
    OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
    OTEL_TRACES_SAMPLER_ARG: "0.25",
    OTEL_SERVICE_NAME: "edge-gateway",
  })!;
  assert.equal(settings.tracesUrl, "http://collector:4318/v1/traces");
  assert.equal(settings.metricsUrl, "http://collector:4318/v1/metrics");
  assert.equal(settings.protocol, "http/json");
  assert.deepEqual(settings.headers, { "x-api-key": "abc def", other: "1" });
  assert.equal(settings.sampleRatio, 0.25);
  assert.equal(settings.serviceName, "edge-gateway");
  assert.equal(settings.captureContent, false);
});

Deno.test("telemetry settings: a per-signal endpoint variable is used as given", () => {
  const settings = telemetrySettings(null, {
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://traces.example/otlp",
  })!;
  assert.equal(settings.tracesUrl, "https://traces.example/otlp");
  assert.equal(settings.metricsUrl, "http://localhost:4318/v1/metrics");
});

Deno.test("telemetry settings: the block wins over the variables, which fill in what it leaves out", () => {
  const settings = telemetrySettings(
    block({ otlp: { endpoint: "http://127.0.0.1:4318", sample_ratio: 0.1 } }),
    {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://elsewhere:4318",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20x",
    },
  )!;
  assert.equal(settings.tracesUrl, "http://127.0.0.1:4318/v1/traces");
  assert.equal(settings.sampleRatio, 0.1);
  assert.equal(settings.protocol, "http/json", "the protocol from the variables");
  assert.deepEqual(settings.headers, { authorization: "Bearer x" }, "the headers from the variables");
  const own = telemetrySettings(
    block({ otlp: { headers: { authorization: "mine" } }, capture_content: true }),
    {},
  )!;
  assert.equal(
    own.tracesUrl,
    "http://localhost:4318/v1/traces",
    "a block without endpoint: the OTLP default",
  );
  assert.deepEqual(own.headers, { authorization: "mine" });
  assert.equal(own.captureContent, true);
});

Deno.test("telemetry schema: a collector URL with credentials or a query is refused", () => {
  for (const endpoint of ["http://user:pw@collector:4318", "http://collector:4318?x=1", "ftp://collector"]) {
    assert.throws(() => block({ otlp: { endpoint } }), endpoint);
  }
  assert.throws(() => block({ otlp: { sample_ratio: 2 } }));
  assert.throws(() => block({ otlp: { protocol: "grpc" } }));
});

Deno.test("telemetry settings: an endpoint variable with credentials or a query is refused, naming it, not its value", () => {
  const cases: [string, string][] = [
    ["OTEL_EXPORTER_OTLP_ENDPOINT", "http://tenant:pw-7f3e9a@collector:4318"],
    ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://collector/v1/traces?api_key=pw-7f3e9a"],
    ["OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "https://collector/v1/metrics#pw-7f3e9a"],
    ["OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"],
  ];
  for (const [variable, value] of cases) {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", [variable]: value };
    assert.throws(() => telemetrySettings(null, env), (err: unknown) => {
      assert.ok(err instanceof TelemetrySetupError);
      assert.match(err.message, new RegExp(`^${variable} must be an http`));
      assert.ok(!err.message.includes("pw-7f3e9a"), err.message);
      return true;
    });
  }
  // The file's endpoint wins, so a variable it overrides is not read (nor refused).
  const fromFile = telemetrySettings(block({ otlp: { endpoint: "http://127.0.0.1:4318" } }), {
    OTEL_EXPORTER_OTLP_ENDPOINT: "http://tenant:pw@elsewhere:4318",
  })!;
  assert.equal(fromFile.tracesUrl, "http://127.0.0.1:4318/v1/traces");
});

Deno.test("telemetry settings: OTEL_TRACES_SAMPLER's standard values are honoured, with OTEL_TRACES_SAMPLER_ARG", () => {
  const on = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };
  const sampler = (env: Record<string, string>) => {
    const s = telemetrySettings(null, { ...on, ...env })!;
    return { parentBased: s.parentBased, ratio: s.sampleRatio, notes: s.notes };
  };
  const cases: [Record<string, string>, boolean, number][] = [
    [{}, true, 1],
    [{ OTEL_TRACES_SAMPLER: "always_on" }, false, 1],
    [{ OTEL_TRACES_SAMPLER: "always_off" }, false, 0],
    [{ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.3" }, false, 0.3],
    [{ OTEL_TRACES_SAMPLER: "traceidratio" }, false, 1],
    [{ OTEL_TRACES_SAMPLER: "parentbased_always_on" }, true, 1],
    [{ OTEL_TRACES_SAMPLER: "parentbased_always_off" }, true, 0],
    [{ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.25" }, true, 0.25],
    [{ OTEL_TRACES_SAMPLER: "always_off", OTEL_TRACES_SAMPLER_ARG: "0.5" }, false, 0],
  ];
  for (const [env, parentBased, ratio] of cases) {
    assert.deepEqual(sampler(env), { parentBased, ratio, notes: [] }, JSON.stringify(env));
  }
  // An unknown value or an argument out of range is ignored, with a note naming it (the specification's rule).
  const unknown = sampler({ OTEL_TRACES_SAMPLER: "jaeger_remote" });
  assert.deepEqual([unknown.parentBased, unknown.ratio], [true, 1]);
  assert.match(unknown.notes.join(), /OTEL_TRACES_SAMPLER "jaeger_remote" is not one the gateway knows/);
  const badArg = sampler({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "1.5" });
  assert.deepEqual([badArg.parentBased, badArg.ratio], [false, 1]);
  assert.match(badArg.notes.join(), /OTEL_TRACES_SAMPLER_ARG "1.5" is no share between 0 and 1/);
  // The file's sample_ratio wins, parent-based as documented.
  const fromFile = telemetrySettings(block({ otlp: { sample_ratio: 0.5 } }), {
    OTEL_TRACES_SAMPLER: "always_off",
  })!;
  assert.deepEqual([fromFile.parentBased, fromFile.sampleRatio], [true, 0.5]);
});

Deno.test("telemetry settings: OTEL_SDK_DISABLED=true turns export off, the file's block too", () => {
  const on = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };
  for (const value of ["true", "TRUE", "True"]) {
    assert.equal(telemetrySettings(null, { ...on, OTEL_SDK_DISABLED: value }), null, value);
    assert.equal(telemetrySettings(block({}), { OTEL_SDK_DISABLED: value }), null, `${value}, with a block`);
  }
  assert.deepEqual(telemetrySettings(null, { ...on, OTEL_SDK_DISABLED: "false" })!.notes, []);
  assert.deepEqual(telemetrySettings(null, { ...on, OTEL_SDK_DISABLED: "" })!.notes, []);
  // Only "true" is true; another value leaves telemetry on and says so.
  assert.match(
    telemetrySettings(null, { ...on, OTEL_SDK_DISABLED: "1" })!.notes.join(),
    /OTEL_SDK_DISABLED "1" is not true or false: telemetry stays on/,
  );
});

Deno.test("telemetry settings: a protocol variable the gateway does not speak (grpc) is refused, naming it", () => {
  const on = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4317" };
  const cases: Record<string, string>[] = [
    { OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" },
    { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "grpc" },
    { OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: "http/protobuf" },
  ];
  for (const env of cases) {
    const name = Object.keys(env).at(-1)!;
    assert.throws(() => telemetrySettings(null, { ...on, ...env }), (err: unknown) => {
      assert.ok(err instanceof TelemetrySetupError);
      assert.equal(err.variable, name);
      assert.match(err.message, new RegExp(`^${name} is `));
      return true;
    });
  }
  assert.equal(
    telemetrySettings(null, { ...on, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf" })!.protocol,
    "http/protobuf",
  );
  // The file's protocol wins, so the variable is not read (nor refused).
  const fromFile = telemetrySettings(block({ otlp: { protocol: "http/json" } }), {
    OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
  });
  assert.equal(fromFile!.protocol, "http/json");
  // A block that leaves the protocol to an inherited grpc variable is told where the file sets it.
  assert.throws(
    () => telemetrySettings(block({}), { OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }),
    /set telemetry\.otlp\.protocol in the file/,
  );
});

Deno.test("telemetry settings: the protocol a variable names is used, in any case, a per-signal one alone too", () => {
  const on = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };
  const protocol = (env: Record<string, string>) => telemetrySettings(null, { ...on, ...env })!.protocol;
  // Set alone, a per-signal variable names the one protocol (it started so before; any OTLP/HTTP collector
  // takes either).
  assert.equal(protocol({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json" }), "http/json");
  assert.equal(protocol({ OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: "http/json" }), "http/json");
  assert.equal(protocol({ OTEL_EXPORTER_OTLP_PROTOCOL: "HTTP/PROTOBUF" }), "http/protobuf");
  assert.equal(protocol({ OTEL_EXPORTER_OTLP_PROTOCOL: "Http/Json" }), "http/json");
  assert.equal(protocol({ OTEL_EXPORTER_OTLP_PROTOCOL: "" }), "http/protobuf");
  // Two that disagree are refused, naming both.
  assert.throws(
    () =>
      protocol({
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: "http/protobuf",
      }),
    /OTEL_EXPORTER_OTLP_METRICS_PROTOCOL is http\/protobuf but OTEL_EXPORTER_OTLP_TRACES_PROTOCOL is http\/json/,
  );
  // Sampler names in any case; a name of Object.prototype's is no sampler.
  const sampler = (value: string) => telemetrySettings(null, { ...on, OTEL_TRACES_SAMPLER: value })!;
  assert.equal(sampler("ALWAYS_OFF").sampleRatio, 0);
  assert.equal(sampler("ParentBased_Always_Off").parentBased, true);
  for (const name of ["constructor", "__proto__", "toString"]) {
    const s = sampler(name);
    assert.deepEqual([s.parentBased, s.sampleRatio], [true, 1], name);
    assert.match(s.notes.join(), /is not one the gateway knows/, name);
  }
  // An empty endpoint variable is unset, beside a per-signal one.
  const traced = telemetrySettings(null, {
    OTEL_EXPORTER_OTLP_ENDPOINT: "",
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces",
  })!;
  assert.equal(traced.tracesUrl, "http://collector:4318/v1/traces");
});

Deno.test("semconv: the pinned names by default; the latest under OTEL_SEMCONV_STABILITY_OPT_IN", () => {
  const pinned = semconvNames(undefined);
  assert.equal(pinned.provider, "gen_ai.provider.name");
  assert.equal(pinned.reasoningOutputTokens, "gen_ai.usage.output_tokens.reasoning");
  const latest = semconvNames("http, gen_ai_latest_experimental");
  assert.equal(latest.reasoningOutputTokens, "gen_ai.usage.reasoning.output_tokens");
  assert.equal(latest.operation, "gen_ai.operation.name");
  assert.deepEqual(semconvNames("http"), pinned, "another category's opt-in changes nothing here");
});

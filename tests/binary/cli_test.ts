/**
 * The command line as operators use it: `check`, `token new`, and `serve` with a graceful SIGTERM, each run
 * as a real process.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { MAIN, PERMISSIONS, run, SERVABLE, tempConfig } from "./cli_helpers.ts";

Deno.test("cli: check passes the shipped config and exits 0", async () => {
  const { code, stdout } = await run(["check"]);
  assert.equal(code, 0);
  assert.match(stdout, /is valid/);
});

Deno.test("cli: check lists every issue with path and line, exits 1, and never prints secrets", async () => {
  const file = await tempConfig(`server: { port: "eighty" }
providers:
  up: { type: openai, base_url: "http://127.0.0.1:1/v1", api_key: "\${UPSTREAM_KEY}" }
models:
  chat-a: { type: chat, targets: [ { provider: missing, model: x } ] }
tokens:
  - { name: t, token: "\${CLIENT_TOKEN}", models: ["nothing-*"] }
`);
  const { code, stderr, stdout } = await run(["check", "--config", file], {
    CLIENT_TOKEN: "super-secret-client-token-value",
  });
  assert.equal(code, 1);
  assert.equal(stdout, "");
  assert.match(stderr, /:1: server\.port: /);
  assert.match(stderr, /:3: providers\.up\.api_key: .*UPSTREAM_KEY/);
  assert.match(stderr, /:5: models\.chat-a\.targets\.0\.provider: /);
  assert.ok(!stderr.includes("super-secret-client-token-value"));
  // `serve` refuses the same config with the same messages.
  const served = await run(["serve", "--config", file, "--port", "0"], {
    CLIENT_TOKEN: "super-secret-client-token-value",
  });
  assert.equal(served.code, 1);
  assert.equal(served.stderr, stderr);
  await Deno.remove(file);
});

Deno.test("cli: a secret written into a key (no space after ':') is never printed; the key is cut, with a hint", async () => {
  const cases = [
    ["api_key:sk-proj-SECRET0123456789", "SECRET0123456789", "providers.up.api_key:…"],
    [
      'headers: {Authorization:"Bearer sk-proj-SECRET9876543210"}',
      "SECRET9876543210",
      "providers.up.headers.Authorization:…",
    ],
  ];
  for (const [written, secret, path] of cases) {
    const file = await tempConfig(`providers:
  local: { type: builtin }
  up: { type: openai, base_url: "http://127.0.0.1:9/v1", ${written} }
models:
  chat-a: { type: chat, targets: [ { provider: local, model: echo } ] }
`);
    const checked = await run(["check", "--config", file]);
    assert.equal(checked.code, 1);
    assert.ok(!checked.stderr.includes(secret), checked.stderr);
    assert.match(
      checked.stderr,
      new RegExp(`:3: ${path.replaceAll(".", "\\.")}: .*missing a space after ':'`),
    );
    await Deno.remove(file);
  }
});

Deno.test("cli: check refuses a server.host with a port, as serve does, with the same message", async () => {
  const file = await tempConfig(`${SERVABLE}server: { host: "0.0.0.0:8080" }\nusage: { sqlite: none }\n`);
  const checked = await run(["check", "--config", file]);
  assert.equal(checked.code, 1);
  assert.match(
    checked.stderr,
    /:3: server\.host: must be an IP address or a host name, without a scheme or a port/,
  );
  const served = await run(["serve", "--config", file, "--port", "0"]);
  assert.equal(served.code, 1);
  assert.equal(served.stderr, checked.stderr);
  const flag = await run(["serve", "--config", file, "--host", "http://0.0.0.0"]);
  assert.equal(flag.code, 2);
  assert.match(flag.stderr, /^Invalid --host: must be an IP address or a host name/);
  await Deno.remove(file);
});

Deno.test("cli: check refuses the $PORT serve would refuse, naming it", async () => {
  const file = await tempConfig(`${SERVABLE}usage: { sqlite: none }\n`);
  const checked = await run(["check", "--config", file], { PORT: "99999" });
  assert.equal(checked.code, 1);
  assert.equal(checked.stderr, 'Invalid port "99999" ($PORT): use a number from 0 to 65535.\n');
  const served = await run(["serve", "--config", file], { PORT: "99999" });
  assert.equal(served.code, 2);
  assert.equal(served.stderr, checked.stderr);
  assert.equal((await run(["check", "--config", file], { PORT: "8081" })).code, 0);
  await Deno.remove(file);
});

Deno.test("cli: check refuses a usage.sqlite whose directory is a file; serve refuses it alike before it opens anything", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/afile`, "");
  const file = await tempConfig(`${SERVABLE}usage: { sqlite: "${dir}/afile/usage.sqlite" }\n`);
  const checked = await run(["check", "--config", file]);
  assert.equal(checked.code, 1);
  assert.match(
    checked.stderr,
    /: usage\.sqlite: .*afile is a file, not a directory: the usage database cannot go in it/,
  );
  const served = await run(["serve", "--config", file, "--port", "0"], {}, [...PERMISSIONS, "--allow-write"]);
  assert.equal(served.code, 1);
  // Not the raw `EEXIST … mkdir` of opening it, nor the listen address.
  assert.equal(served.stderr, checked.stderr);

  // A directory still to be made is fine, and check makes nothing.
  await Deno.writeTextFile(file, `${SERVABLE}usage: { sqlite: "${dir}/new/usage.sqlite" }\n`);
  const fresh = await run(["check", "--config", file]);
  assert.equal(fresh.code, 0, fresh.stderr);
  await assert.rejects(Deno.stat(`${dir}/new`), Deno.errors.NotFound);
  await Deno.remove(file);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("cli: check and serve refuse an OTLP endpoint variable with a password, naming it, never printing it", async () => {
  const file = await tempConfig("providers: { local: { type: builtin } }\nmodels: {}\n");
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://tenant:collector-pw-7f3e9a@127.0.0.1:4318" };
  const checked = await run(["check", "--config", file], env);
  assert.equal(checked.code, 1);
  assert.match(
    checked.stderr,
    /: telemetry: OTEL_EXPORTER_OTLP_ENDPOINT must be an http:\/\/ or https:\/\/ URL without credentials/,
  );
  // serve with write access, as it needs for the usage database (without it, that is refused too).
  const served = await run(["serve", "--config", file, "--port", "0"], env, [
    ...PERMISSIONS,
    "--allow-write",
  ]);
  assert.equal(served.code, 1);
  assert.equal(served.stderr, checked.stderr);
  for (const out of [checked.stdout, checked.stderr, served.stdout, served.stderr]) {
    assert.ok(!out.includes("collector-pw-7f3e9a"), out);
  }
  await Deno.remove(file);
});

Deno.test("cli: check refuses OTEL_EXPORTER_OTLP_PROTOCOL=grpc as serve does, and notes a sampler it will ignore", async () => {
  const file = await tempConfig("providers: { local: { type: builtin } }\nmodels: {}\n");
  const grpc = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" };
  const checked = await run(["check", "--config", file], grpc);
  assert.equal(checked.code, 1);
  assert.match(
    checked.stderr,
    /: telemetry: OTEL_EXPORTER_OTLP_PROTOCOL is "grpc": the gateway exports OTLP over HTTP/,
  );
  const served = await run(["serve", "--config", file, "--port", "0"], grpc, [
    ...PERMISSIONS,
    "--allow-write",
  ]);
  assert.equal(served.code, 1);
  assert.equal(served.stderr, checked.stderr);
  const unknown = await run(["check", "--config", file], {
    OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318",
    OTEL_TRACES_SAMPLER: "xray",
  });
  assert.equal(unknown.code, 0, unknown.stderr);
  assert.match(
    unknown.stderr,
    /Note: serve will ignore these variables:\n.*OTEL_TRACES_SAMPLER "xray" is not one/,
  );
  await Deno.remove(file);
});

Deno.test("cli: check reports alias cycles, alias bombs and oversized files as issues, exit 1, no stack trace", async () => {
  const base = "providers: { local: { type: builtin } }\nmodels: {}\n";
  const bomb = ["a: &a [x, x, x, x, x, x, x, x, x]"];
  for (let i = 1; i < 9; i++) {
    const [name, prev] = [String.fromCharCode(97 + i), String.fromCharCode(96 + i)];
    bomb.push(`${name}: &${name} [${`*${prev}, `.repeat(8)}*${prev}]`);
  }
  const cases: [string, RegExp][] = [
    [
      `${base}server: &s\n  timeouts: *s\n`,
      /:4: server\.timeouts: alias \*s refers to a value that contains it/,
    ],
    [`${base}tokens: &t [*t]\n`, /:3: tokens\.0: alias \*t refers to a value that contains it \(a cycle\)/],
    [
      `${base}x-bomb:\n${bomb.map((l) => `  ${l}`).join("\n")}\n`,
      /x-bomb\.[a-i]\.\d: aliases expand to more than/,
    ],
    [`${base}# ${"x".repeat(4 * 1024 * 1024)}\n`, /\(document\): config file is larger than 4 MiB/],
  ];
  for (const [yaml, expected] of cases) {
    const file = await tempConfig(yaml);
    const { code, stdout, stderr } = await run(["check", "--config", file]);
    assert.equal(code, 1, stderr);
    assert.equal(stdout, "");
    assert.match(stderr, expected);
    assert.doesNotMatch(stderr, /RangeError|Error:|\s{4}at /);
    await Deno.remove(file);
  }
});

Deno.test("cli: a guardrail that cannot be set up (no AWS region) is an issue at its path for check and serve, no stack trace", async () => {
  const file = await tempConfig(`guardrails:
  bg: { type: bedrock, guardrail_identifier: abc123, guardrail_version: DRAFT }
providers:
  local: { type: builtin }
models:
  chat-a: { type: chat, guardrails: [bg], targets: [{ provider: local, model: echo }] }
`);
  // Empty counts as unset, whatever the environment running the tests has.
  const env = { AWS_REGION: "", AWS_DEFAULT_REGION: "", AWS_ACCESS_KEY_ID: "", AWS_SECRET_ACCESS_KEY: "" };
  const checked = await run(["check", "--config", file], env);
  assert.equal(checked.code, 1);
  assert.equal(checked.stdout, "");
  assert.match(checked.stderr, /: guardrails\.bg: bedrock guardrail: no AWS region/);
  assert.doesNotMatch(checked.stderr, /\s+at /);
  // serve with write access, as it needs for the usage database (without it, that is refused too).
  const served = await run(["serve", "--config", file, "--port", "0"], env, [
    ...PERMISSIONS,
    "--allow-write",
  ]);
  assert.equal(served.code, 1);
  assert.equal(served.stderr, checked.stderr);
  await Deno.remove(file);
});

Deno.test("cli: check FILE without --config refuses the word, exit 2, instead of checking the shipped config", async () => {
  const file = await tempConfig(`server: { port: "eighty" }\n`);
  const { code, stdout, stderr } = await run(["check", file]);
  assert.equal(code, 2);
  assert.equal(stdout, "");
  assert.ok(
    stderr.startsWith(`Unexpected argument '${file}' (did you mean --config ${file}?)\nUsage:`),
    stderr,
  );
  await Deno.remove(file);
});

Deno.test("cli: GATEWAY_CONFIG selects the config file; a missing file is reported", async () => {
  const { code, stderr } = await run(["check"], { GATEWAY_CONFIG: "/nonexistent/gateway.yaml" });
  assert.equal(code, 1);
  assert.match(stderr, /nonexistent\/gateway\.yaml/);
});

Deno.test("cli: token new prints a high-entropy token and the config line with its sha256", async () => {
  const first = await run(["token", "new", "--name", "web-prod", "--environment", "production"]);
  const second = await run(["token", "new"]);
  assert.equal(first.code, 0);
  const token = /Token \(shown once; store it as a secret\): (\S+)/.exec(first.stdout)?.[1];
  assert.ok(token && token.length >= 40);
  assert.ok(!second.stdout.includes(token), "every token is fresh");
  const sha = createHash("sha256").update(token).digest("hex");
  assert.match(first.stdout, new RegExp(`name: "web-prod", environment: "production", sha256: ${sha}`));
});

Deno.test("cli: token new prints a line check accepts whatever the environment, and refuses a name the config would", async () => {
  const made = await run(["token", "new", "--name", "web.prod@eu", "--environment", "staging #eu, {x}"]);
  assert.equal(made.code, 0, made.stderr);
  const line = /^ {2}- \{ name: .*$/m.exec(made.stdout)?.[0];
  assert.ok(line, made.stdout);
  const file = await tempConfig(`providers: { local: { type: builtin } }
models: { chat-a: { type: chat, targets: [{ provider: local, model: echo }] } }
tokens:
${line}
`);
  const checked = await run(["check", "--config", file]);
  assert.equal(checked.code, 0, checked.stderr);
  await Deno.remove(file);
  for (const name of ["my app", "a,b", ""]) {
    const refused = await run(["token", "new", "--name", name]);
    assert.equal(refused.code, 2, name);
    assert.equal(refused.stdout, "", "no token is printed");
    assert.match(
      refused.stderr,
      /^Invalid --name .*: (use letters, digits and \. _ : @ -|must not be empty)\.$/m,
    );
  }
  const empty = await run(["token", "new", "--environment", ""]);
  assert.equal(empty.code, 2);
  assert.match(empty.stderr, /Invalid --environment "": must not be empty/);
});

Deno.test("cli: serve answers, reloads on SIGHUP, and on SIGTERM lets an in-flight stream finish and exits 0", async () => {
  const file = await tempConfig(`server: { shutdown_timeout: 5s }
usage: { sqlite: none }
providers:
  local: { type: builtin }
models:
  chat-default: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
  - { name: t, environment: test, token: "\${TEST_GATEWAY_TOKEN}", models: ["*"] }
`);
  const token = "gw-cli-test-token-1234567890";
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...PERMISSIONS, MAIN, "serve", "--config", file, "--port", "0"],
    env: { TEST_GATEWAY_TOKEN: token },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const nextLine = async (): Promise<Record<string, unknown>> => {
    while (!buffered.includes("\n")) {
      const { done, value } = await lines.read();
      if (done) throw new Error("gateway exited early");
      buffered += value;
    }
    const nl = buffered.indexOf("\n");
    const line = buffered.slice(0, nl);
    buffered = buffered.slice(nl + 1);
    return JSON.parse(line);
  };
  const listening = await nextLine();
  assert.equal(listening.msg, "listening");
  const url = String(listening.url);

  const health = await fetch(`${url}/healthz`);
  assert.equal(health.status, 200);
  await health.body?.cancel();
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "chat-default",
      stream: true,
      messages: [{ role: "user", content: "one two three" }],
    }),
  });
  assert.equal(response.status, 200);
  const reader = response.body!.getReader();
  await reader.read();
  // SIGHUP reloads the config file without disturbing the stream in flight.
  child.kill("SIGHUP");
  const logged: Record<string, unknown>[] = [];
  let reloaded = await nextLine();
  while (reloaded.msg === "request") {
    logged.push(reloaded);
    reloaded = await nextLine();
  }
  assert.equal(reloaded.msg, "config_reloaded");
  assert.equal(reloaded.trigger, "signal");
  child.kill("SIGTERM");
  let text = "";
  const decoder = new TextDecoder();
  for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value);
  assert.ok(text.trimEnd().endsWith("data: [DONE]"));
  const status = await child.status;
  assert.equal(status.code, 0);
  for (let more = true; more;) {
    try {
      logged.push(await nextLine());
    } catch {
      more = false;
    }
  }
  assert.ok(logged.some((l) => l.msg === "shutdown" && l.signal === "SIGTERM"));
  const access = logged.filter((l) => l.msg === "request");
  assert.ok(access.some((l) => l.path === "/v1/chat/completions" && l.status === 200 && l.token === "t"));
  await Deno.remove(file);
});

Deno.test("cli: serve on a port that is taken exits 1 with a clear message, no stack trace", async () => {
  const blocker = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (blocker.addr as Deno.NetAddr).port;
  const file = await tempConfig(`usage: { sqlite: none }
providers: { local: { type: builtin } }
models: { chat-default: { type: chat, targets: [ { provider: local, model: echo } ] } }
`);
  try {
    const { code, stderr } = await run([
      "serve",
      "--config",
      file,
      "--port",
      String(port),
      "--host",
      "127.0.0.1",
    ]);
    assert.equal(code, 1);
    assert.match(stderr, new RegExp(`^Cannot listen on 127\\.0\\.0\\.1:${port}: `));
    assert.ok(!stderr.includes("    at "), "no stack trace");
  } finally {
    blocker.close();
    await Deno.remove(file);
  }
});

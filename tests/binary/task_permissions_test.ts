/**
 * `deno task start`'s permissions (read config/, data/, lib/; write data/): what they leave out is refused by
 * `check` and `serve` alike, before serving, with the path and the fix; what they include is enough to serve.
 */
import assert from "node:assert/strict";
import { countRows } from "../helpers/usage.ts";
import { MAIN, ROOT, run, SERVABLE, startTaskFlags } from "./cli_helpers.ts";

Deno.test("`deno task start --config FILE` outside config/: refused, saying Deno may not read it and what to do", async () => {
  // Deno's refusal (NotCapable) has no error code: the message said only "cannot read config file".
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/my.yaml`;
    await Deno.copyFile(`${ROOT}/config/gateway.yaml`, file);
    const flags = await startTaskFlags(dir);
    for (const command of ["serve", "check"]) {
      const { code, stderr } = await run([command, "--config", file, "--port", "0"], {}, flags);
      assert.equal(code, 1, stderr);
      assert.match(stderr, new RegExp(`^Invalid config ${file}:`));
      assert.match(stderr, /cannot read config file \(Deno's permissions do not let it read this path/);
      assert.match(stderr, /put the file in config\/, or run deno with --allow-read for it\)/);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a pricing.catalog outside what `deno task start` may read: check and serve under its permissions refuse it alike, naming the path and the fix", async () => {
  // The start said "cannot read price catalog" and nothing more, while check run with --allow-read passed.
  const dir = await Deno.makeTempDir();
  try {
    const catalog = `${dir}/prices.yaml`;
    await Deno.copyFile(`${ROOT}/lib/pricing/catalog.yaml`, catalog);
    await Deno.mkdir(`${dir}/data`);
    const file = `${dir}/data/gateway.yaml`;
    await Deno.writeTextFile(
      file,
      `${SERVABLE}usage: { sqlite: none }\npricing: { catalog: "${catalog}" }\n`,
    );
    const flags = await startTaskFlags(dir);
    for (const command of ["serve", "check"]) {
      const { code, stderr } = await run([command, "--config", file, "--port", "0"], {}, flags);
      assert.equal(code, 1, stderr);
      assert.equal(
        stderr,
        `Invalid config ${file}:\n${file}:4: pricing.catalog: ${catalog}: (document): cannot read price catalog ` +
          "(Deno's permissions do not let it read this path: `deno task start` reads only config/ and data/; " +
          "put the catalog in config/, or run deno with --allow-read for it)\n",
      );
    }
    // With read access to it, as the message says, the same file is valid.
    const allowed = await run(["check", "--config", file]);
    assert.equal(allowed.code, 0, allowed.stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("`deno task start`'s permissions are enough to serve, including the usage store's worker", async () => {
  const root = ROOT;
  const dir = await Deno.makeTempDir();
  const flags = await startTaskFlags(dir);
  const token = "gw-cli-test-token-permissions";
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...flags, MAIN, "serve", "--config", `${root}/config/gateway.yaml`, "--port", "0"],
    cwd: dir,
    env: { GATEWAY_TOKEN: token },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  try {
    while (!text.includes('"msg":"listening"')) {
      const { done, value } = await output.read();
      if (done) throw new Error(`gateway exited: ${await new Response(child.stderr).text()}`);
      text += value;
    }
    const url = JSON.parse(text.split("\n").find((l) => l.includes('"msg":"listening"'))!).url;
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-default", messages: [{ role: "user", content: "hi" }] }),
    });
    assert.equal(response.status, 200, await response.text());
    // A reload validates in the config worker, which these permissions must let start.
    child.kill("SIGHUP");
    while (!/"msg":"config_reload(ed|_failed)"/.test(text)) {
      const { done, value } = await output.read();
      if (done) throw new Error(`gateway exited: ${await new Response(child.stderr).text()}`);
      text += value;
    }
    assert.match(text, /"msg":"config_reloaded"/);
    assert.doesNotMatch(text, /config_worker_unavailable/);
  } finally {
    child.kill("SIGTERM");
    await output.cancel();
  }
  assert.equal((await child.status).code, 0);
  await child.stderr.cancel();
  // The worker stored the request's usage record, flushed at shutdown.
  assert.equal(countRows(`${dir}/data/usage.sqlite`).rows, 1);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("usage files outside what `deno task start` may write: serve under its permissions refuses each before it listens, naming the path and the fix; check notes it", async () => {
  // serve listened, and every record meant for them was lost (the database's worker failed, the JSONL copy and
  // the spill file counted usage_jsonl_lost / usage_spill_lost); check said nothing.
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/data`);
    await Deno.mkdir(`${dir}/logs`);
    const flags = await startTaskFlags(dir);
    const cases: [string, string][] = [
      ["usage.sqlite", `usage: { sqlite: "${dir}/logs/usage.sqlite", spill: "${dir}/data/usage.spill" }`],
      [
        "usage.jsonl",
        `usage: { sqlite: none, jsonl: "${dir}/logs/usage.jsonl", spill: "${dir}/data/usage.spill" }`,
      ],
      ["usage.spill", `usage: { sqlite: "${dir}/data/usage.sqlite", spill: "${dir}/logs/usage.spill" }`],
    ];
    const file = `${dir}/data/gateway.yaml`;
    for (const [key, usage] of cases) {
      await Deno.writeTextFile(file, `${SERVABLE}${usage}\n`);
      const issue =
        `${file}:3: ${key}: Deno's permissions do not let the gateway read and write ${dir}/logs/${key}: ` +
        "run deno with --allow-read and --allow-write for it (`deno task start` has them for data/ only)\n";
      const served = await run(["serve", "--config", file, "--port", "0"], {}, flags);
      assert.equal(served.code, 1, `serve ${key}: ${served.stderr}`);
      assert.equal(served.stderr, `Invalid config ${file}:\n${issue}`, `serve ${key}`);
      // check (often run with other flags than serve) passes, and says what serve with its flags would refuse.
      const checked = await run(["check", "--config", file], {}, flags);
      assert.equal(checked.code, 0, `check ${key}: ${checked.stderr}`);
      assert.equal(
        checked.stderr,
        `Note: serve run with this check's permissions would refuse to start:\n${issue}`,
        `check ${key}`,
      );
      // Under data/, as the message says, neither has anything to say.
      await Deno.writeTextFile(file, `${SERVABLE}${usage.replaceAll(`${dir}/logs/`, `${dir}/data/`)}\n`);
      const moved = await run(["check", "--config", file], {}, flags);
      assert.equal(moved.code, 0, `${key}: ${moved.stderr}`);
      assert.equal(moved.stderr, "", key);
    }
    assert.deepEqual([...Deno.readDirSync(`${dir}/logs`)], [], "check and serve wrote nothing there");
    // config/ may be read, not written: only what is left out is named.
    const inConfig = `${ROOT}/config/usage-permission-test.jsonl`;
    await Deno.writeTextFile(
      file,
      `${SERVABLE}usage: { sqlite: none, jsonl: "${inConfig}", spill: "${dir}/data/s" }\n`,
    );
    const served = await run(["serve", "--config", file, "--port", "0"], {}, flags);
    assert.equal(served.code, 1);
    assert.match(
      served.stderr,
      new RegExp(`usage\\.jsonl: Deno's permissions do not let the gateway write ${inConfig}: `),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a SQLite URI for usage.sqlite under `deno task start`'s permissions: serve refuses it before it listens, saying Deno does not read it and the path to give; check notes it", async () => {
  // Deno reads a `file:` name as a SQLite URI only with every permission granted; under the task's it took the
  // whole name as a path, outside data/, and the start failed on opening the database after check said valid.
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/data`);
    const flags = await startTaskFlags(dir);
    const file = `${dir}/data/gateway.yaml`;
    const uri = `file:${dir}/data/usage.sqlite?mode=rwc`;
    await Deno.writeTextFile(
      file,
      `${SERVABLE}usage:\n  sqlite: "${uri}"\n  spill: "${dir}/data/usage.spill"\n`,
    );
    const issue =
      `${file}:4: usage.sqlite: Deno reads a SQLite URI (file:…) only with every permission granted ` +
      `(-A, and no --deny-* or --ignore-* flag); under these permissions it takes ${uri} as a file name in the ` +
      `working directory: give usage.sqlite as a path (${dir}/data/usage.sqlite)\n`;
    const served = await run(["serve", "--config", file, "--port", "0"], {}, flags);
    assert.equal(served.code, 1, served.stderr);
    assert.equal(served.stderr, `Invalid config ${file}:\n${issue}`);
    const checked = await run(["check", "--config", file], {}, flags);
    assert.equal(checked.code, 0, checked.stderr);
    assert.equal(
      checked.stderr,
      `Note: serve run with this check's permissions would refuse to start:\n${issue}`,
    );
    // -A with a --deny-* flag is no longer every permission: Deno takes the name as a path there too (taken
    // for -A, serve listened and made a file named after the whole URI in the working directory).
    const denied = await run(["serve", "--config", file, "--port", "0"], {}, [
      "-A",
      "--deny-net=169.254.169.254",
    ]);
    assert.equal(denied.code, 1, denied.stderr);
    assert.equal(denied.stderr, `Invalid config ${file}:\n${issue}`);
    // With every permission Deno reads the URI: nothing to say.
    const everything = await run(["check", "--config", file], {}, ["-A"]);
    assert.equal(everything.code, 0, everything.stderr);
    assert.equal(everything.stderr, "");
    assert.deepEqual([...Deno.readDirSync(`${dir}/data`)].map((entry) => entry.name), ["gateway.yaml"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * `main.ts ARGS` under `flags` on a terminal (`script` gives it one), as an operator runs `deno task start`:
 * Deno then asks the terminal about every path a call touches outside the allow-list, and waits for the answer.
 * Returns the process (the `script` around it), its output so far and Deno's own pid.
 */
function onTerminal(flags: string[], args: string[], cwd: string, env: Record<string, string>) {
  const command = ["exec", Deno.execPath(), "run", ...flags, MAIN, ...args].map((word) => `'${word}'`).join(
    " ",
  );
  const child = new Deno.Command("script", {
    args: ["-qefc", command.replace("'exec'", "exec"), "/dev/null"],
    cwd,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const seen = { text: "" };
  /** Reads until `pattern` shows; fails at once on a permission prompt, which would wait for an answer. */
  const until = async (pattern: RegExp) => {
    while (!pattern.test(seen.text)) {
      assert.doesNotMatch(seen.text, /Deno requests/, "Deno asked the terminal for a permission");
      const { done, value } = await output.read();
      if (done) throw new Error(`exited before ${pattern}: ${seen.text}`);
      seen.text += value;
    }
    assert.doesNotMatch(seen.text, /Deno requests/, "Deno asked the terminal for a permission");
  };
  return { child, output, seen, until };
}

Deno.test("`deno task start` on a terminal, the first start of a fresh checkout and those after: nothing is asked, it serves, reloads and stops", async () => {
  // Its location checks, the usage database's directory and the config watch looked at the directories above
  // data/ and config/, and Deno stopped the start with a prompt for read access to the working directory.
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(`${dir}/config`);
  const config = `${dir}/config/gateway.yaml`;
  await Deno.writeTextFile(config, await Deno.readTextFile(`${ROOT}/config/gateway.yaml`));
  const flags = (await startTaskFlags(dir)).map((flag) =>
    flag.startsWith("--allow-read=") ? `${flag},${dir}/config` : flag
  );
  const env = { GATEWAY_TOKEN: "gw-cli-test-token-terminal", PATH: Deno.env.get("PATH") ?? "" };

  const check = onTerminal(flags, ["check", "--config", config], dir, env);
  await check.until(/is valid/);
  assert.equal((await check.child.status).code, 0);
  await check.output.cancel();
  await check.child.stderr.cancel();

  const serve = onTerminal(flags, ["serve", "--config", config, "--port", "0"], dir, env);
  try {
    await serve.until(/"msg":"listening"[^\n]*\n/);
    const url = JSON.parse(serve.seen.text.split("\n").find((l) => l.includes('"msg":"listening"'))!).url;
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${env.GATEWAY_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-default", messages: [{ role: "user", content: "hi" }] }),
    });
    assert.equal(response.status, 200, await response.text());
    // The config watch sees an edit, and the reload checks the usage files again.
    await Deno.writeTextFile(config, `${await Deno.readTextFile(config)}\n# edited\n`);
    await serve.until(/"msg":"config_reload(ed|_failed)"/);
    assert.match(serve.seen.text, /"msg":"config_reloaded"/);
    const deno = Number(
      new TextDecoder().decode(
        (await new Deno.Command("pgrep", { args: ["-P", String(serve.child.pid)], stdout: "piped" }).output())
          .stdout,
      ).trim(),
    );
    Deno.kill(deno, "SIGTERM");
    await serve.until(/"msg":"shutdown"/);
    // Shutting down (the usage flush, the store's worker) asks nothing either: the process ends by itself.
    for (let read = await serve.output.read(); !read.done; read = await serve.output.read()) {
      serve.seen.text += read.value;
    }
    assert.doesNotMatch(serve.seen.text, /Deno requests/);
    assert.equal((await serve.child.status).code, 0);
  } finally {
    try {
      serve.child.kill("SIGKILL");
    } catch { /* ended */ }
    await serve.output.cancel();
    await serve.child.stderr.cancel();
    await serve.child.status;
  }
  assert.equal(countRows(`${dir}/data/usage.sqlite`).rows, 1);

  // Every start after the first, data/ and the database there: whether this user may write them is asked of the
  // system (which on Deno reads the user's ids, asked on the terminal without `--allow-sys=uid,gid`; the task
  // grants them, and a deno run without them is not asked, nor prompted).
  for (
    const [what, sys] of [["the task's flags", undefined], [
      "no uid or gid",
      "--allow-sys=setPriority",
    ]] as const
  ) {
    const again = onTerminal(
      flags.map((flag) => (sys !== undefined && flag.startsWith("--allow-sys") ? sys : flag)),
      ["check", "--config", config],
      dir,
      env,
    );
    await again.until(/is valid/);
    assert.equal((await again.child.status).code, 0, what);
    await again.output.cancel();
    await again.child.stderr.cancel();
  }
  await Deno.remove(dir, { recursive: true });
});

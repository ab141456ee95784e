/**
 * A config file behind symbolic links is reloaded when what it resolves to changes: the layout Kubernetes gives a
 * ConfigMap or Secret volume, whose updates rename a new `..data` link over the old one, and a plain link to a
 * file in another directory that is edited in place. Files written beside it do not reload it. Runs in-process
 * on Deno and against the Bun binary (`GATEWAY_BIN`).
 */
import assert from "node:assert/strict";
import { dirname } from "node:path";
import {
  type ConfigLayout,
  startGateway,
  TEST_TOKEN,
  TEST_TOKENS_YAML,
  type TestGateway,
  waitForLogCount,
} from "../helpers/gateway.ts";

/** A config serving one alias, `alias`. */
function configWith(alias: string): string {
  return `
providers:
  local: { type: builtin }
models:
  ${alias}: { type: chat, targets: [ { provider: local, model: echo } ] }
${TEST_TOKENS_YAML}`;
}

/** The aliases `gw` lists to a client. */
async function aliases(gw: TestGateway): Promise<string[]> {
  const answer = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
  const body: { data: { id: string }[] } = await answer.json();
  return body.data.map((m) => m.id);
}

const reloaded = (line: Record<string, unknown>) => line.msg === "config_reloaded" && line.trigger === "file";
const RELOAD_DEADLINE_MS = 10_000;

/** Waits for the `count`th reload by the file watch and says it was exactly that many. */
async function waitForReloads(gw: TestGateway, count: number): Promise<void> {
  const lines = await waitForLogCount(gw, reloaded, count, RELOAD_DEADLINE_MS);
  assert.equal(lines.length, count, "one reload per change");
  assert.equal(gw.logs.filter((l) => l.msg === "config_reload_failed").length, 0);
}

/**
 * Long enough for a look at the file to follow an event (150 ms after it, 1 s at most): a reload that should not
 * happen would have by then. Only ever waited before asserting that nothing happened.
 */
const quietPeriod = () => new Promise((r) => setTimeout(r, 1_500));

/** The volume as kubelet mounts it: `gateway.yaml -> ..data/gateway.yaml`, `..data -> ..<timestamp>`. */
const kubernetesVolume = (texts: string[]): ConfigLayout => async (dir, yaml) => {
  texts.push(yaml);
  await Deno.mkdir(`${dir}/..2026_01_01_00_00_00.1`);
  await Deno.writeTextFile(`${dir}/..2026_01_01_00_00_00.1/gateway.yaml`, yaml);
  await Deno.symlink("..2026_01_01_00_00_00.1", `${dir}/..data`);
  await Deno.symlink("..data/gateway.yaml", `${dir}/gateway.yaml`);
  return `${dir}/gateway.yaml`;
};

/**
 * An update as kubelet's AtomicWriter makes it: the new files in a new timestamped directory, a new `..data`
 * link renamed over the old one (`ln -s ..v2 ..data_tmp; mv -T ..data_tmp ..data`), the old directory removed.
 */
async function kubeletUpdate(dir: string, yaml: string, version: number): Promise<void> {
  const old = await Deno.readLink(`${dir}/..data`);
  const next = `..2026_01_01_00_00_0${version}.${version}`;
  await Deno.mkdir(`${dir}/${next}`);
  await Deno.writeTextFile(`${dir}/${next}/gateway.yaml`, yaml);
  await Deno.symlink(next, `${dir}/..data_tmp`);
  await Deno.rename(`${dir}/..data_tmp`, `${dir}/..data`);
  await Deno.remove(`${dir}/${old}`, { recursive: true });
}

Deno.test("reload: a Kubernetes ConfigMap volume's ..data swap reloads once; a file written beside it does not", async () => {
  const texts: string[] = [];
  const gw = await startGateway(configWith("chat-v1"), {}, kubernetesVolume(texts));
  const dir = dirname(gw.configFile);
  const version = (n: number) => texts[0].replace("chat-v1", `chat-v${n}`);
  try {
    assert.deepEqual(await aliases(gw), ["chat-v1"]);

    await kubeletUpdate(dir, version(2), 2);
    await waitForReloads(gw, 1);
    assert.deepEqual(await aliases(gw), ["chat-v2"]);

    // Unrelated files in the volume's directory and in the data directory: looked at, never reloaded.
    await Deno.writeTextFile(`${dir}/notes.txt`, "not the config\n");
    await Deno.writeTextFile(`${dir}/..data/other.yaml`, "another key of the ConfigMap\n");
    await quietPeriod();
    await waitForReloads(gw, 1);

    await kubeletUpdate(dir, version(3), 3);
    await waitForReloads(gw, 2);
    assert.deepEqual(await aliases(gw), ["chat-v3"]);

    // The file the link resolves to now, edited in place: the watch moved to its new directory.
    await Deno.writeTextFile(`${dir}/..data/gateway.yaml`, version(4));
    await waitForReloads(gw, 3);
    assert.deepEqual(await aliases(gw), ["chat-v4"]);
  } finally {
    await gw.stop();
  }
});

/** `etc/gateway.yaml -> ../shared/gateway.yaml`: the link and its target in different directories. */
const linkToAnotherDirectory = (texts: string[]): ConfigLayout => async (dir, yaml) => {
  texts.push(yaml);
  await Deno.mkdir(`${dir}/etc`);
  await Deno.mkdir(`${dir}/shared`);
  await Deno.writeTextFile(`${dir}/shared/gateway.yaml`, yaml);
  await Deno.symlink("../shared/gateway.yaml", `${dir}/etc/gateway.yaml`);
  return `${dir}/etc/gateway.yaml`;
};

Deno.test("reload: a symlinked config's target edited in place reloads, and so does the link pointed elsewhere", async () => {
  const texts: string[] = [];
  const gw = await startGateway(configWith("chat-v1"), {}, linkToAnotherDirectory(texts));
  const dir = dirname(dirname(gw.configFile));
  const version = (n: number) => texts[0].replace("chat-v1", `chat-v${n}`);
  try {
    assert.deepEqual(await aliases(gw), ["chat-v1"]);

    await Deno.writeTextFile(`${dir}/shared/gateway.yaml`, version(2));
    await waitForReloads(gw, 1);
    assert.deepEqual(await aliases(gw), ["chat-v2"]);

    await Deno.writeTextFile(`${dir}/shared/unrelated.txt`, "not the config\n");
    await quietPeriod();
    await waitForReloads(gw, 1);

    // Pointed at a file in a third directory (a new link renamed over the old), then that file edited in place.
    await Deno.mkdir(`${dir}/next`);
    await Deno.writeTextFile(`${dir}/next/gateway.yaml`, version(3));
    await Deno.symlink("../next/gateway.yaml", `${dir}/etc/gateway.yaml.tmp`);
    await Deno.rename(`${dir}/etc/gateway.yaml.tmp`, `${dir}/etc/gateway.yaml`);
    await waitForReloads(gw, 2);
    assert.deepEqual(await aliases(gw), ["chat-v3"]);

    await Deno.writeTextFile(`${dir}/next/gateway.yaml`, version(4));
    await waitForReloads(gw, 3);
    assert.deepEqual(await aliases(gw), ["chat-v4"]);
  } finally {
    await gw.stop();
  }
});

import assert from "node:assert/strict";
import { resolveLinks, WATCH_MAX_WAIT_MS, watchResolvedFile } from "./file_watch.ts";

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** `dir/gateway.yaml -> ..data/gateway.yaml`, `..data -> ..v1`, as a Kubernetes ConfigMap volume. */
async function kubernetesVolume(dir: string): Promise<void> {
  await Deno.mkdir(`${dir}/..v1`);
  await Deno.writeTextFile(`${dir}/..v1/gateway.yaml`, "a: 1\n");
  await Deno.symlink("..v1", `${dir}/..data`);
  await Deno.symlink("..data/gateway.yaml", `${dir}/gateway.yaml`);
}

/** Points `..data` at a new directory `..v<n>` as kubelet does, and removes the old one. */
async function swap(dir: string, n: number): Promise<void> {
  const old = await Deno.readLink(`${dir}/..data`);
  await Deno.mkdir(`${dir}/..v${n}`);
  await Deno.writeTextFile(`${dir}/..v${n}/gateway.yaml`, `a: ${n}\n`);
  await Deno.symlink(`..v${n}`, `${dir}/..data_tmp`);
  await Deno.rename(`${dir}/..data_tmp`, `${dir}/..data`);
  await Deno.remove(`${dir}/${old}`, { recursive: true });
}

async function until(what: string, condition: () => boolean, ms = 5_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Longer than a look can be put off: a call that should not happen would have by then. */
const pastMaxWait = () => new Promise((r) => setTimeout(r, WATCH_MAX_WAIT_MS + 300));

/** A directory watch whose events the test fires, keeping the live watches. */
function fakeWatches() {
  const live = new Map<string, () => void>();
  return {
    live,
    watchDir: (dir: string, onEvent: () => void) => {
      assert.ok(!live.has(dir), `${dir} watched twice`);
      live.set(dir, onEvent);
      return () => live.delete(dir);
    },
    fire: () => [...live.values()].forEach((onEvent) => onEvent()),
  };
}

Deno.test("resolveLinks: a Kubernetes volume is watched in its directory and its data directory; a swap changes it", async () => {
  await withTempDir(async (dir) => {
    await kubernetesVolume(dir);
    const before = resolveLinks(`${dir}/gateway.yaml`);
    assert.deepEqual([...before.dirs].sort(), [dir, `${dir}/..v1`]);
    assert.ok(before.fingerprint.startsWith(`${dir}/..v1/gateway.yaml `), before.fingerprint);

    await Deno.writeTextFile(`${dir}/notes.txt`, "unrelated\n");
    await Deno.writeTextFile(`${dir}/..v1/other.yaml`, "unrelated\n");
    assert.equal(resolveLinks(`${dir}/gateway.yaml`).fingerprint, before.fingerprint);

    await swap(dir, 2);
    const after = resolveLinks(`${dir}/gateway.yaml`);
    assert.deepEqual([...after.dirs].sort(), [dir, `${dir}/..v2`]);
    assert.notEqual(after.fingerprint, before.fingerprint);

    await Deno.writeTextFile(`${dir}/..v2/gateway.yaml`, "a: 22\n");
    assert.notEqual(resolveLinks(`${dir}/gateway.yaml`).fingerprint, after.fingerprint);
  });
});

Deno.test("resolveLinks: every directory a link is met in is watched, through absolute, relative and `..` links", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/etc`);
    await Deno.mkdir(`${dir}/releases/v1/config`, { recursive: true });
    await Deno.writeTextFile(`${dir}/releases/v1/config/gateway.yaml`, "a: 1\n");
    await Deno.symlink("releases/v1", `${dir}/current`);
    await Deno.symlink(`${dir}/current/config/../config/gateway.yaml`, `${dir}/etc/gateway.yaml`);
    const resolution = resolveLinks(`${dir}/etc/./gateway.yaml`);
    assert.deepEqual([...resolution.dirs].sort(), [dir, `${dir}/etc`, `${dir}/releases/v1/config`]);
    assert.ok(resolution.fingerprint.startsWith(`${dir}/releases/v1/config/gateway.yaml `));
  });
});

Deno.test("resolveLinks: a loop or a dangling link is 'missing', watched from the deepest directory that exists", async () => {
  await withTempDir(async (dir) => {
    await Deno.symlink("b", `${dir}/a`);
    await Deno.symlink("a", `${dir}/b`);
    const loop = resolveLinks(`${dir}/a`);
    assert.ok(loop.fingerprint.startsWith("missing "), loop.fingerprint);
    assert.ok(loop.dirs.length <= 3, JSON.stringify(loop.dirs));

    await Deno.symlink("gone/deeper/gateway.yaml", `${dir}/dangling.yaml`);
    const dangling = resolveLinks(`${dir}/dangling.yaml`);
    assert.equal(dangling.fingerprint, `missing ${dir}/gone/deeper/gateway.yaml`);
    assert.deepEqual(dangling.dirs, [dir]);
  });
});

Deno.test("watchResolvedFile: events without a change call nothing; one swap's events call once", async () => {
  await withTempDir(async (dir) => {
    await kubernetesVolume(dir);
    const watches = fakeWatches();
    let calls = 0;
    const stop = watchResolvedFile(`${dir}/gateway.yaml`, () => calls++, watches.watchDir);
    try {
      assert.deepEqual([...watches.live.keys()].sort(), [dir, `${dir}/..v1`]);
      await Deno.writeTextFile(`${dir}/notes.txt`, "unrelated\n");
      watches.fire();
      await pastMaxWait();
      assert.equal(calls, 0);

      await swap(dir, 2);
      for (let i = 0; i < 5; i++) watches.fire();
      await until("the call", () => calls === 1);
      await pastMaxWait();
      assert.equal(calls, 1);
      assert.deepEqual([...watches.live.keys()].sort(), [dir, `${dir}/..v2`]);
    } finally {
      stop();
    }
    assert.equal(watches.live.size, 0);
  });
});

Deno.test("watchResolvedFile: the watches follow the link however often it moves, and stay bounded", async () => {
  await withTempDir(async (dir) => {
    await kubernetesVolume(dir);
    const watches = fakeWatches();
    let calls = 0;
    const stop = watchResolvedFile(`${dir}/gateway.yaml`, () => calls++, watches.watchDir);
    try {
      for (let n = 2; n <= 25; n++) {
        await swap(dir, n);
        watches.fire();
        await until(`call ${n - 1}`, () => calls === n - 1);
        assert.deepEqual([...watches.live.keys()].sort(), [dir, `${dir}/..v${n}`]);
      }
    } finally {
      stop();
    }
  });
});

Deno.test("watchResolvedFile: a directory removed and made again is watched anew", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/etc`);
    await Deno.mkdir(`${dir}/shared`);
    await Deno.writeTextFile(`${dir}/shared/gateway.yaml`, "a: 1\n");
    await Deno.symlink("../shared/gateway.yaml", `${dir}/etc/gateway.yaml`);
    let armed = 0;
    const watches = fakeWatches();
    const watchDir = (d: string, onEvent: () => void) => {
      if (d === `${dir}/shared`) armed++;
      return watches.watchDir(d, onEvent);
    };
    let calls = 0;
    const stop = watchResolvedFile(`${dir}/etc/gateway.yaml`, () => calls++, watchDir);
    try {
      await Deno.remove(`${dir}/shared`, { recursive: true });
      await Deno.mkdir(`${dir}/shared`);
      await Deno.writeTextFile(`${dir}/shared/gateway.yaml`, "a: 2\n");
      watches.fire();
      await until("the call", () => calls === 1);
      assert.ok(armed >= 2, "the new directory is watched, not only the removed one's path");
      assert.ok(watches.live.has(`${dir}/shared`));
    } finally {
      stop();
    }
  });
});

Deno.test("watchResolvedFile: a directory written to without pause does not put the look off past its bound", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/gateway.yaml`, "a: 1\n");
    const watches = fakeWatches();
    let calls = 0;
    const stop = watchResolvedFile(`${dir}/gateway.yaml`, () => calls++, watches.watchDir);
    const busy = setInterval(watches.fire, 20);
    try {
      await Deno.writeTextFile(`${dir}/gateway.yaml`, "a: 2\n");
      watches.fire();
      await until("the call while events keep coming", () => calls === 1, WATCH_MAX_WAIT_MS * 5);
    } finally {
      clearInterval(busy);
      stop();
    }
  });
});

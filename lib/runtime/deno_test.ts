import assert from "node:assert/strict";
import { relative } from "node:path";
import { denoRuntime } from "./deno.ts";

/** Resolves once `handler` was called, or rejects after `ms` (a generous bound: the debounce is 150 ms). */
function calledWithin(ms: number): { handler: () => void; called: Promise<void> } {
  let handler = () => {};
  const called = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not called within ${ms} ms`)), ms);
    handler = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  return { handler, called };
}

Deno.test("watchFile: a config path written with ./ or .. is watched like its absolute form", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/gateway.yaml`;
    await Deno.writeTextFile(file, "a: 1\n");
    for (const path of [`./${relative(Deno.cwd(), file)}`, `${dir}/sub/../gateway.yaml`]) {
      const { handler, called } = calledWithin(5_000);
      const stop = denoRuntime.watchFile(path, handler);
      try {
        // Replaced as deploy tools do: a sibling renamed over it.
        await Deno.writeTextFile(`${file}.tmp`, `a: ${path.length}\n`);
        await Deno.rename(`${file}.tmp`, file);
        await called;
      } finally {
        stop();
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Counts the calls of a watch's handler and waits for the `n`th. */
function counted() {
  let calls = 0;
  return {
    handler: () => void calls++,
    get calls() {
      return calls;
    },
    async reach(n: number, ms = 5_000) {
      const deadline = performance.now() + ms;
      while (calls < n) {
        if (performance.now() > deadline) throw new Error(`${calls} calls of ${n} within ${ms} ms`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
  };
}

Deno.test("watchFile: a Kubernetes volume's ..data swap calls once; a file written beside the config does not", async () => {
  const dir = await Deno.makeTempDir();
  const watch = counted();
  let stop = () => {};
  try {
    await Deno.mkdir(`${dir}/..v1`);
    await Deno.writeTextFile(`${dir}/..v1/gateway.yaml`, "a: 1\n");
    await Deno.symlink("..v1", `${dir}/..data`);
    await Deno.symlink("..data/gateway.yaml", `${dir}/gateway.yaml`);
    stop = denoRuntime.watchFile(`${dir}/gateway.yaml`, watch.handler);

    await Deno.mkdir(`${dir}/..v2`);
    await Deno.writeTextFile(`${dir}/..v2/gateway.yaml`, "a: 2\n");
    await Deno.symlink("..v2", `${dir}/..data_tmp`);
    await Deno.rename(`${dir}/..data_tmp`, `${dir}/..data`);
    await Deno.remove(`${dir}/..v1`, { recursive: true });
    await watch.reach(1);

    await Deno.writeTextFile(`${dir}/notes.txt`, "unrelated\n");
    // Past the longest a look is put off (1 s): a second call would have come.
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(watch.calls, 1);
  } finally {
    stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("watchFile: a link's target in another directory is watched, also once that directory is made again", async () => {
  const dir = await Deno.makeTempDir();
  const watch = counted();
  let stop = () => {};
  try {
    await Deno.mkdir(`${dir}/etc`);
    await Deno.mkdir(`${dir}/shared`);
    await Deno.writeTextFile(`${dir}/shared/gateway.yaml`, "a: 1\n");
    await Deno.symlink("../shared/gateway.yaml", `${dir}/etc/gateway.yaml`);
    stop = denoRuntime.watchFile(`${dir}/etc/gateway.yaml`, watch.handler);

    await Deno.writeTextFile(`${dir}/shared/gateway.yaml`, "a: 2\n");
    await watch.reach(1);

    await Deno.remove(`${dir}/shared`, { recursive: true });
    await Deno.mkdir(`${dir}/shared`);
    await Deno.writeTextFile(`${dir}/shared/gateway.yaml`, "a: 3\n");
    await watch.reach(2);
    // Edited in place in the directory made again: heard, so that directory is watched.
    await Deno.writeTextFile(`${dir}/shared/gateway.yaml`, "a: 4 and longer\n");
    await watch.reach(3);
  } finally {
    stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("watchFile: a path whose directory is missing is watched from the nearest that exists", async () => {
  const dir = await Deno.makeTempDir();
  const watch = counted();
  const stop = denoRuntime.watchFile(`${dir}/missing/gateway.yaml`, watch.handler);
  try {
    await Deno.mkdir(`${dir}/missing`);
    await Deno.writeTextFile(`${dir}/missing/gateway.yaml`, "a: 1\n");
    await watch.reach(1);
  } finally {
    stop();
    await Deno.remove(dir, { recursive: true });
  }
});

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

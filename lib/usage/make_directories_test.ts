import assert from "node:assert/strict";
import { makeDirectories, makeDirectoriesSync } from "./make_directories.ts";

for (
  const [name, make] of [
    ["makeDirectories", makeDirectories],
    [
      "makeDirectoriesSync",
      (dir: string) => new Promise<void>((resolve) => resolve(makeDirectoriesSync(dir))),
    ],
  ] as const
) {
  Deno.test(`${name}: makes what is missing, as mkdir -p; a directory or a link to one that exists is fine`, async () => {
    const dir = await Deno.makeTempDir();
    try {
      await make(`${dir}/a/b/c`);
      assert.ok(Deno.statSync(`${dir}/a/b/c`).isDirectory);
      await make(`${dir}/a/b/c`);
      await make(`${dir}/a`);
      await Deno.symlink(`${dir}/a`, `${dir}/link`);
      await make(`${dir}/link`);
      await make(`${dir}/link/b/d`);
      assert.ok(Deno.statSync(`${dir}/a/b/d`).isDirectory);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });

  Deno.test(`${name}: a file where a directory must be, or a link that leads nowhere, fails at once`, async () => {
    // A link to a volume not mounted said EEXIST for itself and ENOENT below it: the walk retried forever (CPU
    // and memory climbing, a JSONL write never settling, shutdown never ending).
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(`${dir}/file`, "");
      await assert.rejects(make(`${dir}/file`), /EEXIST|exists/i);
      await assert.rejects(make(`${dir}/file/sub`), /ENOTDIR|not a directory/i);
      await Deno.symlink(`${dir}/unmounted/volume`, `${dir}/logs`);
      await assert.rejects(make(`${dir}/logs/sub`), /ENOENT|no such file/i);
      await assert.rejects(make(`${dir}/logs`), /ENOENT|no such file/i);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

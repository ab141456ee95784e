import assert from "node:assert/strict";
import { parseConfigText } from "../config/load.ts";
import type { ResolvedConfig } from "../config/types.ts";
import { usageLocationIssues } from "./usage_locations.ts";

function config(usage: string): ResolvedConfig {
  const loaded = parseConfigText(
    `usage: ${usage}
providers: { local: { type: builtin } }
models: { chat: { type: chat, targets: [ { provider: local, model: echo } ] } }
`,
    { source: "test.yaml", env: {} },
  );
  assert.ok(loaded.ok, JSON.stringify(!loaded.ok && loaded.issues));
  return loaded.config;
}

Deno.test("usage locations: the JSONL and spill paths are checked as the database's is, each at its key", async () => {
  // Only usage.sqlite was: check passed, serve started, and the records meant for these files were lost.
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/afile`, "");
    await Deno.mkdir(`${dir}/adir`);
    assert.deepEqual(
      await usageLocationIssues(
        config(`{ sqlite: none, jsonl: "${dir}/afile/u.jsonl", spill: "${dir}/afile/deep/s.jsonl" }`),
      ),
      [
        {
          path: "usage.jsonl",
          message:
            `${dir}/afile is a file, not a directory: the JSONL copy of the usage records cannot go in it`,
        },
        {
          path: "usage.spill",
          message:
            `${dir}/afile is a file, so the directory ${dir}/afile/deep cannot be created for the spill file`,
        },
      ],
    );
    assert.deepEqual(await usageLocationIssues(config(`{ sqlite: ":memory:", spill: "${dir}/adir" }`)), [
      { path: "usage.spill", message: `${dir}/adir is a directory, not a spill file` },
    ]);
    await Deno.mkdir(`${dir}/s.jsonl.replaying`);
    assert.deepEqual(await usageLocationIssues(config(`{ sqlite: ":memory:", spill: "${dir}/s.jsonl" }`)), [
      {
        path: "usage.spill",
        message: `${dir}/s.jsonl.replaying is a directory: a replay reads the spill file under that name`,
      },
    ]);
    assert.deepEqual(
      await usageLocationIssues(config(`{ sqlite: "${dir}/afile/x.sqlite", jsonl: "${dir}/adir" }`)),
      [
        {
          path: "usage.sqlite",
          message: `${dir}/afile is a file, not a directory: the usage database cannot go in it`,
        },
        { path: "usage.jsonl", message: `${dir}/adir is a directory, not a JSONL file` },
      ],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("usage locations: paths still to be made are fine and nothing is made; an unused spill path is not asked", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const fresh = `{ sqlite: "${dir}/a/u.sqlite", jsonl: "${dir}/b/u.jsonl", spill: "${dir}/c/s.jsonl" }`;
    assert.deepEqual(await usageLocationIssues(config(fresh)), []);
    assert.deepEqual([...Deno.readDirSync(dir)], [], "asking creates nothing");
    // No database and no JSONL copy: the pipeline does not run, so the spill file is never written.
    await Deno.writeTextFile(`${dir}/afile`, "");
    assert.deepEqual(
      await usageLocationIssues(config(`{ sqlite: none, spill: "${dir}/afile/s.jsonl" }`)),
      [],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("usage locations: two keys naming one file is an issue at the later key, through links too", async () => {
  // A JSONL copy in the spill file was renamed and deleted by the next start's replay; JSON lines appended to
  // the database file broke the database. Both passed every check before.
  const dir = await Deno.makeTempDir();
  try {
    assert.deepEqual(
      await usageLocationIssues(
        config(`{ sqlite: "${dir}/u.sqlite", jsonl: "${dir}/s.jsonl", spill: "${dir}/s.jsonl" }`),
      ),
      [{
        path: "usage.spill",
        message:
          `usage.spill (${dir}/s.jsonl) and usage.jsonl (${dir}/s.jsonl) are one file: each usage file must ` +
          "be a file of its own",
      }],
    );
    assert.deepEqual(
      await usageLocationIssues(config(`{ sqlite: "${dir}/u.sqlite", jsonl: "${dir}/./u.sqlite" }`)),
      [{
        path: "usage.jsonl",
        message:
          `usage.jsonl (${dir}/./u.sqlite) and usage.sqlite (${dir}/u.sqlite) are one file: each usage file must ` +
          "be a file of its own",
      }],
    );
    // SQLite's own files beside the database, and the name a replay gives the spill file, count too.
    assert.deepEqual(
      await usageLocationIssues(
        config(
          `{ sqlite: "${dir}/u.sqlite", jsonl: "${dir}/s.jsonl.replaying", spill: "${dir}/u.sqlite-wal" }`,
        ),
      ),
      [{
        path: "usage.spill",
        message:
          `usage.spill (${dir}/u.sqlite-wal) and usage.sqlite's -wal file (${dir}/u.sqlite-wal) are one file: ` +
          "each usage file must be a file of its own",
      }],
    );
    // A directory link to where a file is still to be made, and a hard link to an existing one.
    await Deno.mkdir(`${dir}/real`);
    await Deno.symlink(`${dir}/real`, `${dir}/link`);
    assert.deepEqual(
      (await usageLocationIssues(
        config(`{ sqlite: none, jsonl: "${dir}/real/u.jsonl", spill: "${dir}/link/u.jsonl" }`),
      ))
        .map((issue) => issue.path),
      ["usage.spill"],
    );
    await Deno.writeTextFile(`${dir}/real/copy.jsonl`, "");
    await Deno.link(`${dir}/real/copy.jsonl`, `${dir}/other.jsonl`);
    assert.deepEqual(
      (await usageLocationIssues(
        config(`{ sqlite: none, jsonl: "${dir}/real/copy.jsonl", spill: "${dir}/other.jsonl" }`),
      ))
        .map((issue) => issue.path),
      ["usage.spill"],
    );
    // Different files beside one another are fine.
    assert.deepEqual(
      await usageLocationIssues(
        config(`{ sqlite: "${dir}/u.sqlite", jsonl: "${dir}/u.jsonl", spill: "${dir}/s.jsonl" }`),
      ),
      [],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

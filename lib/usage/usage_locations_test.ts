import assert from "node:assert/strict";
import { parseConfigText } from "../config/load.ts";
import type { ResolvedConfig } from "../config/types.ts";
import { usageLocationIssues } from "./usage_locations.ts";
import { makeDirectories } from "./make_directories.ts";
import { pathsAsWritten } from "../runtime/path_permission.ts";
import { appendFile, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { DatabaseSync } from "node:sqlite";

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

Deno.test("usage locations: a database that is a link has SQLite's -wal and -shm files beside the link's target", async () => {
  // They were built from the link's name: a JSONL copy at the target's -wal passed as a file of its own, and
  // SQLite's log and the JSON lines were one file.
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    await Deno.mkdir(`${dir}/data`);
    await Deno.writeTextFile(`${dir}/data/real.sqlite`, "");
    await Deno.symlink("real.sqlite", `${dir}/data/db-link`);
    // Where SQLite really puts them, as the store opens the database.
    const db = new DatabaseSync(`${dir}/data/db-link`);
    try {
      db.exec("PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1)");
      for (const side of ["-wal", "-shm"]) {
        assert.ok((await Deno.lstat(`${dir}/data/real.sqlite${side}`)).isFile, side);
        await assert.rejects(Deno.lstat(`${dir}/data/db-link${side}`), Deno.errors.NotFound);
      }
    } finally {
      db.close();
    }
    assert.deepEqual(
      await usageLocationIssues(
        config(`{ sqlite: "${dir}/data/db-link", jsonl: "${dir}/data/real.sqlite-wal", spill: "${dir}/s" }`),
      ),
      [{
        path: "usage.jsonl",
        message: `usage.jsonl (${dir}/data/real.sqlite-wal) and usage.sqlite's -wal file ` +
          `(${dir}/data/real.sqlite-wal) are one file: each usage file must be a file of its own`,
      }],
    );
    assert.deepEqual(
      (await usageLocationIssues(
        config(`{ sqlite: "file:${dir}/data/db-link", spill: "${dir}/data/real.sqlite-shm" }`),
      )).map((issue) => issue.path),
      ["usage.spill"],
    );
    // The link's own name with -wal is no file of SQLite's.
    assert.deepEqual(
      await usageLocationIssues(
        config(`{ sqlite: "${dir}/data/db-link", jsonl: "${dir}/data/db-link-wal" }`),
      ),
      [],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("usage locations: through `link/..`, two keys are refused as one file exactly when the gateway's writes through them reach one file", async () => {
  // `link/..` was dropped as text before the link was followed: on Bun and under `-A`, where the system follows
  // the link first, the JSONL copy written into the spill file through such a path passed (and was renamed and
  // deleted by the next replay), and two different files beside one another were refused as one. (Deno under
  // narrower permissions drops `..` as text itself before the system sees the path: pathsAsWritten.)
  const dir = await Deno.makeTempDir();
  try {
    /** `a` and `b` written as the usage files are (their directories made, then appended to): one file? */
    const written = async (a: string, b: string) => {
      for (const [path, text] of [[a, "a"], [b, "b"]]) {
        await makeDirectories(dirname(path));
        await appendFile(path, text);
      }
      return await readFile(a, "utf8") === "ab";
    };
    const cases = [
      [`real/u.jsonl`, `link/../u.jsonl`],
      [`u.jsonl`, `link/../u.jsonl`],
      // `..` back out of a directory still to be made, then through the link: one file however `..` is taken
      // (on Bun and under -A the link after `gone/..` was taken as written, and the two passed as two files).
      [`link/u.jsonl`, `gone/../link/u.jsonl`],
    ];
    const shared: boolean[] = [];
    for (const [index, [jsonl, spill]] of cases.entries()) {
      const at = `${dir}/${index}`;
      await Deno.mkdir(`${at}/real/sub`, { recursive: true });
      await Deno.symlink(`${at}/real/sub`, `${at}/link`);
      const issues = await usageLocationIssues(
        config(`{ sqlite: none, jsonl: "${at}/${jsonl}", spill: "${at}/${spill}" }`),
      );
      const one = await written(`${at}/${jsonl}`, `${at}/${spill}`);
      shared.push(one);
      assert.deepEqual(
        issues,
        one
          ? [{
            path: "usage.spill",
            message:
              `usage.spill (${at}/${spill}) and usage.jsonl (${at}/${jsonl}) are one file: each usage ` +
              "file must be a file of its own",
          }]
          : [],
        `${jsonl} and ${spill}`,
      );
    }
    // The system follows `link` before `..`, unless Deno dropped `..` first.
    assert.deepEqual(shared, pathsAsWritten() ? [true, false, true] : [false, true, true]);

    // Where the file goes is checked there too: `real/x` is a file, `x` nothing.
    const at = `${dir}/location`;
    await Deno.mkdir(`${at}/real/sub`, { recursive: true });
    await Deno.symlink(`${at}/real/sub`, `${at}/link`);
    await Deno.writeTextFile(`${at}/real/x`, "");
    const issues = await usageLocationIssues(config(`{ sqlite: none, jsonl: "${at}/link/../x/u.jsonl" }`));
    const refused = await written(`${at}/link/../x/u.jsonl`, `${at}/other.jsonl`).then(
      () => false,
      () => true,
    );
    assert.equal(refused, pathsAsWritten());
    assert.deepEqual(
      issues,
      refused
        ? [{
          path: "usage.jsonl",
          message:
            `${at}/link/../x is a file, not a directory: the JSONL copy of the usage records cannot go in it`,
        }]
        : [],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("usage locations: a SQLite URI for usage.sqlite is the file it opens, checked as a path is; memory ones write none", async () => {
  // `file:` names were left out: the database could be the JSONL copy's file (JSON lines appended to it), under
  // a regular file, or a directory, and check passed.
  const dir = await Deno.makeTempDir();
  try {
    assert.deepEqual(
      await usageLocationIssues(config(`{ sqlite: "file:${dir}/u.db?mode=rwc", jsonl: "${dir}/u.db" }`)),
      [{
        path: "usage.jsonl",
        message:
          `usage.jsonl (${dir}/u.db) and usage.sqlite (${dir}/u.db) are one file: each usage file must be a ` +
          "file of its own",
      }],
    );
    assert.deepEqual(
      (await usageLocationIssues(
        config(`{ sqlite: "file://localhost${dir}/u.db", spill: "${dir}/u.db-wal" }`),
      ))
        .map((issue) => issue.path),
      ["usage.spill"],
    );
    await Deno.writeTextFile(`${dir}/afile`, "");
    assert.deepEqual(await usageLocationIssues(config(`{ sqlite: "file:${dir}/afile/u.db" }`)), [{
      path: "usage.sqlite",
      message: `${dir}/afile is a file, not a directory: the usage database cannot go in it`,
    }]);
    // In memory: no file, whatever the other keys say.
    for (const memory of ["file::memory:", `file:${dir}/u.db?mode=memory`]) {
      assert.deepEqual(
        await usageLocationIssues(config(`{ sqlite: "${memory}", jsonl: "${dir}/u.db", spill: "${dir}/s" }`)),
        [],
        memory,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

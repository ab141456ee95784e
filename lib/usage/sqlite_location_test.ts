import assert from "node:assert/strict";
import { sqliteLocationProblem } from "./sqlite_location.ts";

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test("sqlite location: a directory that does not exist yet is fine, and is not created by asking", async () => {
  const dir = await Deno.makeTempDir();
  try {
    assert.equal(await sqliteLocationProblem(`${dir}/a/b/usage.sqlite`), null);
    assert.equal(await exists(`${dir}/a`), false, "check creates nothing");
    assert.equal(await sqliteLocationProblem(`${dir}/usage.sqlite`), null);
    await Deno.writeTextFile(`${dir}/usage.sqlite`, "");
    assert.equal(await sqliteLocationProblem(`${dir}/usage.sqlite`), null, "an existing, writable file");
    assert.equal(await sqliteLocationProblem(":memory:"), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sqlite location: a file where a directory must be, or a directory where the file must be, is named", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/afile`, "");
    assert.equal(
      await sqliteLocationProblem(`${dir}/afile/usage.sqlite`),
      `${dir}/afile is a file, not a directory: the usage database cannot go in it`,
    );
    assert.equal(
      await sqliteLocationProblem(`${dir}/afile/deeper/usage.sqlite`),
      `${dir}/afile is a file, so the directory ${dir}/afile/deeper cannot be created for the usage database`,
    );
    await Deno.mkdir(`${dir}/usage.sqlite`);
    assert.equal(
      await sqliteLocationProblem(`${dir}/usage.sqlite`),
      `${dir}/usage.sqlite is a directory, not a database file`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "sqlite location: a directory this user cannot write is named (not as root, who writes past the mode)",
  // Without `--allow-sys=uid` (the test task's permissions) the check cannot tell, and says nothing: it is
  // asserted where it can, as a user other than root.
  ignore: Deno.build.os === "windows" ||
    Deno.permissions.querySync({ name: "sys", kind: "uid" }).state !== "granted" || Deno.uid() === 0,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.mkdir(`${dir}/ro`);
      await Deno.chmod(`${dir}/ro`, 0o555);
      assert.match(
        String(await sqliteLocationProblem(`${dir}/ro/usage.sqlite`)),
        /ro is not writable by this user/,
      );
      assert.match(
        String(await sqliteLocationProblem(`${dir}/ro/sub/usage.sqlite`)),
        /cannot be created: .*ro is not writable/,
      );
    } finally {
      await Deno.chmod(`${dir}/ro`, 0o755);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("sqlite location: a SQLite URI is checked at the file it opens, and refused where SQLite would not open it or only to read", async () => {
  // `file:` names were not checked at all: check passed and serve failed, or opened a database it cannot write.
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/afile`, "");
    assert.equal(
      await sqliteLocationProblem(`file:${dir}/afile/usage.sqlite?mode=rwc`),
      `${dir}/afile is a file, not a directory: the usage database cannot go in it`,
    );
    assert.equal(await sqliteLocationProblem(`file:${dir}/new/usage.sqlite?cache=shared`), null);
    assert.equal(await exists(`${dir}/new`), false, "check creates nothing");
    assert.equal(
      await sqliteLocationProblem(`file://db.example${dir}/usage.sqlite`),
      `file://db.example${dir}/usage.sqlite names the host db.example: SQLite opens a file: URI with no host ` +
        "or localhost only (file:///absolute/path or file:relative/path)",
    );
    assert.equal(
      await sqliteLocationProblem(`file:${dir}/usage.sqlite?mode=ro`),
      `file:${dir}/usage.sqlite?mode=ro opens the database read-only (mode=ro): the gateway writes its records there`,
    );
    assert.equal(
      await sqliteLocationProblem(`file:${dir}/usage.sqlite?mode=rw`),
      `${dir}/usage.sqlite does not exist, and file:${dir}/usage.sqlite?mode=rw (mode=rw) opens an existing ` +
        "database only",
    );
    await Deno.writeTextFile(`${dir}/usage.sqlite`, "");
    assert.equal(await sqliteLocationProblem(`file:${dir}/usage.sqlite?mode=rw`), null);
    for (const memory of ["file::memory:", "file:x.db?mode=memory", "file:x.db?vfs=memdb"]) {
      assert.equal(await sqliteLocationProblem(memory), null, memory);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

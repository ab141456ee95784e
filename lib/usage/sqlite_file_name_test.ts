import assert from "node:assert/strict";
import { resolve } from "node:path";
import { type SqliteFile, sqliteFileOf } from "./sqlite_file_name.ts";

/**
 * What `node:sqlite` opens for each of `names` (writing a row), asked of a Deno run with `flags` in `dir`: the
 * file (`PRAGMA database_list`; "" in memory) or the error, and what `pathsAsWritten` says there. A run of its
 * own, so both ways Deno hands names on are seen whatever permissions the tests run with.
 */
async function openedUnder(
  flags: string[],
  names: string[],
  dir: string,
): Promise<{ reads: boolean; opened: Record<string, { file: string } | { error: string }> }> {
  const script = `${dir}/open.ts`;
  await Deno.writeTextFile(
    script,
    `import { DatabaseSync } from "node:sqlite";
import { pathsAsWritten } from ${
      JSON.stringify(new URL("../runtime/path_permission.ts", import.meta.url).href)
    };
const opened = {};
for (const name of ${JSON.stringify(names)}) {
  try {
    const db = new DatabaseSync(name);
    try {
      db.exec("CREATE TABLE IF NOT EXISTS t (x); INSERT INTO t VALUES (1)");
      const main = db.prepare("PRAGMA database_list").all().find((row) => row.name === "main");
      opened[name] = { file: String(main?.file ?? "") };
    } finally {
      db.close();
    }
  } catch (err) {
    opened[name] = { error: String(err?.message ?? err) };
  }
}
console.log(JSON.stringify({ reads: pathsAsWritten(), opened }));
`,
  );
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-lock", ...flags, script],
    cwd: dir,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

Deno.test("sqlite file name: a file: URI is the file node:sqlite opens for it where it reads URIs, memory ones none; Deno without every permission takes the name as a path", async () => {
  const dir = await Deno.makeTempDir();
  // Relative to the runs' working directory, `dir`.
  const d = "d";
  try {
    await Deno.mkdir(`${dir}/d`);
    const cases: [string, SqliteFile][] = [
      [`${d}/plain.db`, { kind: "file", path: `${d}/plain.db`, mustExist: false }],
      [`file:${d}/a.db`, { kind: "file", path: `${d}/a.db`, mustExist: false }],
      [`file:${d}/b.db?mode=rwc&cache=shared`, { kind: "file", path: `${d}/b.db`, mustExist: false }],
      [`file://${dir}/d/c.db`, { kind: "file", path: `${dir}/d/c.db`, mustExist: false }],
      [`file://localhost${dir}/d/e.db`, { kind: "file", path: `${dir}/d/e.db`, mustExist: false }],
      [`file:${dir}/d/f.db#part`, { kind: "file", path: `${dir}/d/f.db`, mustExist: false }],
      // Percent-decoded after the path is cut at `?`: an encoded `?` or `/` is part of the name.
      [`file:${d}/g%20h%3Fi.db?x=1`, { kind: "file", path: `${d}/g h?i.db`, mustExist: false }],
      [`file:${d}%2Fj.db`, { kind: "file", path: `${d}/j.db`, mustExist: false }],
      // The last `mode` counts; option names and values are case-sensitive.
      [`file:${d}/k.db?mode=memory&mode=rwc`, { kind: "file", path: `${d}/k.db`, mustExist: false }],
      [`file:${d}/l.db?MODE=memory`, { kind: "file", path: `${d}/l.db`, mustExist: false }],
      [":memory:", { kind: "memory" }],
      ["file::memory:", { kind: "memory" }],
      [`file:${d}/m.db?mode=memory`, { kind: "memory" }],
      [`file:${d}/n.db?mode=rwc&mode=memory`, { kind: "memory" }],
      [`file:${d}/o.db?vfs=memdb`, { kind: "memory" }],
      ["file:?mode=rwc", { kind: "memory" }],
      // mode=rw opens an existing database only (a.db is made above).
      [`file:${d}/a.db?mode=rw`, { kind: "file", path: `${d}/a.db`, mustExist: true }],
    ];
    const refused: [string, RegExp, RegExp][] = [
      [`file://elsewhere${dir}/d/p.db`, /names the host elsewhere/, /invalid uri authority/],
      [`file:${d}/q.db?mode=x`, /no access mode x/, /no such access mode/],
      [`file:${d}/a.db?mode=ro`, /read-only \(mode=ro\): the gateway writes its records there/, /readonly/],
    ];
    const uris = await openedUnder(["-A"], [...cases, ...refused].map(([name]) => name), dir);
    assert.equal(uris.reads, true);
    for (const [name, expected] of cases) {
      assert.deepEqual(sqliteFileOf(name), expected, name);
      assert.deepEqual(
        uris.opened[name],
        { file: expected.kind === "file" ? resolve(dir, expected.path) : "" },
        `what node:sqlite opened for ${name}`,
      );
    }
    for (const [name, problem, error] of refused) {
      const file = sqliteFileOf(name);
      assert.match(file.kind === "refused" ? file.problem : JSON.stringify(file), problem, name);
      assert.match(String(Object.values(uris.opened[name])), error, name);
    }
    const missing = `file:${d}/r.db?mode=rw`;
    assert.deepEqual(sqliteFileOf(missing), { kind: "file", path: `${d}/r.db`, mustExist: true });
    assert.match(
      String(Object.values((await openedUnder(["-A"], [missing], dir)).opened[missing])),
      /unable to open/,
    );

    // Without every permission Deno hands SQLite the name as a path: the URI is not read.
    const names = await openedUnder(
      ["--allow-read", "--allow-write"],
      [`file:${d}/s.db`, "file::memory:"],
      dir,
    );
    assert.equal(names.reads, false);
    assert.deepEqual(names.opened[`file:${d}/s.db`], {
      error: `unable to open database file: ${dir}/file:${d}/s.db`,
    });
    assert.deepEqual(names.opened["file::memory:"], { file: `${dir}/file::memory:` });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

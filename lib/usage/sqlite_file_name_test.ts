import assert from "node:assert/strict";
import { resolve } from "node:path";
import { type SqliteFile, sqliteFileOf } from "./sqlite_file_name.ts";
import { runJsonScript } from "../../tests/helpers/json_script.ts";

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
  return await runJsonScript(script, flags, dir);
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
      [`file:${d}/g%20h%3Fi.db?cache=private`, { kind: "file", path: `${d}/g h?i.db`, mustExist: false }],
      [`file:${d}%2Fj.db`, { kind: "file", path: `${d}/j.db`, mustExist: false }],
      // Each `mode` in turn: after memory any may follow.
      [`file:${d}/k.db?mode=memory&mode=rwc`, { kind: "file", path: `${d}/k.db`, mustExist: false }],
      [`file:${d}/l.db?mode=ro&mode=memory&mode=rwc`, { kind: "file", path: `${d}/l.db`, mustExist: false }],
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
      [`file:${d}/q.db?mode=x`, /mode=x is no access mode/, /no such access mode/],
      // A later mode that allows more than the one before it fails the open, whatever comes last.
      [`file:${d}/q.db?mode=ro&mode=rwc`, /refuses mode=rwc after mode=ro/, /access mode not allowed/],
      [`file:${d}/q.db?mode=bogus&mode=rwc`, /mode=bogus is no access mode/, /no such access mode/],
      [`file:${d}/q.db?cache=bogus`, /cache=bogus is no cache mode/, /no such cache mode/],
      [`file:${d}/q.db?vfs=bogus`, /vfs=bogus is not a VFS the gateway opens/, /no such vfs/],
      [`file:${d}/q.db?immutable=1`, /read-only \(immutable=1\)/, /unable to open|readonly/],
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

    // Without every permission granted whole Deno hands SQLite the name as a path: the URI is not read. `-A`
    // with a --deny-* flag is such a grant (read as -A, the URI was taken as read, and a file named after it
    // made).
    for (const flags of [["--allow-read", "--allow-write"], ["-A", "--deny-net=192.0.2.1"]]) {
      const names = await openedUnder(flags, [`file:${d}/s.db`, "file::memory:"], dir);
      assert.equal(names.reads, false, `${flags}`);
      assert.deepEqual(names.opened[`file:${d}/s.db`], {
        error: `unable to open database file: ${dir}/file:${d}/s.db`,
      });
      assert.deepEqual(names.opened["file::memory:"], { file: `${dir}/file::memory:` });
      await Deno.remove(`${dir}/file::memory:`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sqlite file name: every mix of the options it reads opens where it says, or is refused, as node:sqlite does", async () => {
  // Check and a reload read the last mode alone and no other option: `mode=ro&mode=rwc`, `mode=bogus&mode=rwc`,
  // `cache=bogus`, `vfs=bogus` and `immutable=1` passed, and the next start failed to open the database.
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/d`);
    const options = [
      ...["ro", "rw", "rwc", "memory", "bogus", ""].map((mode) => `mode=${mode}`),
      ...["shared", "private", "bogus"].map((cache) => `cache=${cache}`),
      ...["unix", "memdb", "bogus"].map((vfs) => `vfs=${vfs}`),
      ...["0", "1", "yes", "OFF", "256"].map((value) => `immutable=${value}`),
      "modeof=missing",
    ];
    const queries = [
      ...options,
      ...options.flatMap((one) => options.map((other) => `${one}&${other}`)),
      "mode=ro&mode=memory&mode=rwc",
      "mode=rw&mode=memory&mode=rwc",
      "mode=memory&mode=ro&mode=rw",
    ];
    // Each query on a database that exists and on one that does not.
    const names = queries.flatMap((query, index) => {
      return [`file:d/new-${index}.db?${query}`, `file:d/old-${index}.db?${query}`];
    });
    await Promise.all(queries.map((_, index) => Deno.writeTextFile(`${dir}/d/old-${index}.db`, "")));
    const run = await openedUnder(["-A"], names, dir);
    // Refused though SQLite may open it: what the gateway cannot vouch for.
    const unvouched = /does not know what SQLite does|is not a VFS the gateway opens|cannot tell whether/;
    const opened = { file: 0, memory: 0, refused: 0, unvouched: 0 };
    for (const name of names) {
      const file = sqliteFileOf(name);
      const got = run.opened[name];
      const exists = name.startsWith("file:d/old-");
      if (file.kind === "file" && !(file.mustExist && !exists)) {
        assert.deepEqual(got, { file: resolve(dir, file.path) }, name);
        opened.file++;
      } else if (file.kind === "memory") {
        assert.deepEqual(got, { file: "" }, name);
        opened.memory++;
      } else if (file.kind === "refused" && unvouched.test(file.problem)) {
        opened.unvouched++;
      } else {
        // Refused, or (mode=rw) refused by the location check while the file is missing: SQLite fails too.
        assert.ok(
          "error" in got,
          `${name}: ${JSON.stringify(file)} but node:sqlite opened ${JSON.stringify(got)}`,
        );
        opened.refused++;
      }
    }
    // Each way is met, not only refusals.
    for (const [way, count] of Object.entries(opened)) assert.ok(count > 20, `${way}: ${count}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

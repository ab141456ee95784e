import assert from "node:assert/strict";
import { resolve } from "node:path";
import process from "node:process";
import { handedPath } from "./system_path.ts";
import { pathsAsWritten } from "../runtime/path_permission.ts";
import { runJsonScript } from "../../tests/helpers/json_script.ts";

/** What a run of {@linkcode placedUnder} found for one path. */
interface Placed {
  /** What `placeOf` said. */
  readonly place: string;
  /** What was read at the place after the write: the path's own text when the write went there. */
  readonly found: string | null;
  /** Whether the place is the file's own name, without links (`realpath` of it is itself), as promised. */
  readonly canonical: boolean;
}

/**
 * Under a Deno run with `flags`, each of `paths` (relative to `dir`, its working directory) asked of `placeOf`,
 * then written as serve writes a usage file (its directories made, the path appended to): what was found at the
 * place, which is the path's own text when `placeOf` said where the write went. A run of its own, so both ways
 * Deno hands paths on (`pathsAsWritten`) are seen whatever permissions the tests run with.
 */
async function placedUnder(
  flags: string[],
  dir: string,
  paths: string[],
): Promise<{ asWritten: boolean; places: Record<string, Placed> }> {
  const module = (name: string) => JSON.stringify(new URL(name, import.meta.url).href);
  await Deno.writeTextFile(
    `${dir}/place.ts`,
    `import { appendFile, readFile, realpath } from "node:fs/promises";
import { dirname } from "node:path";
import { placeOf } from ${module("./system_path.ts")};
import { makeDirectories } from ${module("./make_directories.ts")};
import { pathsAsWritten } from ${module("../runtime/path_permission.ts")};
const places = {};
for (const path of ${JSON.stringify(paths)}) {
  const place = await placeOf(path);
  await makeDirectories(dirname(path));
  await appendFile(path, path);
  places[path] = {
    place,
    found: await readFile(place, "utf8").catch(() => null),
    canonical: await realpath(place).catch(() => null) === place,
  };
}
console.log(JSON.stringify({ asWritten: pathsAsWritten(), places }));
`,
  );
  return await runJsonScript(`${dir}/place.ts`, flags, dir);
}

Deno.test("system path: placeOf is where the gateway's write through the path goes, `link/..` included, however the runtime hands paths on", async () => {
  // `resolve` dropped `link/..` as text: where the system follows the link first, the place was the directory
  // beside the link, not the one above its target.
  for (const [flags, asWritten] of [[["-A"], true], [["--allow-read", "--allow-write"], false]] as const) {
    const dir = await Deno.realPath(await Deno.makeTempDir());
    try {
      await Deno.mkdir(`${dir}/real/sub`, { recursive: true });
      await Deno.symlink(`${dir}/real/sub`, `${dir}/link`);
      await Deno.symlink("link/../sub", `${dir}/relative`);
      const paths = [
        "link/../a.jsonl",
        `${dir}/link/./../new/b.jsonl`,
        `${dir}//link/../sub/c.jsonl`,
        "relative/../d.jsonl",
        // Names still to be made: serve makes them (none a link), so `..` among them is the name before.
        "new/../e.jsonl",
        `${dir}/link/new/a/../../f.jsonl`,
        // Back out of names still to be made into ones that exist: the link met there is followed.
        "gone/../link/g.jsonl",
        "gone/a/../../link/h.jsonl",
      ];
      const run = await placedUnder([...flags], dir, paths);
      assert.equal(run.asWritten, asWritten);
      for (const path of paths) {
        assert.deepEqual(
          { found: run.places[path].found, canonical: run.places[path].canonical },
          { found: path, canonical: true },
          `${flags}: ${path} at ${run.places[path].place}`,
        );
      }
      // Above the link's target where the system sees `..`; beside the link where Deno dropped it first.
      assert.equal(run.places["link/../a.jsonl"].place, asWritten ? `${dir}/real/a.jsonl` : `${dir}/a.jsonl`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }
});

Deno.test("system path: handedPath is absolute, without `.` or doubled separators, `..` kept only where the runtime hands it on", () => {
  const asWritten = pathsAsWritten();
  assert.equal(handedPath("/a/./b//../c/"), asWritten ? "/a/b/../c" : "/a/c");
  assert.equal(
    handedPath("data/link/../u.jsonl"),
    asWritten ? `${process.cwd()}/data/link/../u.jsonl` : resolve("data/u.jsonl"),
  );
  assert.equal(handedPath("/"), "/");
  assert.equal(handedPath("."), process.cwd());
});

Deno.test("system path: Deno with -A and any --deny-* or --ignore-* flag hands paths on as it checked them, and placeOf follows that", async () => {
  // Each such flag leaves its kind "granted" but partial; read as -A, `link/..` was placed above the link's
  // target while Deno had dropped it as text and the write went beside the link.
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    await Deno.mkdir(`${dir}/real/sub`, { recursive: true });
    await Deno.symlink(`${dir}/real/sub`, `${dir}/link`);
    const narrowing = [
      "--deny-read=/nonexistent",
      "--deny-write=/nonexistent",
      "--deny-net=192.0.2.1",
      "--deny-env=GATEWAY_TEST_NONE",
      "--deny-sys=osRelease",
      "--deny-run=gateway-test-none",
      "--deny-ffi=/nonexistent",
      "--deny-import=example.invalid",
      "--ignore-env=GATEWAY_TEST_NONE",
      "--ignore-read=/nonexistent",
    ];
    for (const flag of narrowing) {
      const run = await placedUnder(["-A", flag], dir, ["link/../a.jsonl"]);
      await Deno.remove(`${dir}/a.jsonl`);
      assert.deepEqual(
        { asWritten: run.asWritten, ...run.places["link/../a.jsonl"] },
        { asWritten: false, place: `${dir}/a.jsonl`, found: "link/../a.jsonl", canonical: true },
        `-A ${flag}`,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

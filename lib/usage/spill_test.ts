import assert from "node:assert/strict";
import { createMemoryLogger } from "../log.ts";
import { SpillFile } from "./spill.ts";
import { exists, makeRecord, readJsonl } from "../../tests/helpers/usage.ts";
import type { StoredUsageRecord, UsageEntry } from "./store.ts";
import type { UsageRecord } from "./record.ts";

const entry = (i: number, overrides: Partial<UsageRecord> = {}): UsageEntry => ({
  record: makeRecord(i, overrides),
  uid: `u${i}`,
});

async function readAll(spill: SpillFile, batch: number): Promise<{ ids: string[]; batches: number }> {
  const reader = await spill.openReplay();
  assert.ok(reader);
  const ids: string[] = [];
  let batches = 0;
  for (let b = await reader.next(batch); b !== null; b = await reader.next(batch)) {
    assert.ok(b.length <= batch);
    batches++;
    ids.push(...b.map((r) => r.request_id));
  }
  await reader.finish();
  return { ids, batches };
}

Deno.test("spill: appends in order, replay renames to .replaying, reads in batches, then deletes", async () => {
  const dir = await Deno.makeTempDir();
  const spill = new SpillFile(`${dir}/data/spill.jsonl`, createMemoryLogger());
  for (let i = 0; i < 250; i++) spill.append(entry(i));
  await spill.flush();
  const lines = await readJsonl(spill.path);
  assert.equal(lines.length, 250);
  assert.deepEqual(lines[7], { ...makeRecord(7), uid: "u7" }, "a line is the record plus its uid");
  assert.equal(await spill.hasData(), true);

  const reader = await spill.openReplay();
  assert.ok(reader);
  assert.equal(reader.path, spill.replayingPath);
  assert.equal(await exists(spill.path), false, "renamed away");
  // spills during a replay go to a fresh spill file
  spill.append(entry(1000));
  await spill.flush();
  const ids: string[] = [];
  for (let b = await reader.next(100); b !== null; b = await reader.next(100)) {
    ids.push(...b.map((r) => r.request_id));
  }
  assert.deepEqual(ids, Array.from({ length: 250 }, (_, i) => `req_${i}`));
  await reader.finish();
  assert.equal(await exists(spill.replayingPath), false);
  assert.deepEqual((await readAll(spill, 10)).ids, ["req_1000"]);
  assert.equal(await spill.openReplay(), null, "nothing left");
  assert.equal(await spill.hasData(), false);
  await spill.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("spill: a leftover .replaying file is replayed first; torn and junk lines are skipped", async () => {
  const dir = await Deno.makeTempDir();
  const logger = createMemoryLogger();
  const spill = new SpillFile(`${dir}/spill.jsonl`, logger);
  const line = (r: StoredUsageRecord) => JSON.stringify(r) + "\n";
  await Deno.writeTextFile(
    spill.replayingPath,
    line(makeRecord(1)) + "not json\n" + line(makeRecord(2)) + "\n" + JSON.stringify([1]) + "\n" +
      line(makeRecord(3)).slice(0, 40), // torn last line of a crash
  );
  await Deno.writeTextFile(spill.path, line(makeRecord(4)));
  const first = await readAll(spill, 100);
  assert.deepEqual(first.ids, ["req_1", "req_2"]);
  assert.ok(logger.lines.some((l) => l.msg === "usage_spill_lines_skipped" && l.lines === 3));
  assert.deepEqual((await readAll(spill, 100)).ids, ["req_4"]);
  await spill.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("spill: records spilled after a crash tore the file's last line are all replayed", async () => {
  const dir = await Deno.makeTempDir();
  const logger = createMemoryLogger();
  const path = `${dir}/spill.jsonl`;
  const old = (i: number) => JSON.stringify({ ...makeRecord(i, { request_id: `old_${i}` }), uid: `old${i}` });
  await Deno.writeTextFile(path, old(0) + "\n" + old(1).slice(0, 120)); // the last process crashed mid-append
  const spill = new SpillFile(path, logger);
  for (let i = 0; i < 3; i++) spill.append(entry(i));
  await spill.flush();
  assert.deepEqual((await readAll(spill, 100)).ids, ["old_0", "req_0", "req_1", "req_2"]);
  assert.ok(logger.lines.some((l) => l.msg === "usage_spill_lines_skipped" && l.lines === 1));
  await spill.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("spill: reads files larger than one read chunk, across chunk boundaries", async () => {
  const dir = await Deno.makeTempDir();
  const spill = new SpillFile(`${dir}/spill.jsonl`, createMemoryLogger());
  const n = 6000; // ~2.5 MB: several 1 MiB chunks, lines split between them
  for (let i = 0; i < n; i++) spill.append(entry(i, { upstream_model: "é".repeat(i % 200) }));
  await spill.flush();
  const { ids, batches } = await readAll(spill, 500);
  assert.equal(ids.length, n);
  assert.equal(new Set(ids).size, n);
  assert.equal(batches, 12);
  await spill.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("spill: an empty spill file is removed, not replayed", async () => {
  const dir = await Deno.makeTempDir();
  const spill = new SpillFile(`${dir}/spill.jsonl`, createMemoryLogger());
  await Deno.writeTextFile(spill.path, "");
  assert.equal(await spill.openReplay(), null);
  assert.equal(await exists(spill.path), false);
  await spill.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("spill: a spill path that is a directory is refused by the replay and left as it is, never renamed", async () => {
  // It was renamed to `<dir>.replaying`, contents and all, on the first replay after start.
  const dir = await Deno.makeTempDir();
  const stat = (path: string) =>
    Deno.stat(path).then((s) => s.isDirectory ? "directory" : "file", () => null);
  try {
    await Deno.mkdir(`${dir}/adir`);
    await Deno.writeTextFile(`${dir}/adir/keep.txt`, "mine");
    const spill = new SpillFile(`${dir}/adir`, createMemoryLogger());
    await assert.rejects(spill.openReplay(), /adir is a directory, not a spill file/);
    assert.equal(await stat(`${dir}/adir`), "directory");
    assert.equal(await Deno.readTextFile(`${dir}/adir/keep.txt`), "mine");
    assert.equal(await stat(`${dir}/adir.replaying`), null, "nothing renamed");
    await spill.close();

    // A directory under the replay's name is not read or deleted either.
    await Deno.mkdir(`${dir}/other.jsonl.replaying`);
    const other = new SpillFile(`${dir}/other.jsonl`, createMemoryLogger());
    await assert.rejects(other.openReplay(), /other\.jsonl\.replaying is a directory, not a spill file/);
    assert.equal(await stat(`${dir}/other.jsonl.replaying`), "directory");
    await other.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

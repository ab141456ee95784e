import assert from "node:assert/strict";
import { appendFile } from "node:fs/promises";
import { createMemoryLogger } from "../log.ts";
import { createJsonlSink, JsonlAppender } from "./jsonl_sink.ts";
import { readJsonl } from "../../tests/helpers/usage.ts";

type Item = { request_id: string; time: string; n: number };
const item = (n: number): Item => ({ request_id: `r${n}`, time: "2025-01-01T00:00:00.000Z", n });

Deno.test("jsonl sink: every record once, in order, across batches", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/sub/usage.jsonl`;
  const sink = createJsonlSink<Item>(path, { logger: createMemoryLogger(), maxBuffered: 10_000 });
  let n = 0;
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 200; i++) sink.append(item(n++));
    if (round % 2 === 0) await new Promise((r) => setTimeout(r, 1)); // let a write start mid-stream
  }
  await sink.close();
  const lines = await readJsonl(path);
  assert.deepEqual(lines.map((l) => l.request_id), Array.from({ length: 1000 }, (_, i) => `r${i}`));
  assert.deepEqual(sink.stats(), { written: 1000, pending: 0, failures: 0, dropped: 0 });
  await Deno.remove(dir, { recursive: true });
});

Deno.test("jsonl sink: a failed write keeps the records, in order, for the next flush", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/blocker`, "a file where a directory should be");
  const path = `${dir}/blocker/usage.jsonl`;
  const logger = createMemoryLogger();
  const sink = new JsonlAppender<Item>(path, { logger, name: "usage_jsonl" });
  for (let i = 0; i < 5; i++) sink.append(item(i));
  await sink.flush();
  assert.equal(sink.pending, 5);
  for (let i = 5; i < 8; i++) sink.append(item(i));
  await sink.flush();
  assert.equal(sink.stats().failures, 2);
  assert.equal(
    logger.lines.filter((l) => l.msg === "usage_jsonl_write_failed").length,
    1,
    "logged once per outage",
  );
  await Deno.remove(`${dir}/blocker`);
  await sink.flush();
  assert.deepEqual((await readJsonl<Item>(path)).map((l) => l.n), [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.ok(logger.lines.some((l) => l.msg === "usage_jsonl_recovered"));
  await sink.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("jsonl sink: a write that fails part-way (disk full) loses no record to the torn line it leaves", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/usage.jsonl`;
  let full = true;
  const sink = new JsonlAppender<Item>(path, {
    logger: createMemoryLogger(),
    name: "usage_jsonl",
    appendText: async (file, text) => {
      if (!full) return await appendFile(file, text);
      await appendFile(file, text.slice(0, text.length / 2 + 7)); // what fitted
      throw Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
    },
  });
  for (let i = 0; i < 4; i++) sink.append(item(i));
  await sink.flush();
  assert.equal(sink.pending, 4, "kept for the retry");
  full = false; // space was freed
  sink.append(item(4));
  await sink.flush();
  await sink.close();
  const lines = (await Deno.readTextFile(path)).split("\n").filter((l) => l !== "");
  const parsed = lines.map((line) => {
    try {
      return (JSON.parse(line) as Item).n;
    } catch {
      return null; // the torn fragment
    }
  });
  const torn = parsed.indexOf(null);
  assert.equal(parsed.filter((n) => n === null).length, 1, "one torn line");
  assert.deepEqual(parsed.slice(torn + 1), [0, 1, 2, 3, 4], "the retry's records, each whole");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("jsonl sink: appending to a file whose last line was torn by a crash starts a new line", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/usage.jsonl`;
  await Deno.writeTextFile(path, JSON.stringify(item(0)) + "\n" + JSON.stringify(item(1)).slice(0, 20));
  const sink = createJsonlSink<Item>(path, { logger: createMemoryLogger(), maxBuffered: 100 });
  for (let i = 2; i < 4; i++) sink.append(item(i));
  await sink.close();
  const lines = (await Deno.readTextFile(path)).split("\n");
  assert.deepEqual(lines.slice(2).map((l) => l === "" ? null : (JSON.parse(l) as Item).n), [2, 3, null]);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("jsonl sink: bounded buffer hands overflow on, or drops and counts it", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/blocker`, "");
  const overflow: Item[] = [];
  const sink = createJsonlSink<Item>(`${dir}/blocker/a.jsonl`, {
    logger: createMemoryLogger(),
    maxBuffered: 10,
    onOverflow: (i) => overflow.push(i),
  });
  for (let i = 0; i < 25; i++) sink.append(item(i));
  assert.equal(sink.pending, 10);
  assert.deepEqual(overflow.map((i) => i.n), Array.from({ length: 15 }, (_, i) => i + 10));

  const logger = createMemoryLogger();
  const dropping = createJsonlSink<Item>(`${dir}/blocker/b.jsonl`, { logger, maxBuffered: 3 });
  for (let i = 0; i < 5; i++) dropping.append(item(i));
  assert.equal(dropping.stats().dropped, 2);
  await sink.close();
  await dropping.close();
  assert.ok(logger.lines.some((l) => l.msg === "usage_jsonl_lost" && l.records === 3));
  await Deno.remove(dir, { recursive: true });
});

/**
 * The token-count worker's client: exact counts from the worker, and every way the worker can fail ending in a
 * count still answered (the rough estimate for the counts it held, a new worker for the next; this thread's own
 * count when no worker can run at all). Whether the calling thread ever runs the tokenizer is
 * tests/faults/tokenizer_thread_test.ts's.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createMemoryLogger } from "../log.ts";
import { countTokens, roughTokenEstimate } from "./estimate.ts";
import { TokenCounter, tokenCounter } from "./token_counter.ts";
import { countHere } from "./tokenizer.ts";

const FAULTY = new URL("../../tests/helpers/faulty_token_worker.ts", import.meta.url);
const TEXTS = ["How many tokens is this?", "Four tokens.", "x".repeat(5_000), "word ".repeat(1_000)];

Deno.test("token counter: starts nothing until asked; counts as this thread's tokenizer does; ends with its last user", async () => {
  const counter = new TokenCounter();
  const logger = createMemoryLogger();
  const release = counter.use({ logger });
  try {
    assert.equal(counter.loaded(), false, "no count yet: no worker, no tokenizer");
    assert.equal(await counter.count(TEXTS), await countHere(TEXTS));
    assert.equal(counter.loaded(), true);
    assert.equal(await counter.count([]), 0);
  } finally {
    release();
  }
  assert.equal(counter.loaded(), false, "the worker is ended with its last user");
  await counter.load();
  assert.equal(counter.loaded(), true, "load() starts a worker again and resolves once it has the tokenizer");
  counter.stop();
  assert.deepEqual(logger.lines, [], "nothing went wrong");
});

Deno.test("token counter: a worker that dies fails the counts it held (the rough estimate); the next count starts a new one", async () => {
  const logger = createMemoryLogger();
  const release = tokenCounter.use({ workerUrl: FAULTY, logger });
  try {
    assert.equal(await countTokens(["hello world"]), await countHere(["hello world"]));
    const [crashed, alongside] = await Promise.all([
      countTokens(["crash-the-worker"]),
      countTokens(["a count queued behind it"]),
    ]);
    assert.equal(crashed, roughTokenEstimate(["crash-the-worker"]));
    assert.equal(alongside, roughTokenEstimate(["a count queued behind it"]));
    assert.deepEqual(logger.lines.map((l) => [l.msg, l.counts_estimated]), [[
      "token_count_worker_failed",
      2,
    ]]);
    assert.equal(await countTokens(TEXTS), await countHere(TEXTS), "a new worker counts exactly again");
  } finally {
    release();
  }
});

Deno.test("token counter: a hung worker holds a count no longer than its bound, and is replaced", async () => {
  // The bound also holds the replacement's first count, which loads the tokenizer: 1–3 s on a loaded machine
  // (1 s failed under a parallel run), so the bound leaves room for it.
  const counter = new TokenCounter({ workerUrl: FAULTY, timeoutMs: 8_000 });
  const logger = createMemoryLogger();
  const release = counter.use({ logger });
  try {
    assert.equal(await counter.count(["hang-the-worker"]), null);
    assert.deepEqual(logger.lines.map((l) => l.msg), ["token_count_timeout"]);
    assert.equal(await counter.count(TEXTS), await countHere(TEXTS));
  } finally {
    release();
  }
});

Deno.test("token counter: no worker can run, so this thread counts, exactly, and says so once", async () => {
  const counter = new TokenCounter({ workerUrl: new URL("./no_such_token_worker.js", import.meta.url) });
  const logger = createMemoryLogger();
  const release = counter.use({ logger });
  try {
    const [first, second] = await Promise.all([counter.count(TEXTS), counter.count(["hello"])]);
    assert.equal(first, await countHere(TEXTS));
    assert.equal(second, await countHere(["hello"]));
    assert.equal(await counter.count(TEXTS), first);
    await counter.load();
    assert.equal(counter.loaded(), true);
    assert.deepEqual(logger.lines.map((l) => [l.msg, l.counting]), [[
      "token_counter_unavailable",
      "in-thread",
    ]]);
  } finally {
    release();
  }
});

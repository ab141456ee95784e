import assert from "node:assert/strict";
import { StreamTexts } from "../usage/stream_texts.ts";
import { ClientGoneError, GatewayError } from "../errors.ts";
import type { Lease } from "../routing/health.ts";
import { createScrubber } from "../secrets/scrubber.ts";
import { clientStreamBody, type StreamOutcome } from "./stream_body.ts";

const encoder = new TextEncoder();

/** A lease that notes what the body did with it. */
function lease(calls: string[]): Lease {
  return {
    probe: false,
    succeeded: () => calls.push("succeeded"),
    failed: () => calls.push("failed"),
    release: () => calls.push("release"),
  };
}

/** A peeked upstream of `values`, optionally failing with `error` after them; notes whether it was cancelled. */
function upstream(values: string[], error?: unknown) {
  const state = { cancelled: false };
  const rest = new ReadableStream<string>({
    start(controller) {
      for (const value of values.slice(1)) controller.enqueue(value);
      if (error === undefined) controller.close();
      else controller.error(error);
    },
    cancel() {
      state.cancelled = true;
    },
  }).getReader();
  return { stream: { first: values[0], rest }, state };
}

/** A body writing each value as a line, `!<message>` for a failure and `.` at the clean end. */
function lineBody(
  stream: ReturnType<typeof upstream>["stream"],
  calls: string[],
  scrubber?: ReturnType<typeof createScrubber>,
  startedAt?: number,
  signal?: AbortSignal,
) {
  const outcome: StreamOutcome = { end: "ok", texts: new StreamTexts() };
  const ends: StreamOutcome[] = [];
  const body = clientStreamBody(stream, outcome, {
    onEnd: (o) => {
      calls.push("onEnd");
      ends.push({ ...o });
    },
    lease: lease(calls),
    scrubber,
    startedAt,
    signal,
  }, {
    async pull(controller, next, end) {
      const value = await next();
      if (value === undefined) {
        controller.enqueue(encoder.encode(".\n"));
        controller.close();
        end("ok");
        return;
      }
      outcome.texts.push(value);
      controller.enqueue(encoder.encode(`${value}\n`));
    },
    fail(controller, error) {
      controller.enqueue(encoder.encode(`!${error.message}\n`));
    },
    beforeEnd: () => calls.push("beforeEnd"),
  });
  return { body, ends };
}

Deno.test("client body: the first value, then the rest, then a clean end reported once after the lease", async () => {
  const calls: string[] = [];
  const { stream } = upstream(["a", "b", "c"]);
  const { body, ends } = lineBody(stream, calls);
  assert.equal(await new Response(body).text(), "a\nb\nc\n.\n");
  assert.deepEqual(calls, ["beforeEnd", "release", "onEnd"]);
  assert.equal(ends.length, 1);
  assert.equal(ends[0].end, "ok");
  assert.deepEqual(ends[0].texts.opening(), ["a", "b", "c"]);
});

Deno.test("client body: an upstream failure ends with the API's error events, scrubbed, and fails the lease", async () => {
  const calls: string[] = [];
  const secret = "sk-secret-value-123456";
  const { stream } = upstream(["a"], new GatewayError(502, `upstream said ${secret}`));
  const { body, ends } = lineBody(stream, calls, createScrubber([secret]));
  const text = await new Response(body).text();
  assert.match(text, /^a\n!upstream said /);
  assert.ok(!text.includes(secret), "the secret never reaches the client");
  assert.ok(!text.endsWith(".\n"), "no clean end after a failure");
  assert.deepEqual(calls, ["beforeEnd", "failed", "release", "onEnd"]);
  assert.equal(ends[0].end, "error");
  assert.equal(ends[0].error?.status, 502);
  assert.ok(!ends[0].error?.message.includes(secret));
});

Deno.test("client body: an error the client API sets itself (an upstream that ended its stream as failed) is scrubbed too", async () => {
  const secret = "sk-secret-value-123456";
  const outcome: StreamOutcome = { end: "ok", texts: new StreamTexts() };
  let ended: StreamOutcome | undefined;
  const { stream } = upstream(["a"]);
  const body = clientStreamBody(stream, outcome, {
    onEnd: (o) => ended = { ...o },
    scrubber: createScrubber([secret]),
  }, {
    async pull(controller, next, end) {
      await next();
      outcome.error = new GatewayError(502, `failed: ${secret}`, { code: secret });
      controller.close();
      end("error");
    },
    fail() {},
  });
  await new Response(body).text();
  assert.equal(ended?.end, "error");
  assert.ok(!ended?.error?.message.includes(secret) && !ended?.error?.code?.includes(secret));
});

Deno.test("client body: a client gone mid-read counts as cancelled, not as a target failure", async () => {
  const calls: string[] = [];
  const { stream } = upstream(["a"], new ClientGoneError());
  const { body, ends } = lineBody(stream, calls);
  await new Response(body).text();
  assert.deepEqual(calls, ["beforeEnd", "release", "onEnd"]);
  assert.equal(ends[0].end, "cancelled");
});

Deno.test("client body: cancelling the body cancels the upstream and reports once", async () => {
  const calls: string[] = [];
  const { stream, state } = upstream(["a", "b", "c"]);
  const { body, ends } = lineBody(stream, calls);
  const reader = body.getReader();
  assert.equal(new TextDecoder().decode((await reader.read()).value), "a\n");
  await reader.cancel("gone");
  await reader.cancel("again");
  assert.equal(state.cancelled, true);
  assert.deepEqual(calls, ["beforeEnd", "release", "onEnd"]);
  assert.deepEqual(ends.map((e) => e.end), ["cancelled"]);
});

Deno.test("client body: cancelled after shutdown ended its request, the outcome says so, not a client gone", async () => {
  // The runtime closes the connections shutdown's cut left open: the edge cancels the body as if its client left.
  const shutdown = new AbortController();
  shutdown.abort(new GatewayError(503, "shutting down", { type: "server_error", code: "server_shutdown" }));
  const { stream } = upstream(["a", "b"]);
  const { body, ends } = lineBody(stream, [], undefined, undefined, shutdown.signal);
  await body.cancel(new ClientGoneError());
  assert.equal(ends[0].end, "cancelled");
  assert.equal(ends[0].error?.code, "server_shutdown");

  // A request still running when its body was cancelled: the edge's reason, as before.
  const running = new AbortController();
  const gone = lineBody(upstream(["a", "b"]).stream, [], undefined, undefined, running.signal);
  await gone.body.cancel(new ClientGoneError());
  assert.equal(gone.ends[0].error?.code, "client_closed_request");
});

Deno.test("client body: the time to the first chunk is measured once, from the request's start to the first pull, for every API", async () => {
  const calls: string[] = [];
  const { stream } = upstream(["a", "b", "c"]);
  // The request started a second ago.
  const startedAt = performance.now() - 1_000;
  const { body, ends } = lineBody(stream, calls, undefined, startedAt);
  const reader = body.getReader();
  const before = performance.now();
  assert.equal(new TextDecoder().decode((await reader.read()).value), "a\n");
  const after = performance.now();
  // A later value (read after a pause) does not move it.
  await new Promise((resolve) => setTimeout(resolve, 20));
  while (!(await reader.read()).done);
  const first = ends[0].firstChunkAt;
  assert.equal(typeof first, "number");
  assert.ok(first! >= Math.floor((before - startedAt) * 100) / 100, `${first} ≥ ${before - startedAt}`);
  assert.ok(first! <= Math.ceil((after - startedAt) * 100) / 100, `${first} ≤ ${after - startedAt}`);

  const { stream: unmeasured } = upstream(["a"]);
  const plain = lineBody(unmeasured, []);
  await new Response(plain.body).text();
  assert.equal(plain.ends[0].firstChunkAt, undefined, "without a start, nothing is measured");
});

Deno.test("client body: a failure of the gateway's own is told to onUnexpected (the runner logs it); an upstream's is not", async () => {
  const run = async (failure: unknown) => {
    const seen: unknown[] = [];
    const { stream } = upstream(["a", "b"]);
    const body = clientStreamBody(stream, { end: "ok", texts: new StreamTexts() }, {
      onEnd: () => {},
      onUnexpected: (err) => seen.push(err),
    }, {
      async pull(controller, next) {
        const value = await next();
        if (value === "b") throw failure;
        controller.enqueue(encoder.encode(`${value}\n`));
      },
      fail(controller, error) {
        controller.enqueue(encoder.encode(`!${error.code}\n`));
      },
    });
    return { text: await new Response(body).text(), seen };
  };
  // A bug in an API's translation (reading a property of null): the client gets only the generic code.
  const bug = new TypeError("Cannot read properties of null (reading 'function')");
  assert.deepEqual(await run(bug), { text: "a\n!internal_error\n", seen: [bug] });
  const upstreamFault = new GatewayError(502, "bad chunk", { code: "upstream_invalid_response" });
  assert.deepEqual(await run(upstreamFault), { text: "a\n!upstream_invalid_response\n", seen: [] });
});

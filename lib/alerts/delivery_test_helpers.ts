/** What the delivery tests share: targets and alerts, timers and fetches under the test's control. */
import type { AlertBody, DeliveryTarget, DeliveryTimers } from "./delivery.ts";

export function target(url: string, extra: Partial<DeliveryTarget> = {}): DeliveryTarget {
  return { url, timeout: 2_000, retries: 3, ...extra };
}

export function alert(id = `alr_${crypto.randomUUID().replaceAll("-", "")}`): AlertBody {
  return { id, type: "budget", time: new Date(0).toISOString(), threshold: 80 };
}

export /** Timers under the test's control: `advance(ms)` fires, in order, every timer due by then. */
function fakeTimers(): DeliveryTimers & { advance(ms: number): void; readonly armed: number } {
  let now = 0;
  let next = 0;
  const due = new Map<number, { at: number; fn: () => void }>();
  return {
    set(fn, ms) {
      due.set(++next, { at: now + ms, fn });
      return next;
    },
    clear(handle) {
      due.delete(handle as number);
    },
    advance(ms) {
      const until = now + ms;
      for (;;) {
        const [id, first] = [...due].sort((a, b) => a[1].at - b[1].at)[0] ?? [];
        if (first === undefined || first.at > until) break;
        due.delete(id!);
        now = first.at;
        first.fn();
      }
      now = until;
    },
    get armed() {
      return due.size;
    },
  };
}

/** A `fetch` whose every call waits for the test to answer it (`answer(status)`, oldest first); aborts end it. */
export function heldFetch() {
  const calls: { id: string; answer: (status: number) => void }[] = [];
  const fetch: typeof globalThis.fetch = (_url, init) =>
    new Promise<Response>((resolve, reject) => {
      const id = JSON.parse(String(init?.body)).id;
      calls.push({ id, answer: (status) => resolve(new Response(null, { status })) });
      init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
    });
  const flush = () => new Promise((resolve) => setTimeout(resolve, 0));
  /** Answers the oldest unanswered call, then lets delivery go on. */
  let answered = 0;
  const answer = async (status: number) => {
    calls[answered++].answer(status);
    await flush();
  };
  return { calls, fetch, answer, flush };
}

/** A `fetch` under which every URL containing "hung" hangs (the test never lets a timeout come); others answer. */
export function hangingFetch() {
  const hung: string[] = [];
  const fetch: typeof globalThis.fetch = (url, init) => {
    if (String(url).includes("hung")) {
      hung.push(JSON.parse(String(init?.body)).id);
      return new Promise<Response>(() => {});
    }
    return Promise.resolve(new Response(null, { status: 204 }));
  };
  return { hung, fetch };
}

/**
 * Validates a config file in a worker thread (`config_worker.ts`): the serving thread posts the path and the
 * environment and waits, free to serve requests, for the issues or the validated data. One short-lived worker
 * per reload; reloads are rare, and a fresh worker leaves nothing behind from a hostile file.
 *
 * Whatever goes wrong with the worker is a failed validation with one clear issue, never an exception: a
 * worker that crashes, or that takes longer than the time limit (it is terminated then). Only when a worker
 * cannot be started at all does validation run on the calling thread, and `onFallback` says so.
 *
 * @module
 */
import { readConfigFile, validateConfigSource, type ValidationResult } from "./load.ts";

/** What the serving thread posts to the worker. */
export interface ConfigWorkerRequest {
  readonly path: string;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** Longest a validation may take: a 4 MiB file validates in a few seconds even on a slow machine. */
export const CONFIG_WORKER_TIMEOUT_MS = 30_000;

/** Options for {@linkcode validateConfigFileInWorker}. */
export interface ConfigWorkerOptions {
  /**
   * The worker module (default: `config_worker.ts` beside this file). A single binary passes it from its
   * entry point, where it is bundled as a second entry point.
   */
  workerUrl?: URL;
  timeoutMs?: number;
  /** Called when no worker could be started and validation runs in-thread instead. */
  onFallback?: (reason: string) => void;
}

/** Reads and validates a config file on the calling thread (`check`, and the fallback). */
export async function validateConfigFile(
  path: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<ValidationResult> {
  const read = await readConfigFile(path);
  return read.ok ? await validateConfigSource(read.text, env) : read;
}

/** The first line of a worker's error message, without terminal colours: an issue is one plain line. */
function firstLine(message: string | undefined): string {
  // deno-lint-ignore no-control-regex
  const plain = (message ?? "").replace(/\u001b\[[0-9;]*m/g, "").split("\n", 1)[0].trim();
  return plain === "" ? "unknown error" : plain;
}

function failed(message: string): ValidationResult {
  return { ok: false, issues: [{ path: "", message }] };
}

/** Reads and validates `path` in a fresh worker; never rejects. */
export async function validateConfigFileInWorker(
  path: string,
  env: Readonly<Record<string, string | undefined>>,
  options: ConfigWorkerOptions = {},
): Promise<ValidationResult> {
  const url = options.workerUrl ?? new URL("./config_worker.ts", import.meta.url);
  const timeoutMs = options.timeoutMs ?? CONFIG_WORKER_TIMEOUT_MS;
  let worker: Worker;
  try {
    worker = new Worker(url.href, { type: "module" });
  } catch (err) {
    options.onFallback?.(err instanceof Error ? err.message : String(err));
    return await validateConfigFile(path, env);
  }
  const answer = Promise.withResolvers<ValidationResult>();
  const timer = setTimeout(
    () => answer.resolve(failed(`validating the config took longer than ${timeoutMs / 1000} s; not applied`)),
    timeoutMs,
  );
  worker.onmessage = (event: MessageEvent<ValidationResult>) => answer.resolve(event.data);
  worker.onerror = (event: ErrorEvent) => {
    // Handled here: an uncaught error in the worker must not take the server down with it.
    event.preventDefault();
    answer.resolve(
      failed(`config validation worker failed (${firstLine(event.message)}); not applied`),
    );
  };
  worker.onmessageerror = () => answer.resolve(failed("config validation worker sent an unreadable answer"));
  try {
    worker.postMessage({ path, env: { ...env } } satisfies ConfigWorkerRequest);
    return await answer.promise;
  } finally {
    clearTimeout(timer);
    worker.terminate();
  }
}

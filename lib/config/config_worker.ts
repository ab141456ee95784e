/**
 * The worker thread that reads, parses and validates a config file for a reload (started by
 * `config_worker_client.ts`), so that a large or hostile file never pauses the event loop that serves
 * requests. It answers once, with the issues or the validated plain data; the serving thread only resolves.
 *
 * @module
 */
import type { ConfigWorkerRequest } from "./config_worker_client.ts";
import { readConfigFile, validateConfigSource, type ValidationResult } from "./load.ts";

/** The worker global scope, as far as this module uses it (typed here so it checks under the window lib). */
const scope = globalThis as unknown as {
  onmessage: ((event: MessageEvent<ConfigWorkerRequest>) => void) | null;
  postMessage(message: ValidationResult): void;
};

scope.onmessage = async (event) => {
  const { path, env } = event.data;
  let result: ValidationResult;
  try {
    const read = await readConfigFile(path);
    result = read.ok ? await validateConfigSource(read.text, env) : read;
  } catch (err) {
    // A bug, not a bad file (those are issues): still an answer, never a silent worker.
    const reason = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    result = { ok: false, issues: [{ path: "", message: `config validation failed (${reason})` }] };
  }
  scope.postMessage(result);
};

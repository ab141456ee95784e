/**
 * The error a part of a valid config throws when it cannot be set up: a provider or a guardrail service whose
 * credentials or region are nowhere to be found. It names the config path to fix, so the loader, `check` and a
 * reload report it as one more issue of the file (`file: path: message`) instead of crashing or, on a reload,
 * answering a 500 while `/readyz` still shows the last success. Its message names what is missing, never a
 * value.
 *
 * @module
 */

/** A config entry that passed the checks but cannot be set up; `path` is the entry's dotted config path. */
export class ConfigSetupError extends Error {
  constructor(readonly path: string, message: string) {
    super(message);
    this.name = "ConfigSetupError";
  }
}

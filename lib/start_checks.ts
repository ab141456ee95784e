/**
 * What `serve` refuses at start that the config's own checks cannot see, because it depends on the machine or the
 * environment rather than the file: an `OTEL_EXPORTER_OTLP_*ENDPOINT` variable the telemetry block would read and
 * cannot use, and a usage file (database, JSONL copy, spill file) that cannot be written where it says. `check`
 * and `serve` (before it listens) run all of it; a reload runs it for the start-only keys it changes, so a reload
 * that says ok means the restart it asks for will start (one used to answer ok with `restart_required: ["usage"]`
 * for a `usage.sqlite` under a regular file, and the restart failed on `mkdir`). Each issue is at its key's line
 * in the file, as the loader's own issues are (`config/start_only.ts`).
 *
 * @module
 */
import type { ConfigIssue, ResolvedConfig } from "./config/types.ts";
import { restartRequired, startOnlyLine } from "./config/start_only.ts";
import { telemetrySettings, TelemetrySetupError } from "./telemetry/settings.ts";
import { usageLocationIssues, usagePermissionIssues } from "./usage/usage_locations.ts";

/**
 * Every start issue of `config`; with `keys` (start-only keys, `config/start_only.ts`), only those of the checks
 * that read them. Writes nothing. `permissions: false` leaves out the usage files Deno's permissions leave out:
 * `check` is often run with fewer permissions than `serve` (a validator in CI may read only), so it says those
 * as a note rather than refusing a config that `serve` under its own flags starts with.
 */
export async function startIssues(
  config: ResolvedConfig,
  env: Readonly<Record<string, string | undefined>>,
  keys?: readonly string[],
  permissions = true,
): Promise<ConfigIssue[]> {
  const asked = (key: string) => keys === undefined || keys.includes(key);
  const issues: ConfigIssue[] = [];
  if (asked("telemetry")) {
    try {
      telemetrySettings(config.telemetry, env);
    } catch (err) {
      if (!(err instanceof TelemetrySetupError)) throw err;
      issues.push({ path: "telemetry", message: err.message });
    }
  }
  if (asked("usage") || asked("postgres")) {
    issues.push(...await usageLocationIssues(config));
    if (permissions) issues.push(...usagePermissionIssues(config));
  }
  return atTheirLines(config, issues);
}

/**
 * The `OTEL_*` variables telemetry would read and ignores (an unknown sampler, a sampler argument out of range),
 * which `serve` logs as a warning at start: `check` says them as a note. A variable it refuses is a start issue.
 */
export function telemetryNotes(
  config: ResolvedConfig,
  env: Readonly<Record<string, string | undefined>>,
): ConfigIssue[] {
  try {
    const notes = telemetrySettings(config.telemetry, env)?.notes ?? [];
    return atTheirLines(config, notes.map((message) => ({ path: "telemetry", message })));
  } catch {
    return []; // refused: startIssues says why
  }
}

/**
 * What `check` notes rather than refuses (it is often run with other permissions than `serve`): the usage files
 * Deno's permissions leave out, which `serve` under this check's permissions refuses.
 */
export function permissionNotes(config: ResolvedConfig): ConfigIssue[] {
  return atTheirLines(config, usagePermissionIssues(config));
}

/** `issues` at their line in the file, as the loader's issues are (`startOnlyLine`). */
function atTheirLines(config: ResolvedConfig, issues: readonly ConfigIssue[]): ConfigIssue[] {
  return issues.map((issue) => {
    const line = startOnlyLine(config, issue.path);
    return line === undefined ? issue : { ...issue, line };
  });
}

/**
 * The start issues of `next` for the start-only keys it changes from `started` (what the gateway started with):
 * what refuses a reload, as an invalid file's issues do, the previous config kept.
 */
export function startOnlyIssues(
  started: ResolvedConfig,
  next: ResolvedConfig,
  env: Readonly<Record<string, string | undefined>>,
): Promise<ConfigIssue[]> {
  const changed = restartRequired(started, next);
  return changed.length === 0 ? Promise.resolve([]) : startIssues(next, env, changed);
}

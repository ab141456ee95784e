/**
 * Where the usage pipeline will write, checked before it does: the SQLite database (`usage.sqlite`, unless
 * PostgreSQL holds the records), the JSONL copy (`usage.jsonl`) and the spill file (`usage.spill`, and the
 * `.replaying` name a replay gives it). `check` refuses what this finds, `serve` refuses it before it listens, and a
 * reload that changes `usage` or `postgres` (taken only at start) is refused for it, so a reload that says ok
 * means the next start works.
 *
 * Only the JSONL and spill paths used to go unchecked: `check` passed, `serve` started, and every record meant for
 * them was lost (`usage_spill_lost`, `usage_jsonl_lost`); a spill path naming a directory had that directory
 * renamed by the replay.
 *
 * @module
 */
import type { ConfigIssue, ResolvedConfig } from "../config/types.ts";
import { fileLocationProblem, kindOf } from "./file_location.ts";
import { replayingPathOf } from "./spill.ts";
import { sqliteLocationProblem } from "./sqlite_location.ts";

/** Every usage file of `config` that cannot be where it says, as issues at its key. Writes nothing. */
export async function usageLocationIssues(config: ResolvedConfig): Promise<ConfigIssue[]> {
  const usage = config.usage;
  const issues: ConfigIssue[] = [];
  const sqlite = config.postgres === null ? usage.sqlite : "none";
  if (sqlite !== "none") {
    const problem = await sqliteLocationProblem(sqlite);
    if (problem !== null) issues.push({ path: "usage.sqlite", message: problem });
  }
  if (usage.jsonl !== undefined) {
    const problem = await fileLocationProblem(usage.jsonl, {
      file: "a JSONL file",
      name: "the JSONL copy of the usage records",
    });
    if (problem !== null) issues.push({ path: "usage.jsonl", message: problem });
  }
  // The pipeline runs (and may spill) with a database or a JSONL copy; with neither, nothing is written.
  if (sqlite !== "none" || config.postgres !== null || usage.jsonl !== undefined) {
    const problem = await spillLocationProblem(usage.spill);
    if (problem !== null) issues.push({ path: "usage.spill", message: problem });
  }
  return issues;
}

/** Why the spill file cannot be at `path`: as any file, and its replay's name must not be a directory either. */
async function spillLocationProblem(path: string): Promise<string | null> {
  const replaying = replayingPathOf(path);
  const problem = await fileLocationProblem(path, { file: "a spill file", name: "the spill file" }, [
    replaying,
  ]);
  if (problem !== null) return problem;
  return await kindOf(replaying) === "directory"
    ? `${replaying} is a directory: a replay reads the spill file under that name`
    : null;
}

/**
 * Cross-checks of the response cache's settings: a Redis store without `redis:`, a cache on an alias that is
 * not a chat alias, and a semantic cache whose embedding alias does not exist or does not embed. Works on raw
 * data like the other semantic checks, skipping what the schema already reports.
 *
 * @module
 */
import type { SemanticIssue } from "./check_issue.ts";
import { entriesOf, field, isRecord, recordField, stringField } from "./raw_access.ts";

/** Every issue of the cache settings, in section order. */
export function checkCache(config: unknown): SemanticIssue[] {
  const issues: SemanticIssue[] = [];
  if (stringField(field(config, "cache"), "store") === "redis" && !isRecord(field(config, "redis"))) {
    issues.push({
      path: ["cache", "store"],
      message: "the redis store needs a redis: section (the fleet's Redis); use store: memory on one node",
    });
  }
  const models = recordField(config, "models");
  for (const [alias, model] of entriesOf(models)) {
    const cache = field(model, "cache");
    if (!isRecord(cache)) continue;
    const type = stringField(model, "type");
    if (type === "embedding" || type === "moderation") {
      issues.push({
        path: ["models", alias, "cache"],
        message: `the response cache serves chat aliases; remove cache: from this ${type} alias`,
      });
    }
    const embeddings = stringField(field(cache, "semantic"), "embeddings");
    if (embeddings === undefined || models === undefined) continue;
    const target = field(models, embeddings);
    const at = ["models", alias, "cache", "semantic", "embeddings"];
    if (!isRecord(target)) issues.push({ path: at, message: `"${embeddings}" is not a model alias` });
    else if (stringField(target, "type") !== "embedding") {
      issues.push({ path: at, message: `"${embeddings}" is not an embedding alias (type: embedding)` });
    }
  }
  return issues;
}

/// <reference lib="dom" />
/**
 * Explain: what a request from a token for an alias would meet now — allowed or the rule that denies it, the
 * checks in order, the targets with their health, every limit with what is left, the token's budget and its
 * team's (money as money), the max_tokens ceiling and the content rules. For the "it doesn't work"
 * conversation.
 *
 * @module
 */
import { get, getAll } from "../api.ts";
import { definitions, field, h, replace, table } from "../dom.ts";
import { formatCost, formatCount, formatMs, NONE } from "../format.ts";
import { routeHash } from "../query.ts";
import { formatBudgetUse } from "../spend_format.ts";
import type { AliasTargets, ApiList, ExplainBudget, Explanation, Token } from "../types.ts";
import { untilText } from "./state.ts";
import { heading, showError, type View } from "./common.ts";

function result(x: Explanation): HTMLElement[] {
  const verdict = x.allowed
    ? h(
      "p",
      { class: "verdict ok" },
      h("strong", {}, "Allowed"),
      ` for ${x.token.name} on ${x.model} (${x.endpoint}).`,
    )
    : h(
      "p",
      { class: "verdict denied" },
      h("strong", {}, `Denied by ${x.denied_by?.rule ?? "unknown rule"}`),
      x.denied_by?.message ? `: ${x.denied_by.message}` : "",
    );
  const checks = table(
    "Checks",
    ["Rule", "Result", "Detail"],
    x.checks.map((c) => [c.rule, c.ok === null ? "unknown" : c.ok ? "ok" : "fails", c.detail ?? ""]),
    "No checks.",
  );
  const targets = table(
    "Targets",
    ["Provider", "Model", "State", "Ejected until", "In flight", "Latency", "Weight", "Price (in / out)"],
    x.targets.map((t) => [
      t.provider,
      t.model,
      t.state,
      t.ejected_until === null ? "" : untilText(t.ejected_until),
      formatCount(t.in_flight),
      formatMs(t.latency_ewma_ms),
      t.weight === undefined ? NONE : String(t.weight),
      t.price ? `${formatCost(t.price.input)} / ${formatCost(t.price.output)}` : NONE,
    ]),
    "No targets.",
  );
  const limits = table(
    "Limits",
    ["Rule", "Limit", "Used", "Remaining"],
    x.limits.map((l) => [l.rule, formatCount(l.limit), formatCount(l.used), formatCount(l.remaining)]),
    "No limits apply.",
  );
  const budgetText = (budget: ExplainBudget | null | undefined) =>
    budget === null || budget === undefined ? "none" : formatBudgetUse(budget);
  const rest = definitions(
    [
      ["Strategy", x.strategy ?? NONE],
      ["Budget", budgetText(x.budget)],
      ["Team budget", budgetText(x.team_budget)],
      ["Max tokens", x.max_tokens === null ? "no ceiling" : formatCount(x.max_tokens)],
    ],
    "Budget and ceilings",
    true,
  );
  const content = table(
    "Content rules",
    ["Rule", "Action", "Pattern"],
    x.content_rules.map((r) => [r.rule, r.action, h("code", {}, `/${r.pattern}/${r.flags ?? ""}`)]),
    "No content rules.",
  );
  return [verdict, checks, targets, limits, rest, content];
}

export const explainView: View = async (root, _rest, params) => {
  const tokenList = h("datalist", { id: "explain-tokens" });
  const aliasList = h("datalist", { id: "explain-aliases" });
  const token = h("input", {
    type: "text",
    name: "token",
    value: params.token ?? "",
    list: "explain-tokens",
    autocomplete: "off",
    required: true,
  });
  const alias = h("input", {
    type: "text",
    name: "model",
    value: params.model ?? "",
    list: "explain-aliases",
    autocomplete: "off",
    required: true,
  });
  const form = h(
    "form",
    { class: "filter-form", "aria-label": "Explain a request" },
    field("Token", token),
    field("Alias", alias),
    h("button", { type: "submit" }, "Explain"),
    tokenList,
    aliasList,
  );
  const region = h("section", { "aria-label": "Explanation", class: "explanation", "aria-live": "polite" });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = routeHash("explain", { token: token.value.trim(), model: alias.value.trim() });
    if (location.hash === next) void explainView(root, _rest, params);
    else location.hash = next;
  });
  replace(root, heading("Explain"), form, region);

  // Suggestions only: a failure leaves the inputs free text.
  void Promise.all([
    // The first tokens by name (bounded); a token past them is typed in full, as any name can be.
    getAll<Token>("/admin/tokens", {}).then((l) => l.data).catch(() => [] as Token[]),
    get<ApiList<AliasTargets>>("/admin/targets").then((l) => l.data).catch(() => [] as AliasTargets[]),
  ]).then(([tokens, aliases]) => {
    replace(tokenList, tokens.map((t) => h("option", { value: t.name })));
    replace(aliasList, aliases.map((a) => h("option", { value: a.alias })));
  });

  if (!params.token || !params.model) return;
  try {
    const x = await get<Explanation>("/admin/explain", {
      token: params.token,
      model: params.model,
      endpoint: params.endpoint,
    });
    replace(region, result(x));
  } catch (err) {
    showError(region, err);
  }
};

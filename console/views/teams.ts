/// <reference lib="dom" />
/**
 * Teams: every team, of the config file (`teams:`) or made through the admin API (`POST /admin/teams`), with
 * its budget and what it has spent of it this period (from the same counters that admit requests), its limits
 * and model scope, and its member tokens, each linked to its page; a token joins one with `team:`.
 * `#/teams/<name>` shows that team alone (the audit trail links there); a team deleted since is said so.
 *
 * @module
 */
import { get } from "../api.ts";
import { type Child, definitions, h, link, replace, table } from "../dom.ts";
import { formatBudget, formatCost, formatCount, formatLimits, NONE } from "../format.ts";
import { routeHash } from "../query.ts";
import { formatPeriod, formatSpend } from "../spend_format.ts";
import type { Spend, Team, TeamList } from "../types.ts";
import { heading, loading, showError, type View } from "./common.ts";

/** A bar of the share spent (a native `meter`: it turns amber from 80% and red at the limit). */
function spendMeter(spend: Spend): HTMLElement | null {
  if (spend.used === null || !(spend.limit > 0)) return null;
  return h("meter", {
    min: 0,
    max: spend.limit,
    low: spend.limit * 0.8,
    high: spend.limit * 0.999,
    optimum: 0,
    value: Math.min(spend.used, spend.limit),
    "aria-hidden": "true",
  });
}

/** What is left: "400 tokens", "12.50 cost". */
function remainingText(spend: Spend): string {
  if (spend.remaining === null) return NONE;
  return spend.unit === "cost"
    ? `${formatCost(spend.remaining)} cost`
    : `${formatCount(spend.remaining)} tokens`;
}

/** One team's section: its heading, description, budget and spend, rules, and members. */
function teamSection(team: Team, index: number): HTMLElement {
  const headingId = `team-${index}`;
  const spend = team.spend;
  const entries: [string, Child | Child[]][] = [["Budget", formatBudget(team.budget)]];
  if (spend !== null) {
    entries.push(
      ["Spent", h("span", { class: "spend" }, spendMeter(spend), " ", formatSpend(spend))],
      ["Remaining", remainingText(spend)],
      ["Period", formatPeriod(spend)],
    );
  }
  entries.push(
    ["Limits", formatLimits(team.limits)],
    ["Models", team.models === null ? "any (each member's own models)" : team.models.join(", ")],
  );
  const members = team.members.map((m) => [link(routeHash("tokens", {}, m.id), m.name), m.source]);
  return h(
    "section",
    { class: "team", "aria-labelledby": headingId },
    h("h2", { id: headingId }, team.name),
    team.description === null ? null : h("p", { class: "note" }, team.description),
    definitions(entries, `Team ${team.name}`, true),
    table(`Members of ${team.name}`, ["Token", "Source"], members, "No token has joined this team."),
  );
}

export const teamsView: View = async (root, rest) => {
  const refresh = h("button", {
    type: "button",
    class: "secondary",
    onclick: () => void teamsView(root, rest, {}),
  }, "Refresh");
  const body = h("div", {}, loading());
  replace(root, heading("Teams", refresh), body);
  let teams: TeamList;
  try {
    teams = await get<TeamList>("/admin/teams");
  } catch (err) {
    replace(body);
    showError(body, err);
    return;
  }
  if (rest !== "") {
    const all = h("p", {}, link(routeHash("teams"), "All teams"));
    const index = teams.data.findIndex((team) => team.name === rest);
    replace(
      body,
      index < 0
        ? h(
          "p",
          { role: "status" },
          `No team is named "${rest}" now (a team deleted since is no longer listed; the audit trail keeps its changes).`,
        )
        : teamSection(teams.data[index], index),
      all,
    );
    return;
  }
  if (teams.data.length === 0) {
    replace(
      body,
      h(
        "div",
        { class: "empty-state" },
        h("p", {}, "There are no teams."),
        h(
          "p",
          { class: "note" },
          "Teams are defined under ",
          h("code", {}, "teams:"),
          " in the config file or made through the admin API (",
          h("code", {}, "POST /admin/teams"),
          "); a token joins one with ",
          h("code", {}, "team:"),
          ".",
        ),
      ),
    );
    return;
  }
  replace(body, teams.data.map(teamSection));
};

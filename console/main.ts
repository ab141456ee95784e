/// <reference lib="dom" />
/**
 * The console's entry point: the login page, the navigation, and the hash router that shows one view at a
 * time. Every view reads only the admin API, with the admin token kept in this tab's session.
 *
 * @module
 */
import { request, setUnauthorizedHandler, storedToken, storeToken } from "./api.ts";
import { alertBox, field, h, replace } from "./dom.ts";
import { parseRoute } from "./query.ts";
import { messageOf, type View } from "./views/common.ts";
import { alertsView } from "./views/alerts.ts";
import { auditView } from "./views/audit.ts";
import { explainView } from "./views/explain.ts";
import { overviewView } from "./views/overview.ts";
import { policyView } from "./views/policy.ts";
import { requestsView } from "./views/requests.ts";
import { stateView } from "./views/state.ts";
import { teamsView } from "./views/teams.ts";
import { tokenPageView } from "./views/token_page.ts";
import { tokensView } from "./views/tokens.ts";

const NAV: readonly [string, string][] = [
  ["overview", "Overview"],
  ["policy", "Policy"],
  ["requests", "Requests"],
  ["state", "Live state"],
  ["tokens", "Tokens"],
  ["teams", "Teams"],
  ["audit", "Audit"],
  ["alerts", "Alerts"],
  ["explain", "Explain"],
];

const VIEWS: Record<string, View> = {
  overview: overviewView,
  policy: policyView,
  requests: requestsView,
  state: stateView,
  tokens: (root, rest, params) =>
    rest === "" ? tokensView(root, rest, params) : tokenPageView(root, rest, params),
  teams: teamsView,
  audit: auditView,
  alerts: alertsView,
  explain: explainView,
};

const app = document.getElementById("app") as HTMLElement;

/** The login page: nothing else is shown until the admin API accepts the token. */
function showLogin(message?: string): void {
  document.title = "Sign in · Gateway console";
  const input = h("input", {
    type: "password",
    name: "token",
    autocomplete: "off",
    required: true,
    spellcheck: "false",
  });
  const error = h("div", { class: "login-error" }, message === undefined ? null : alertBox(message));
  const button = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    { class: "login" },
    h("h1", {}, "Gateway console"),
    h("p", {}, "Sign in with an admin token (admin_tokens in the gateway's config)."),
    field("Admin token", input),
    button,
    error,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = input.value.trim();
    if (token === "") return;
    button.disabled = true;
    replace(error);
    try {
      await request("GET", "/admin/config", undefined, token);
      storeToken(token);
      // Without firing hashchange: showShell renders the view once.
      if (parseRoute(location.hash).view === "") history.replaceState(null, "", "#/overview");
      showShell();
    } catch (err) {
      replace(error, alertBox(messageOf(err)));
      button.disabled = false;
      input.focus();
    }
  });
  replace(app, h("main", { class: "login-page" }, form));
  input.focus();
}

let main: HTMLElement | null = null;

/** The navigation and the current view. */
function showShell(): void {
  const signOut = h("button", { type: "button", class: "secondary" }, "Sign out");
  signOut.addEventListener("click", () => {
    storeToken(null);
    main = null;
    showLogin();
  });
  const nav = h(
    "nav",
    { "aria-label": "Console" },
    h(
      "ul",
      {},
      NAV.map(([view, label]) => h("li", {}, h("a", { href: `#/${view}`, "data-view": view }, label))),
    ),
  );
  main = h("main", { id: "main", tabindex: -1 });
  const current = main;
  // Not a hash link: the hash is the router's.
  const skip = h("a", { class: "skip", href: "#main" }, "Skip to content");
  skip.addEventListener("click", (event) => {
    event.preventDefault();
    (current.querySelector<HTMLElement>("h1") ?? current).focus();
  });
  replace(
    app,
    skip,
    h("header", { class: "top" }, h("span", { class: "brand" }, "Gateway console"), nav, signOut),
    main,
  );
  shown = null;
  render(false);
}

/** The view on screen, so that new filters within it keep the page until the new one is ready. */
let shown: { view: string; rest: string } | null = null;
/** Bumped by every render: an older render that finishes late leaves the page and the focus alone. */
let generation = 0;

/**
 * Shows the view of the current hash. Another view replaces the page at once (with its loading state); the
 * same view with other filters is built aside and swapped in when ready, so tables never flash empty. Focus
 * goes back to the control that had it (same name), else to the view's heading.
 */
function render(moveFocus = true): void {
  if (main === null || storedToken() === null) return;
  const route = parseRoute(location.hash);
  const view = VIEWS[route.view];
  if (view === undefined) {
    location.replace("#/overview");
    return;
  }
  for (const a of document.querySelectorAll<HTMLAnchorElement>("nav a[data-view]")) {
    if (a.dataset.view === route.view) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const label = NAV.find(([id]) => id === route.view)?.[1] ?? "";
  document.title = `${label} · Gateway console`;
  const root = h("div", { class: "view" });
  const page = main;
  const sameView = shown !== null && shown.view === route.view && shown.rest === route.rest &&
    page.firstChild !== null;
  shown = { view: route.view, rest: route.rest };
  const current = ++generation;
  const focusName = document.activeElement?.getAttribute("name") ?? null;
  if (sameView) page.setAttribute("aria-busy", "true");
  else replace(page, root);
  view(root, route.rest, route.params)
    .catch((err) => root.appendChild(alertBox(messageOf(err))))
    .finally(() => {
      if (current !== generation || main !== page) return;
      if (sameView) {
        page.removeAttribute("aria-busy");
        replace(page, root);
      }
      if (!moveFocus) return;
      const again = focusName === null
        ? null
        : root.querySelector<HTMLElement>(`[name="${CSS.escape(focusName)}"]`);
      (again ?? root.querySelector<HTMLElement>("h1"))?.focus({ preventScroll: true });
    });
}

setUnauthorizedHandler(() => {
  if (storedToken() === null) return;
  storeToken(null);
  main = null;
  shown = null;
  showLogin("The admin token was refused (401). Sign in again.");
});

globalThis.addEventListener("hashchange", () => render());

if (storedToken() === null) showLogin();
else showShell();

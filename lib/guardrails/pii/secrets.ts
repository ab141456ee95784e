/**
 * Credentials shaped by their issuer: API keys and tokens with a documented prefix, one recognizer per type.
 *
 * Each is a prefix and a run of the issuer's alphabet, standing on its own (no character of that alphabet just
 * before or after it), with a confidence rule on the body where the prefix alone is not distinctive:
 *
 * - OPENAI_API_KEY: `sk-`, optionally `proj-`, `svcacct-` or `admin-`, then 20+ characters of `[A-Za-z0-9_-]`
 *   that {@link looksRandom} (a digit and both cases). Not `sk-ant-…`, which is Anthropic's.
 * - ANTHROPIC_API_KEY: `sk-ant-<kind><2 digits>-` (`api03`, `admin01`) then 20+ random-looking characters.
 * - GOOGLE_API_KEY: `AIza` and exactly 35 of `[0-9A-Za-z_-]`, random-looking.
 * - AWS_ACCESS_KEY_ID: `AKIA`, `ASIA`, `ABIA` or `ACCA` and exactly 16 of `[A-Z2-7]` (base32, upper case).
 * - AWS_SECRET_ACCESS_KEY: see {@link awsSecret}; it has no prefix, so it needs more.
 * - GITHUB_TOKEN: `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` and 36+ base62 characters, or `github_pat_` and 50+
 *   of `[A-Za-z0-9_]`, random-looking.
 * - SLACK_TOKEN: `xoxa-`, `xoxb-`, `xoxp-`, `xoxo-`, `xoxr-`, `xoxs-` and 20+ of `[A-Za-z0-9-]` with a digit and
 *   a further dash (Slack's tokens are dash-separated numeric ids and a random tail).
 *
 * Cost: every pattern is a literal prefix and one run of a single character class, matched greedily with no
 * alternative to backtrack into; a failed candidate resumes after its run.
 *
 * @module
 */

import type { Finding, Recognizer } from "../types.ts";
import { isLower, looksRandom } from "./scan.ts";

/** A recognizer from one global pattern and a check on each match. */
function patternRecognizer(type: string, pattern: RegExp, check: (match: string) => boolean): Recognizer {
  return {
    type,
    find(text: string): Finding[] {
      const out: Finding[] = [];
      const re = new RegExp(pattern.source, "g");
      for (let m = re.exec(text); m !== null; m = re.exec(text)) {
        if (check(m[0])) out.push({ type, start: m.index, end: m.index + m[0].length });
      }
      return out;
    },
  };
}

const OPENAI_PREFIX = /^sk-(?:proj-|svcacct-|admin-)?/;

/** The OPENAI_API_KEY recognizer. */
export const openaiKey: Recognizer = patternRecognizer(
  "OPENAI_API_KEY",
  /(?<![A-Za-z0-9_-])sk-(?!ant-)[A-Za-z0-9_-]{20,}/,
  (m) => {
    const body = m.slice(m.match(OPENAI_PREFIX)?.[0].length ?? 3);
    return body.length >= 20 && looksRandom(body);
  },
);

/** The ANTHROPIC_API_KEY recognizer. */
export const anthropicKey: Recognizer = patternRecognizer(
  "ANTHROPIC_API_KEY",
  /(?<![A-Za-z0-9_-])sk-ant-[a-z]{1,16}[0-9]{2}-[A-Za-z0-9_-]{20,}/,
  (m) => looksRandom(m.slice(m.indexOf("-", 7) + 1)),
);

/** The GOOGLE_API_KEY recognizer. */
export const googleKey: Recognizer = patternRecognizer(
  "GOOGLE_API_KEY",
  /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/,
  (m) => looksRandom(m.slice(4)),
);

/** The AWS_ACCESS_KEY_ID recognizer. */
export const awsAccessKeyId: Recognizer = patternRecognizer(
  "AWS_ACCESS_KEY_ID",
  /(?<![A-Za-z0-9_])(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?![A-Za-z0-9_])/,
  () => true,
);

/** The GITHUB_TOKEN recognizer. */
export const githubToken: Recognizer = patternRecognizer(
  "GITHUB_TOKEN",
  /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,})(?![A-Za-z0-9_])/,
  (m) => m.length <= 255 && looksRandom(m.slice(m.startsWith("github_pat_") ? 11 : 4)),
);

/** The SLACK_TOKEN recognizer. */
export const slackToken: Recognizer = patternRecognizer(
  "SLACK_TOKEN",
  /(?<![A-Za-z0-9_-])xox[abposr]-[A-Za-z0-9-]{20,}/,
  (m) => /[0-9]/.test(m) && m.indexOf("-", 5) !== -1,
);

/** Names an AWS secret key goes by in configs, environments, CLIs and SDK output. */
const AWS_SECRET_CONTEXT = /aws_?secret|secret_?access_?key|secretaccesskey|secret-access-key/i;
const AWS_KEY_ID = /(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}/;
/** How far before (a name or an id) or after (an id) a secret its context may stand. */
const CONTEXT_WINDOW = 200;
const AWS_SECRET_RUN = /[A-Za-z0-9/+]+/g;

/**
 * Whether the 40 characters could be a random base64 secret: a digit and both cases, no run of 8 lower-case
 * letters, at most 3 slashes, not starting with one.
 */
function randomBase64(s: string): boolean {
  if (!looksRandom(s)) return false;
  let slashes = 0, lowerRun = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 47) slashes++;
    lowerRun = isLower(c) ? lowerRun + 1 : 0;
    if (lowerRun >= 8 || slashes > 3) return false;
  }
  return s[0] !== "/"; // an absolute path
}

/** Whether `s` mixes at least two of: upper case, lower case, digits (enough once its name stands near it). */
function mixed(s: string): boolean {
  return [/[A-Z]/, /[a-z]/, /[0-9]/].filter((re) => re.test(s)).length >= 2;
}

const BASE64_LINE = /^[A-Za-z0-9+/=]{60,}$/;

/** Whether the 40 characters are the last line of a base64 body (PEM, MIME): the line before is a long one. */
function inBase64Block(text: string, start: number, end: number): boolean {
  if (text[start - 1] === "\n") {
    const prev = text.slice(Math.max(0, start - 78), start - 1);
    if (BASE64_LINE.test(prev.slice(prev.lastIndexOf("\n") + 1))) return true;
  }
  if (text[end] === "\n") {
    const next = text.slice(end + 1, end + 78);
    const line = next.indexOf("\n") === -1 ? next : next.slice(0, next.indexOf("\n"));
    if (BASE64_LINE.test(line)) return true;
  }
  return false;
}

/**
 * AWS_SECRET_ACCESS_KEY: exactly 40 characters of `[A-Za-z0-9/+]`, with no base64 padding or `-`/`_` glued to
 * it (a piece of a longer blob), that look random (a digit, both cases, no 8 lower-case letters in a row, at
 * most 3 slashes: paths are excluded), and either hold a `/` or `+` (random base64 of 40 characters does about
 * seven times in ten; hex digests, base62 ids and words never) or stand within 200 characters of what names
 * them: `aws_secret_access_key`, `SecretAccessKey`, `AWS_SECRET…`, or an access key id (before or after, as the
 * two are pasted together).
 */
function awsSecret(text: string): Finding[] {
  const out: Finding[] = [];
  const re = new RegExp(AWS_SECRET_RUN.source, "g");
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const s = m[0], start = m.index, end = start + s.length;
    if (s.length !== 40 || !mixed(s)) continue;
    const before = text[start - 1], after = text[end];
    if (before === "-" || before === "_" || after === "-" || after === "_" || after === "=") continue;
    if (inBase64Block(text, start, end)) continue;
    const slashOrPlus = s.includes("/") || s.includes("+");
    const near = () => {
      const left = text.slice(Math.max(0, start - CONTEXT_WINDOW), start);
      const right = text.slice(end, end + CONTEXT_WINDOW);
      return AWS_SECRET_CONTEXT.test(left) || AWS_KEY_ID.test(left) || AWS_KEY_ID.test(right);
    };
    if ((slashOrPlus && randomBase64(s)) || (near() && !/[a-z]{12}/.test(s))) {
      out.push({ type: "AWS_SECRET_ACCESS_KEY", start, end });
    }
  }
  return out;
}

/** The AWS_SECRET_ACCESS_KEY recognizer. */
export const awsSecretAccessKey: Recognizer = { type: "AWS_SECRET_ACCESS_KEY", find: awsSecret };

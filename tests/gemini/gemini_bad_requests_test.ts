/**
 * Client mistakes on Google's Gemini API routes (`/v1beta/models…`), as a table run in-process against the fetch
 * handler and again over a real socket: each gets its status and Google's exact error shape
 * (`{"error":{"code","message","status"}}`), never a 5xx, never an upstream call, and exactly one usage record
 * (endpoint `gemini`). Then a seeded, bounded fast-check property over a socket: random JSON bodies and random
 * mutations of a valid `generateContent` body never get a 5xx, and get either a 200 or Google's error shape.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseConfigText } from "../../lib/config/load.ts";
import type { GatewayState } from "../../lib/http/context.ts";
import { createMemoryLogger } from "../../lib/log.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { createGateway } from "../../lib/server.ts";
import { type RawBody, requestInit, STACK_LINE } from "../helpers/bad_cases.ts";
import { FAKE_GEMINI_KEY, type FakeGemini, startFakeGemini } from "../helpers/fake_gemini.ts";
import { FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { startFakes } from "../helpers/fakes.ts";
import { damageArb, damaged, junk } from "../helpers/fuzz_requests.ts";
import { NARROW_TOKEN, startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

/** The body limit the table runs under, so an oversized body stays small. */
const LIMIT = 1000;
const WRONG_TOKEN = "gw-wrong-token-ffffffffffffffffffff";
const encoder = new TextEncoder();

const configFor = (openai: FakeUpstream, gemini: FakeGemini) => `
server: { host: 127.0.0.1, port: 0, max_body_size: 1kb }
providers:
  up: { type: openai, base_url: "${openai.baseURL}", api_key: "${FAKE_KEY}" }
  gem: { type: gemini, base_url: "${gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
models:
  chat-gpt: { type: chat, targets: [ { provider: up, model: gpt-ok } ] }
  gemini-ok: { type: chat, targets: [ { provider: gem, model: gem-ok } ] }
${TEST_TOKENS_YAML}`;

const USER = [{ role: "user", parts: [{ text: "hi" }] }];
const body = (extra: Record<string, unknown>) => JSON.stringify({ contents: USER, ...extra });
const big = body({ labels: { pad: "x".repeat(LIMIT + 200) } });


/**
 * One request's spans: the server span (HTTP server conventions), the gateway's own span under it (alias,
 * token, client API, policy outcome, cache, attempts), the GenAI span of the logical call (`chat gpt-4o`,
 * kind CLIENT, GenAI conventions) and an HTTP client span per upstream attempt under that, so retries and
 * fallbacks show. Parents are passed explicitly (no context manager): the request's context object carries
 * its trace.
 *
 * Everything but the attempts' outcomes is set when the request is reported (`end`), from its access record:
 * for a stream that is after its last chunk was forwarded, so the spans cover the whole answer. A stream cut by
 * the client or the upstream ends its spans with status ERROR and `error.type` naming which. Attribute values
 * that come from outside (error codes, captured text) pass the secret scrubber of the config the request
 * started with, as its errors and records do: a reload while it runs leaves the secrets it was sent with masked.
 *
 * @module
 */
import {
  type Context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapPropagator,
  trace,
  type Tracer,
} from "@opentelemetry/api";
import { CLIENT_ENDED_CODES } from "../errors.ts";
import type { ChatRequest } from "../openai/types.ts";
import { GATEWAY } from "./semconv.ts";
import { calledAttributes, type SpanOfAttempt } from "./attempt_http.ts";
import type { semconvNames } from "./semconv.ts";
import type { ClientRequest } from "../runtime/types.ts";
import { type CapturedMessage, type CapturedPart, inputMessages } from "./captured_content.ts";
import type { SaidTexts } from "../openai/said_fields.ts";

/**
 * What the spans read of a request's access record when it is over (the record's own fields; declared here so
 * telemetry does not depend on the request plumbing that carries it).
 */
export interface TracedRecord {
  status?: number;
  error_code?: string | null;
  provider?: string;
  upstream_model?: string;
  prompt_tokens?: number;
  completion_tokens?: number;
  ttft_ms?: number;
  latency_ms?: number;
  alias?: string;
  token?: string;
  environment?: string;
  endpoint?: string;
  outcome?: string;
  rule?: string | null;
  cache?: string;
  attempts?: number;
  stream?: boolean;
  dropped?: string;
}

/** A request's GenAI call: its operation (`chat`, `embeddings`) and the alias it called. */
export interface GenAiCall {
  operation: string;
  alias: string;
}

/** Masks a config's secrets in text bound for a span or a metric (the config's `Scrubber`). */
export type SpanScrubber = { scrub(text: string): string };

/** What every request's trace shares. */
export interface TelemetryCore {
  readonly tracer: Tracer;
  readonly propagator: TextMapPropagator;
  readonly names: ReturnType<typeof semconvNames>;
  readonly captureContent: boolean;
  /** Captured messages as the attribute's JSON: scrubbed by `scrubber`, cut to the size limit (captured_content.ts). */
  content(messages: readonly CapturedMessage[], scrubber: SpanScrubber): string;
  /**
   * The GenAI metrics of a request that made a GenAI call (`call`: its operation and alias);
   * `genAiProvider`: the answering upstream's `gen_ai.provider.name`; `scrubber`: the request's.
   */
  recordMetrics(
    call: GenAiCall,
    record: TracedRecord,
    responseModel: string | undefined,
    genAiProvider: string | undefined,
    scrubber: SpanScrubber,
  ): void;
}

/** The most characters of an answer's id or model a span keeps (real ones are far shorter). */
export const MAX_FACT = 256;
/** The most finish reasons a span keeps (one per choice), and characters of each. */
export const MAX_FINISH_REASONS = 16;
export const MAX_FINISH_REASON = 64;

/**
 * `text` cut to `max` UTF-16 units, on a code point boundary. The scrubber runs on what is kept (at `end`):
 * a secret within it is masked, and so is what is left of one cut at the end when the scrubber knows it as a
 * run of that secret (secrets/scrubber.ts).
 */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = text.charCodeAt(max - 1) >= 0xd800 && text.charCodeAt(max - 1) <= 0xdbff ? max - 1 : max;
  return text.slice(0, end);
}

/** What routing tells the trace about the target of an attempt. */
export interface AttemptTarget {
  /** The provider entry's name in config. */
  provider: string;
  /** Its upstream as the GenAI conventions name it (`openai`, `aws.bedrock`, …). */
  genAiProvider: string;
  model: string;
  /** The upstream's host, for `server.address`. */
  host?: string;
}

const setter = { set: (carrier: Record<string, string>, key: string, value: string) => carrier[key] = value };
const getter = {
  get: (carrier: Headers, key: string) => carrier.get(key) ?? undefined,
  keys: (carrier: Headers) => [...carrier.keys()],
};

/** The spans of one request. */
export class RequestTrace {
  readonly traceId: string;
  readonly #core: TelemetryCore;
  /** The scrubber of the config the request started with. */
  readonly #scrubber: SpanScrubber;
  readonly #method: string;
  readonly #server: Span;
  readonly #gateway: Span;
  #call: Span | undefined;
  #callOf: GenAiCall | undefined;
  /** The attempt that answered: open until the answer ends (a stream's last chunk). */
  #answering: Span | undefined;
  /** The `gen_ai.provider.name` of the last attempt, the one the access record names when all failed. */
  #attemptedVendor: string | undefined;
  #facts: { id?: string; model?: string; finishReasons?: string[]; cached?: number; reasoning?: number } = {};

  constructor(core: TelemetryCore, request: ClientRequest, requestId: string, scrubber: SpanScrubber) {
    this.#core = core;
    this.#scrubber = scrubber;
    this.#method = request.method;
    const parent = core.propagator.extract(ROOT_CONTEXT, request.headers, getter);
    const names = core.names;
    this.#server = core.tracer.startSpan(request.method, {
      kind: SpanKind.SERVER,
      attributes: { [names.httpMethod]: request.method, [names.urlPath]: new URL(request.url).pathname },
    }, parent);
    this.#gateway = core.tracer.startSpan("gateway", {
      kind: SpanKind.INTERNAL,
      attributes: { [GATEWAY.requestId]: requestId },
    }, this.#under(this.#server));
    this.traceId = this.#server.spanContext().traceId;
  }

  #under(span: Span): Context {
    return trace.setSpan(ROOT_CONTEXT, span);
  }

  /** Whether this request's trace is sampled (exported). */
  get sampled(): boolean {
    return (this.#server.spanContext().traceFlags & 1) === 1;
  }

  /** Starts the GenAI span of the request's call to `alias` (once; a second call is ignored). */
  startCall(operation: string, alias: string, chat?: ChatRequest): void {
    if (this.#call !== undefined) return;
    const names = this.#core.names;
    const attributes: Record<string, string | number> = {
      [names.operation]: operation,
      [names.requestModel]: alias,
    };
    const max = chat?.max_completion_tokens ?? chat?.max_tokens;
    if (typeof max === "number") attributes[names.maxTokens] = max;
    if (typeof chat?.temperature === "number") attributes[names.temperature] = chat.temperature;
    if (typeof chat?.top_p === "number") attributes[names.topP] = chat.top_p;
    this.#callOf = { operation, alias };
    this.#call = this.#core.tracer.startSpan(
      `${operation} ${alias}`,
      { kind: SpanKind.CLIENT, attributes },
      this.#under(this.#gateway),
    );
    if (chat !== undefined && this.#core.captureContent && this.sampled) {
      this.#call.setAttribute(names.inputMessages, this.#core.content(inputMessages(chat), this.#scrubber));
    }
  }

  /**
   * Runs one upstream attempt under its own HTTP client span, giving `run` the W3C trace-context headers to
   * send upstream: the span's `traceparent`, and the `tracestate` the caller sent (carried by every span of
   * the trace), so the upstream continues the caller's trace with the vendors' state in it; and `answered`,
   * which puts the URL called and the status answered on the span, as the HTTP client conventions ask (a
   * 429 or a 503 is what an operator looks for in a failed attempt).
   * A failed attempt's span ends at once with its error; the one that answers stays open until the answer ends.
   */
  async attempt<T>(
    target: AttemptTarget,
    run: (attempt: SpanOfAttempt) => Promise<T>,
  ): Promise<T> {
    const names = this.#core.names;
    const attributes: Record<string, string> = {
      [names.httpMethod]: "POST",
      [names.provider]: target.genAiProvider,
      [GATEWAY.provider]: target.provider,
    };
    if (target.host !== undefined) attributes[names.serverAddress] = target.host;
    const span = this.#core.tracer.startSpan(
      "POST",
      { kind: SpanKind.CLIENT, attributes },
      this.#under(this.#call ?? this.#gateway),
    );
    this.#attemptedVendor = target.genAiProvider;
    const carrier: Record<string, string> = {};
    this.#core.propagator.inject(this.#under(span), carrier, setter);
    const answered = (url: string, status: number) =>
      span.setAttributes(calledAttributes(names, url, status, this.#scrubber));
    try {
      const value = await run({ headers: carrier, answered });
      this.#answering?.end();
      this.#answering = span;
      return value;
    } catch (err) {
      const code = errorCode(err);
      span.setAttribute(names.errorType, this.#scrubber.scrub(code));
      span.setAttribute(GATEWAY.attemptOutcome, this.#scrubber.scrub(code));
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      throw err;
    }
  }

  /**
   * What the answer said of itself: its id, the model that made it, why it ended, and of its usage the cached
   * input and reasoning output tokens (the chat form's `prompt_tokens_details` / `completion_tokens_details`,
   * or `tokens` as an answer passed through in its own wire format reports them).
   */
  noteResponse(facts: {
    id?: unknown;
    model?: unknown;
    finishReasons?: unknown[];
    usage?: unknown;
    tokens?: { cachedRead?: number; reasoning?: number };
  }): void {
    // The upstream's words, of any length it likes: cut here, so a span (and its queue) never holds more.
    if (typeof facts.id === "string" && this.#facts.id === undefined) {
      this.#facts.id = cut(facts.id, MAX_FACT);
    }
    if (typeof facts.model === "string") this.#facts.model = cut(facts.model, MAX_FACT);
    const reasons = facts.finishReasons?.filter((r): r is string => typeof r === "string");
    if (reasons !== undefined && reasons.length > 0) {
      this.#facts.finishReasons = reasons.slice(0, MAX_FINISH_REASONS).map((r) => cut(r, MAX_FINISH_REASON));
    }
    const usage = facts.usage as
      | {
        prompt_tokens_details?: { cached_tokens?: unknown };
        completion_tokens_details?: { reasoning_tokens?: unknown };
      }
      | undefined;
    const cached = usage?.prompt_tokens_details?.cached_tokens ?? facts.tokens?.cachedRead;
    const reasoning = usage?.completion_tokens_details?.reasoning_tokens ?? facts.tokens?.reasoning;
    if (typeof cached === "number") this.#facts.cached = cached;
    if (typeof reasoning === "number") this.#facts.reasoning = reasoning;
  }

  /** Whether the answer's text is captured (capture on, the trace sampled, a GenAI call started). */
  get capturing(): boolean {
    return this.#call !== undefined && this.#core.captureContent && this.sampled;
  }

  /**
   * The answer's text, when content capture is on: one `text` part, then, when the model wrote some, a
   * `reasoning` part with its reasoning (the GenAI conventions' part types for output messages). The answer comes
   * first, though the model wrote it last: the attribute is cut at `max_content_size` in part order, and a long
   * reasoning must not push the answer out of it.
   */
  captureOutput(said: SaidTexts): void {
    if (this.#call === undefined || !this.#core.captureContent || !this.sampled) return;
    const parts: CapturedPart[] = [{ type: "text", content: said.text.join("") }];
    if (said.reasoning.length > 0) parts.push({ type: "reasoning", content: said.reasoning.join("") });
    const message = [{ role: "assistant", parts }];
    this.#call.setAttribute(this.#core.names.outputMessages, this.#core.content(message, this.#scrubber));
  }

  /**
   * Ends every span of the request from its access record (`route`: the endpoint's path template;
   * `answeredBy`: the `gen_ai.provider.name` of the upstream that answered, or whose cached answer it was) at
   * `endedAt` (`performance.now()`: a stream's last chunk, which may be well before its tokens were counted).
   */
  end(
    record: TracedRecord,
    route: string | undefined,
    answeredBy?: string,
    endedAt = performance.now(),
  ): void {
    const names = this.#core.names;
    const genAiProvider = answeredBy ?? this.#attemptedVendor;
    const failed = record.error_code !== undefined && record.error_code !== null;
    const errorType = failed ? this.#scrubber.scrub(String(record.error_code)) : undefined;
    const status = record.status ?? 0;
    if (this.#call !== undefined) {
      const call = this.#call;
      if (genAiProvider !== undefined) call.setAttribute(names.provider, genAiProvider);
      if (record.provider !== undefined) call.setAttribute(GATEWAY.provider, record.provider);
      const model = this.#facts.model ?? record.upstream_model;
      // The id, the model and the finish reasons are the upstream's words: an upstream may quote a key in any.
      const scrubber = this.#scrubber;
      if (model !== undefined) call.setAttribute(names.responseModel, scrubber.scrub(model));
      if (this.#facts.id !== undefined) call.setAttribute(names.responseId, scrubber.scrub(this.#facts.id));
      if (this.#facts.finishReasons) {
        call.setAttribute(names.finishReasons, this.#facts.finishReasons.map((r) => scrubber.scrub(r)));
      }
      if (record.prompt_tokens !== undefined) call.setAttribute(names.inputTokens, record.prompt_tokens);
      if (record.completion_tokens !== undefined) {
        call.setAttribute(names.outputTokens, record.completion_tokens);
      }
      if (this.#facts.cached !== undefined) call.setAttribute(names.cachedInputTokens, this.#facts.cached);
      if (this.#facts.reasoning !== undefined) {
        call.setAttribute(names.reasoningOutputTokens, this.#facts.reasoning);
      }
      if (record.ttft_ms !== undefined && record.latency_ms !== undefined) {
        const at = endedAt - Math.max(0, record.latency_ms - record.ttft_ms);
        call.setAttribute(names.timeToFirstChunk, record.ttft_ms / 1000);
        call.addEvent(names.firstChunkEvent, { [names.timeToFirstChunk]: record.ttft_ms / 1000 }, at);
      }
      if (failed || status >= 400) {
        call.setAttribute(names.errorType, errorType ?? String(status));
        call.setStatus({ code: SpanStatusCode.ERROR });
      }
    }
    const denied = record.outcome === "deny"; // A withheld answer is no failure of the attempt that answered.
    if (failed && !denied && this.#answering !== undefined) {
      this.#answering.setAttribute(names.errorType, errorType!);
      this.#answering.setStatus({ code: SpanStatusCode.ERROR });
    }
    const gateway = this.#gateway;
    const put = (name: string, value: string | number | boolean | undefined | null) => {
      if (value !== undefined && value !== null) gateway.setAttribute(name, value);
    };
    put(GATEWAY.alias, record.alias);
    put(GATEWAY.token, record.token);
    put(GATEWAY.environment, record.environment);
    put(GATEWAY.clientApi, record.endpoint);
    put(GATEWAY.outcome, record.outcome);
    put(GATEWAY.rule, record.rule);
    put(GATEWAY.cache, record.cache);
    put(GATEWAY.attempts, record.attempts);
    put(GATEWAY.stream, record.stream);
    put(GATEWAY.dropped, record.dropped);
    const server = this.#server;
    if (route !== undefined) {
      server.updateName(`${this.#method} ${route}`);
      server.setAttribute(names.httpRoute, route);
    }
    server.setAttribute(names.httpStatus, status);
    if (serverFailed(status, errorType, denied)) {
      server.setAttribute(names.errorType, errorType ?? String(status));
      server.setStatus({ code: SpanStatusCode.ERROR });
      gateway.setStatus({ code: SpanStatusCode.ERROR });
    }
    this.#answering?.end(endedAt);
    this.#call?.end(endedAt);
    gateway.end(endedAt);
    server.end(endedAt);
    // Only a GenAI call is a GenAI operation: a token count, or a request refused before its call, is none.
    if (this.#callOf !== undefined) {
      this.#core.recordMetrics(this.#callOf, record, this.#facts.model, genAiProvider, this.#scrubber);
    }
  }
}

/**
 * Whether the gateway, as the server, failed the request: a 5xx, or an answer that began (below 400) and then
 * ended in an error, such as an upstream cutting its stream. The HTTP conventions leave a SERVER span's status
 * unset on a 4xx (the client's mistake, a denial: the server did its job), and a client going away
 * (`client_closed_request`, 499 or a cut 200), or its WebSocket closed for what it did, is the caller's doing,
 * which the conventions do not count as an error either; the GenAI span, whose answer it cut short, says so.
 * A denial is a 400's job done, also when it ends a stream (an output guardrail withholding it after its 200).
 */
function serverFailed(status: number, errorType: string | undefined, denied: boolean): boolean {
  if (status >= 500) return true;
  return errorType !== undefined && status < 400 && !denied && !CLIENT_ENDED_CODES.has(errorType);
}

function errorCode(err: unknown): string {
  if (typeof err === "object" && err !== null) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === "string" && code !== "") return code;
    const status = (err as { status?: unknown }).status;
    if (typeof status === "number") return String(status);
  }
  return "_OTHER";
}

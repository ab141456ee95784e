/**
 * `POST /v1beta/models/{alias}:embedContent` and `:batchEmbedContents` (Google's Gemini API) over any
 * embedding alias: each content's text parts, joined, are one input of the gateway's embeddings request
 * (`outputDimensionality` → `dimensions`, validated as Google reads it, each request's own: a batch whose
 * requests ask for different ones is one call per dimensionality, all on the target routing picked; `taskType`
 * and `title` are Google's to apply: a Gemini target gets each request's (a title as the policy left it), any
 * other goes without them, named in `x-gateway-dropped`), routed like `/v1/embeddings`, and answered as
 * `{"embedding": {"values"}}` or `{"embeddings": [{"values"}, …]}`. The call is admitted as an embeddings
 * request (the token's `embeddings` scope, the content rules and input guardrails on its input, and on each
 * `title` when the alias has a Gemini target, the one that reads it) and recorded under the endpoint `gemini`.
 * The body is read as Google reads it, proto field names included (normalize.ts).
 *
 * @module
 */
import { type ClientTerms, GatewayError, inClientTerms, invalidRequest } from "../../errors.ts";
import { admit, type Answer, noteOutcome, type TokenUsage } from "../../http/accounting.ts";
import { type ClientContext, upstreamCall } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import { embeddingServingTargets, noteDropped } from "../../http/tolerance.ts";
import { geminiAlias } from "./alias.ts";
import { bad } from "./fields.ts";
import { normalizeGemini } from "./normalize.ts";
import { routeRequest } from "../../http/route_request.ts";
import { EmbeddingSpend } from "../../http/embedding_spend.ts";
import { jsonResponse } from "../../answer/json_response.ts";
import { type EmbeddingRequest, isObject, type JsonObject } from "../../openai/types.ts";
import { countTokens, roughTokenEstimate } from "../../usage/estimate.ts";
import type { EmbeddedPart, EmbeddingResult } from "../../providers/types.ts";
import { speaksNatively } from "../../providers/capabilities.ts";
import type { ResolvedTarget } from "../../config/types.ts";
import type { ClientRequest } from "../../runtime/types.ts";
import { stringSlot, type TextSlot } from "../../policy/text_slots.ts";

/** At most this many contents in one batch (Google's own limit). */
const MAX_BATCH = 100;

/**
 * The fields of an embed request only a Gemini target reads (Google's to apply), carried to it as sent; a `title`
 * as the content rules and input guardrails left it ({@linkcode titleSlots}).
 */
const GOOGLE_ONLY = ["taskType", "title"];

/**
 * An embed request's {@linkcode GOOGLE_ONLY} fields, each named in `native` (with `path`) for another target. A
 * `title` is text the model reads, judged by the content rules and guardrails: a string, as Google takes it, else
 * Google's 400 naming it (a number or an object would reach the model unread by them).
 */
function googleFields(request: JsonObject, path: string, native: string[]): JsonObject {
  const fields: JsonObject = {};
  for (const key of GOOGLE_ONLY) {
    if (request[key] == null) continue;
    const at = path === "" ? key : `${path}.${key}`;
    if (key === "title" && typeof request[key] !== "string") throw bad(at, "expected a string.");
    fields[key] = request[key];
    native.push(at);
  }
  return fields;
}

/**
 * The `title`s of `fields` (each request's Google fields, by position) as texts the policy reads and rewrites in
 * place (`PolicyRequest.carriedTexts`), each at its request's `path`: what a Gemini target is sent is then the
 * title as the content rules redacted it and the guardrails masked it, as its content is.
 */
function titleSlots(fields: readonly JsonObject[], path: (i: number) => string): TextSlot[] {
  return fields.flatMap((own, i) => {
    const slot = stringSlot(own, "title", path(i) === "" ? "title" : `${path(i)}.title`);
    return slot === undefined ? [] : [slot];
  });
}

/** One embed request's text. */
function contentText(request: JsonObject, path: string): string {
  const content = request.content;
  if (!isObject(content) || !Array.isArray(content.parts)) {
    throw invalidRequest(
      `Invalid value at '${path}.content': expected a content with parts.`,
      `${path}.content`,
    );
  }
  const texts = content.parts.map((part, i) => {
    if (!isObject(part) || typeof part.text !== "string") {
      throw invalidRequest(
        `Invalid value at '${path}.content.parts[${i}]': only text parts can be embedded here.`,
        `${path}.content.parts[${i}]`,
      );
    }
    return part.text;
  });
  return texts.join("\n");
}

/** Google's `outputDimensionality` is an int32: a larger value is none of the field's. */
const INT32_MAX = 2_147_483_647;

/**
 * A request's `outputDimensionality` as Google reads it (proto3 JSON: an integer, or one written as a string):
 * undefined when absent or null; anything but a positive integer is Google's 400 naming `path`, before any
 * target sees it (an OpenAI-compatible upstream would get a negative value as sent, a string would be lost).
 */
function dimensionsOf(value: unknown, path: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  const n = typeof value === "number"
    ? value
    : typeof value === "string" && /^\d+$/.test(value)
    ? Number(value)
    : NaN;
  if (!Number.isInteger(n) || n < 1 || n > INT32_MAX) throw bad(path, "expected a positive integer.");
  return n;
}

/**
 * A target's refusal of `dimensions` in the Gemini client's terms: the field it sent, at `path` (Google's error
 * shape has no `param`, so the message names it).
 */
function dimensionsTerms(path: string): ClientTerms {
  return (err) => {
    if (err.status !== 400 || err.param !== "dimensions") return undefined;
    const message = err.message.replace(/(['`])dimensions\1/g, `'${path}'`);
    return {
      param: path,
      message: message.includes(`'${path}'`) ? message : `Invalid value at '${path}': ${message}`,
    };
  };
}

/** The requests asking for one `outputDimensionality` (undefined: the model's own): one embeddings call. */
interface Group {
  dimensions: number | undefined;
  /** The positions of its requests in the client's list, in order. */
  at: number[];
  /** Its refusals in the client's terms: the first of its requests' `outputDimensionality`. */
  terms: ClientTerms;
}

/**
 * The requests' positions grouped by the dimensionality each asks for, in order of first appearance: Google's
 * `requests[i]` each carry their own, and an embeddings request has one `dimensions`, so each value is a call.
 */
function byDimensions(dimensions: readonly (number | undefined)[], path: (i: number) => string): Group[] {
  const groups = new Map<number | undefined, Group>();
  dimensions.forEach((value, i) => {
    const group = groups.get(value) ?? { dimensions: value, at: [], terms: dimensionsTerms(path(i)) };
    group.at.push(i);
    groups.set(value, group);
  });
  return [...groups.values()];
}

/** The embeddings request of `group`: its inputs, from `input` (as the policy left them), and its dimensions. */
function groupRequest(alias: string, input: readonly string[], group: Group): EmbeddingRequest {
  const embed: EmbeddingRequest = { model: alias, input: group.at.map((i) => input[i]) };
  if (group.dimensions !== undefined) embed.dimensions = group.dimensions;
  return embed;
}

/**
 * The texts a call of `group` had a model read: its inputs (from `input`, as the policy left them), then the
 * string `title` of each of its requests' `own` fields, when the call carried them (a Gemini target's).
 */
function textsOf(group: Group, input: readonly string[], own: readonly JsonObject[] | undefined): string[] {
  const texts = group.at.map((i) => input[i]);
  if (own === undefined) return texts;
  for (const i of group.at) {
    const title = own[i]?.title;
    if (typeof title === "string") texts.push(title);
  }
  return texts;
}

/** Handles `:embedContent` (`batch` false) and `:batchEmbedContents` for an authenticated identity. */
export async function geminiEmbed(
  request: ClientRequest,
  ctx: ClientContext,
  alias: string,
  batch: boolean,
): Promise<Answer> {
  const sent = await readJsonBody(request, ctx.state.config.server, ctx.signal);
  const body = normalizeGemini(sent, batch ? "BatchEmbedContentsRequest" : "EmbedContentRequest");
  const native: string[] = [];
  let requests: JsonObject[];
  if (batch) {
    if (!Array.isArray(body.requests) || body.requests.length === 0 || body.requests.length > MAX_BATCH) {
      throw invalidRequest(`Invalid value at 'requests': expected 1 to ${MAX_BATCH} requests.`, "requests");
    }
    requests = body.requests.map((r, i) => {
      if (!isObject(r)) {
        throw invalidRequest(`Invalid value at 'requests[${i}]': expected an object.`, "requests");
      }
      return r;
    });
  } else requests = [body];
  const at = (i: number) => batch ? `requests[${i}]` : "";
  const input = requests.map((r, i) => contentText(r, at(i)));
  const fields = requests.map((r, i) => googleFields(r, at(i), native));
  const path = (i: number) => batch ? `requests[${i}].outputDimensionality` : "outputDimensionality";
  const groups = byDimensions(requests.map((r, i) => dimensionsOf(r.outputDimensionality, path(i))), path);
  // The whole input is admitted at once (the content rules may rewrite it in place, before any call reads it);
  // one dimensionality asked of all is the request's, as `/v1/embeddings` would carry it.
  const embed: EmbeddingRequest & { input: string[] } = { model: alias, input };
  if (groups.length === 1 && groups[0].dimensions !== undefined) embed.dimensions = groups[0].dimensions;
  // Only the targets that can serve every group: one target answers them all, so the client request has one
  // route and one usage record.
  const model = groups.reduce((kept, group) => {
    try {
      return embeddingServingTargets(kept, groupRequest(alias, input, group));
    } catch (err) {
      throw inClientTerms(err, group.terms);
    }
  }, geminiAlias(ctx, alias, ROUTES.embeddings.modelType, batch ? "batchEmbedContents" : "embedContent"));
  const isGemini = (target: ResolvedTarget) => speaksNatively(target, "gemini");
  // The titles a Gemini target would read are judged, and counted, with the input; an alias without one never
  // sends them anywhere.
  const titles = model.targets.some(isGemini) ? titleSlots(fields, at) : [];
  const estimate = roughTokenEstimate([...input, ...titles.map((slot) => slot.text)]);
  await admit(ctx, ROUTES.embeddings.endpoint, estimate, model, embed, undefined, titles);
  // The calls a failed attempt had answered (an earlier group's, a batch's) were billed: they join the record.
  const spend = new EmbeddingSpend();
  const carried = native.length > 0 ? fields : undefined;
  const { value: results, headers, target: answered } = await routeRequest(
    ctx,
    model,
    ctx.signal,
    (target, provider) =>
      spend.attempt(target, async (onEmbedded) => {
        // One call after another on the attempt's target: a failed call fails the attempt, which routing may
        // retry whole on another target. A Gemini target gets Google's own fields too, beside the request
        // (`EmbeddingCall.geminiFields`), where no client's body reaches.
        const own = isGemini(target) ? carried : undefined;
        const answers: EmbeddingResult[] = [];
        for (const group of groups) {
          const request = groups.length === 1 ? embed : groupRequest(alias, embed.input, group);
          const geminiFields = own === undefined ? undefined : group.at.map((i) => own[i]);
          let told = false;
          const tell = (part: EmbeddedPart) => {
            told = true;
            onEmbedded(part);
          };
          try {
            const answer = await provider.embed(request, {
              ...upstreamCall(ctx, target),
              onEmbedded: tell,
              geminiFields,
            });
            // A provider that makes one call per request (OpenAI-compatible) tells nothing: the group is its call.
            if (!told) {
              onEmbedded({ texts: textsOf(group, embed.input, own), tokens: answer.usage.prompt_tokens });
            }
            answers.push(answer);
          } catch (err) {
            throw inClientTerms(err, group.terms);
          }
        }
        return answers;
      }),
  ).catch(async (err) => {
    await spend.noteFailure(ctx);
    throw err;
  });
  const spentBefore = await spend.spent();
  // Each call's tokens as it reported them, else counted (the titles a Gemini target read too): the sum is the
  // client request's.
  const read = isGemini(answered) ? carried : undefined;
  const counted = await Promise.all(results.map(async (result, g) => {
    const reported = result.usage.prompt_tokens;
    if (reported > 0) return { prompt: reported, estimated: false };
    return { prompt: await countTokens(textsOf(groups[g], embed.input, read), ctx.signal), estimated: true };
  }));
  const usage: TokenUsage = {
    prompt: counted.reduce((sum, c) => sum + c.prompt, 0),
    completion: 0,
    estimated: counted.some((c) => c.estimated),
  };
  const vectors: { values: number[] }[] = new Array(input.length);
  results.forEach((result, g) => {
    [...result.data].sort((a, b) => a.index - b.index).forEach((item, j) => {
      if (typeof item.embedding === "string") {
        // Refused, but the upstream answered: its usage is the request's, recorded and charged.
        noteOutcome(ctx, { usage, spentBefore });
        throw new GatewayError(502, "The upstream answered base64 embeddings.");
      }
      vectors[groups[g].at[j]] = { values: item.embedding };
    });
  });
  // A Gemini target got every field as sent; any other went without Google's own.
  noteDropped(ctx, headers, { refusal: null, native: isGemini(answered) ? [] : native, dropped: [] });
  const payload = batch ? { embeddings: vectors } : { embedding: vectors[0] };
  return { response: jsonResponse(JSON.stringify(payload), headers), outcome: { usage, spentBefore } };
}

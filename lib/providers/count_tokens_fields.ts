/**
 * The Messages API's parameters of the generation rather than of its input (`max_tokens`, `stream`, sampling,
 * stop sequences, metadata, service tier): Anthropic's counting endpoint refuses them ("Extra inputs are not
 * permitted"). One list for the client API that refuses them on `/v1/messages/count_tokens` as Anthropic does
 * and for the provider that leaves them out of the count it sends.
 *
 * @module
 */
export const MESSAGES_GENERATION_PARAMS: readonly string[] = [
  "max_tokens",
  "stream",
  "stop_sequences",
  "temperature",
  "top_p",
  "top_k",
  "metadata",
  "service_tier",
];

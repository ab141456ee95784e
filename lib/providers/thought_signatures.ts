/**
 * The thought signature Google documents for a function call the model did not make itself (a call another
 * vendor made, or one whose signature was lost), which tells Gemini to skip the check: Gemini 3 refuses a model
 * turn whose first function call comes back without a signature ("Function call is missing a
 * thought_signature"). Here, apart from the Gemini provider's folder, because two paths give it: the
 * translation to a Gemini target (gemini/contents.ts), where only a call the gateway minted from a Gemini
 * answer carries one (`signatureFromToolCallId`), and a Gemini client's body passed through to one
 * (api/gemini/native.ts), whose history a non-Gemini target of the alias may have answered.
 * https://ai.google.dev/gemini-api/docs/thought-signatures
 *
 * @module
 */
export const FOREIGN_CALL_SIGNATURE = "skip_thought_signature_validator";

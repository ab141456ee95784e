/**
 * The error a policy denial is thrown as: an ordinary {@linkcode GatewayError} (so the server answers it in
 * OpenAI's shape like any other) that also names the rule that denied, for the usage record.
 *
 * @module
 */
import { GatewayError, type GatewayErrorInit } from "../errors.ts";

/** A request the policy refused; `rule` is e.g. `token.rpm` or `alias.content:pii`. */
export class PolicyDenied extends GatewayError {
  readonly rule: string;

  constructor(status: number, message: string, rule: string, init: GatewayErrorInit = {}) {
    super(status, message, init);
    this.name = "PolicyDenied";
    this.rule = rule;
  }

  /** A renamed or masked denial is still a denial, by the same rule (the usage record names it). */
  override remade(message: string, init: GatewayErrorInit): PolicyDenied {
    return new PolicyDenied(this.status, message, this.rule, init);
  }
}

/**
 * The 400 for token-id embeddings input on an alias whose content rules or input guardrails read its input
 * (`by` says which, `rule` names the first for the record): the gateway cannot judge ids, and passing them
 * unread would let any text past a deny rule by tokenizing it first.
 */
export function tokenInputUnreadable(rule: string, by: string): PolicyDenied {
  return new PolicyDenied(
    400,
    `The input is token ids, which ${by} cannot read: send it as text.`,
    rule,
    { type: "invalid_request_error", code: "token_input_not_checkable", param: "input" },
  );
}

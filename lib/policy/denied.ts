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

  /** A renamed denial is still a denial, by the same rule (the usage record names it). */
  override withParam(param: string, message: string): PolicyDenied {
    return new PolicyDenied(this.status, message, this.rule, this.initWith(param));
  }
}

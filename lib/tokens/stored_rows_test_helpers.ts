/**
 * Stored rows for the token directory's tests: a token, a team and the audit entry of a token's creation, each
 * with a fresh id, so a test spells out only the fields it is about.
 */
import { hashToken } from "../auth/authenticate.ts";
import type { AuditEntry, StoredTeam, StoredToken } from "./types.ts";

let seq = 0;
const nextHex = () => (++seq).toString(16).padStart(24, "0");
const TIME = "2026-11-24T09:00:00.000Z";

/** A stored token named `name`, allowed `chat-*`, whose one secret is `secret-of-<name>`. */
export function storedToken(name: string, fields: Partial<StoredToken> = {}): StoredToken {
  return {
    id: `tok_${nextHex()}`,
    name,
    environment: "test",
    description: null,
    models: ["chat-*"],
    endpoints: null,
    limits: null,
    budget: null,
    max_tokens: null,
    cache: null,
    expires_at: null,
    disabled: false,
    created_at: TIME,
    updated_at: TIME,
    created_by: "ops",
    revoked_at: null,
    rotated_at: null,
    secrets: [{ sha256: hashToken(`secret-of-${name}`), expires_at: null }],
    ...fields,
  };
}

/** A stored team named `name`, without limits, budget or models of its own. */
export function storedTeam(name: string, fields: Partial<StoredTeam> = {}): StoredTeam {
  return {
    id: `tm_${nextHex()}`,
    name,
    description: null,
    budget: null,
    limits: null,
    models: null,
    created_at: TIME,
    updated_at: TIME,
    created_by: "ops",
    deleted_at: null,
    ...fields,
  };
}

/** The audit entry of `token`'s creation, as a store write carries one. */
export function creationAudit(token: StoredToken): AuditEntry {
  return {
    id: `aud_${nextHex()}`,
    time: new Date().toISOString(),
    actor: "ops",
    action: "create",
    token_id: token.id,
    token_name: token.name,
    changes: {},
  };
}

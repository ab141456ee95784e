/**
 * The config's `pricing:` section. Its own module, depending on zod alone, so the config schema can import it
 * without importing the catalog (which imports the config's issue wording, which imports the config schema:
 * a cycle that would leave `configSchema` uninitialised when `issue_messages.ts` reads it).
 *
 * @module
 */
import { z } from "zod";

/** `pricing: { catalog: <path> }`: a catalog file of the `catalog.yaml` format, used instead of the built-in. */
export const pricingSchema = z.strictObject({
  catalog: z.string().min(1).optional(),
});

/** The `pricing:` section as validated. */
export type PricingConfig = z.output<typeof pricingSchema>;

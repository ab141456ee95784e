/**
 * The shipped `config/gateway.yaml`, compiled into the program as text. A single binary (`bun build
 * --compile`, `deno compile`) has no `config/` directory beside it, yet `gateway serve` with no config file
 * must still serve the keyless default; this copy is what it serves then.
 *
 * @module
 */
import text from "../../config/gateway.yaml" with { type: "text" };

/** The text of `config/gateway.yaml` as it was when the program was built. */
export const DEFAULT_CONFIG_TEXT: string = text;

/** The config source name of the embedded copy, in messages and the `listening` log line. */
export const EMBEDDED_CONFIG_SOURCE = "<default>";

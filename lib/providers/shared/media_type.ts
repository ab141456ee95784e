/**
 * The media type of a client's `data:` URL as the vendors take it.
 *
 * @module
 */

/**
 * `type` (a `data:` URL's media type) lowercased, with `image/jpg` as the registered `image/jpeg`. Clients write
 * `image/jpg` for .jpg files, and OpenAI takes it; Anthropic takes only `image/jpeg`, `image/png`, `image/gif`
 * and `image/webp`, and Gemini refuses it ("Unsupported MIME type: image/jpg"), so sent as written the image's
 * whole request would fail for a name of the same bytes. Media types are case-insensitive (RFC 2045), the
 * vendors' lists are lowercase.
 */
export function vendorMediaType(type: string): string {
  const lower = type.toLowerCase();
  return lower === "image/jpg" ? "image/jpeg" : lower;
}

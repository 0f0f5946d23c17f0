/**
 * Strict UTF-8 for mock fields that hold text when they can: the text of bytes that are valid
 * UTF-8, else undefined. A leading byte-order mark is kept (TextDecoder drops it by default), so the
 * text always gives back exactly these bytes.
 */
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function exactUtf8(bytes: Uint8Array): string | undefined {
  try {
    return decoder.decode(bytes);
  } catch {
    return undefined;
  }
}

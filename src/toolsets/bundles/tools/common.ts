import { z } from 'zod';
import { withText } from '../../../mcp/tools.js';

/** A path argument of the file tools. */
export const bundlePath = z.string().describe('A path inside the bundle, from its root: "/", "/cluster-resources/pods"');

/** The contract's text goes to the text content; the rest is the structured result. */
export function split<T extends { text: string }>(result: T): Omit<T, 'text'> {
  const { text, ...rest } = result;
  return withText(rest, text);
}

/**
 * The collection style (`[a, b]` flow or block) each parsed array or object had in its file, so
 * serializing what was parsed writes the same style. Objects built in code are not in here; the
 * serializer then uses Keploy's defaults (the `flow` YAML tags of its Go structs).
 */
const styles = new WeakMap<object, 'flow' | 'block'>();

export function markStyle<T extends object>(value: T, flow: boolean | undefined): T {
  styles.set(value, flow ? 'flow' : 'block');
  return value;
}

export function collectionStyle(value: object): 'flow' | 'block' | undefined {
  return styles.get(value);
}

import { describe, expect, it } from 'vitest';
import { BudgetShares, DescriptorBudget } from './fd-budget.js';

describe('BudgetShares', () => {
  it('one key holds at most its share across its takes; another key still finds the rest', () => {
    const shares = new BudgetShares(new DescriptorBudget(16));
    expect([shares.perKey, shares.reserve, shares.small]).toEqual([8, 4, 2]);
    const a = Array.from({ length: 10 }, () => shares.take('a'));
    expect(a).toEqual([...Array<undefined>(8).fill(undefined), 'key', 'key']);
    expect(shares.held('a')).toBe(8);
    // b takes while more than the reserve is free; then only keys holding at most `small` may.
    const b = Array.from({ length: 6 }, () => shares.take('b'));
    expect(b).toEqual([undefined, undefined, undefined, undefined, 'reserve', 'reserve']);
    expect(shares.held('b')).toBe(4);
    expect(shares.whole.held).toBe(12);
  });

  // Attack 18v Q2: two keys at their shares held the whole, and a third key's replays were refused.
  it('two keys at their shares leave a reserve that a third key, holding little, still finds', () => {
    const shares = new BudgetShares(new DescriptorBudget(16));
    for (const key of ['a', 'b']) while (shares.take(key) === undefined);
    expect(shares.held('a') + shares.held('b')).toBe(12);
    expect([shares.take('c'), shares.take('c'), shares.take('c')]).toEqual([undefined, undefined, 'reserve']);
    expect([shares.take('d'), shares.take('d'), shares.take('e')]).toEqual([undefined, undefined, 'whole']);
    expect(shares.held('e')).toBe(0);
  });

  it('the whole refuses once full, and a refused take holds nothing of the share either', () => {
    const shares = new BudgetShares(new DescriptorBudget(16), 3 / 4);
    for (let i = 0; i < 12; i++) expect(shares.take('a')).toBeUndefined();
    expect([shares.take('b'), shares.take('b'), shares.take('c'), shares.take('c')]).toEqual([undefined, undefined, undefined, undefined]);
    expect(shares.take('d')).toBe('whole');
    expect(shares.held('d')).toBe(0);
    shares.give('a');
    expect(shares.take('d')).toBeUndefined();
    expect(shares.held('d')).toBe(1);
  });

  it('no key (the local user) may take the whole; giving back frees both counts and forgets an empty key', () => {
    const shares = new BudgetShares(new DescriptorBudget(4));
    for (let i = 0; i < 4; i++) expect(shares.take(undefined)).toBeUndefined();
    expect(shares.take(undefined)).toBe('whole');
    expect(shares.take('a')).toBe('whole');
    for (let i = 0; i < 4; i++) shares.give(undefined);
    expect(shares.take('a')).toBeUndefined();
    shares.give('a');
    expect([shares.held('a'), shares.whole.held]).toEqual([0, 0]);
    expect(() => new BudgetShares(new DescriptorBudget(4), 0)).toThrow(/a key's share is a fraction above 0 and at most 1/);
  });
});

import { describe, expect, it } from 'vitest';
import { BudgetShares, DescriptorBudget } from './fd-budget.js';

describe('BudgetShares', () => {
  it('one key holds at most its share across its takes; another key still finds the rest', () => {
    const shares = new BudgetShares(new DescriptorBudget(10));
    expect(shares.perKey).toBe(5);
    const a = Array.from({ length: 8 }, () => shares.take('a'));
    expect(a).toEqual([undefined, undefined, undefined, undefined, undefined, 'key', 'key', 'key']);
    expect(shares.held('a')).toBe(5);
    const b = Array.from({ length: 6 }, () => shares.take('b'));
    expect(b).toEqual([undefined, undefined, undefined, undefined, undefined, 'key']);
    expect(shares.whole.held).toBe(10);
  });

  it('the whole refuses once full, and a refused take holds nothing of the share either', () => {
    const shares = new BudgetShares(new DescriptorBudget(4), 3 / 4);
    expect([shares.take('a'), shares.take('a'), shares.take('b'), shares.take('b')]).toEqual([undefined, undefined, undefined, undefined]);
    expect(shares.take('c')).toBe('whole');
    expect(shares.held('c')).toBe(0);
    shares.give('a');
    expect(shares.take('c')).toBeUndefined();
    expect(shares.held('c')).toBe(1);
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

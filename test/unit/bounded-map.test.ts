import { expect, it } from 'vitest';
import { BoundedMap } from '../../platform/bounded-map.ts';

it('drops the least recently used entry when a new key would pass the bound', () => {
  const m = new BoundedMap<string, number>(3);
  m.set('a', 1).set('b', 2).set('c', 3);
  expect(m.get('a')).toBe(1); // used: now the most recent
  m.set('d', 4);
  expect([...m]).toEqual([
    ['c', 3],
    ['a', 1],
    ['d', 4],
  ]);
  m.set('c', 30); // written: the most recent, nothing dropped
  m.set('e', 5);
  expect([...m]).toEqual([
    ['d', 4],
    ['c', 30],
    ['e', 5],
  ]);
  expect(m.get('zzz')).toBeUndefined();
  expect(m.size).toBe(3);
});

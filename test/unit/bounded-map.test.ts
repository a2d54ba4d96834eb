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

it('keeps the order of use when the same key is read again and again, or deleted and written back', () => {
  const m = new BoundedMap<string, number>(3);
  m.set('a', 1).set('b', 2).set('c', 3);
  m.get('a');
  m.get('b');
  m.get('b');
  m.get('a'); // read after another key: the most recent again
  expect([...m.keys()]).toEqual(['c', 'b', 'a']);
  m.delete('a');
  m.set('d', 4);
  m.set('a', 10); // written back after its deletion: the most recent
  expect([...m.keys()]).toEqual(['b', 'd', 'a']);
  m.get('b');
  m.set('e', 5); // drops d, the least recently used
  expect([...m.keys()]).toEqual(['a', 'b', 'e']);
  m.get('b');
  m.set('f', 6); // drops a
  m.get('b'); // read after a write of another key: the most recent again
  expect([...m.keys()]).toEqual(['e', 'f', 'b']);
});

import { expect, it } from 'vitest';
import { encodeTime, newId } from '../../platform/ids.ts';

const ID = /^em_[0-9a-hjkmnp-tv-z]{26}$/;

it('orders ids made in one millisecond as they were made, each distinct, the time in front', () => {
  const at = Date.now() + 60_000; // later than any id made before in this process
  const ids = Array.from({ length: 1000 }, () => newId('em', at));
  expect(new Set(ids).size).toBe(1000);
  expect([...ids].sort()).toEqual(ids);
  for (const id of ids) {
    expect(id).toMatch(ID);
    expect(id.slice(3, 13)).toBe(encodeTime(at));
  }
});

it('draws fresh random digits for each new millisecond, past a refill of the pool they come from', () => {
  const start = Date.now() + 120_000;
  // 600 milliseconds of 16 digits each: more than the 4 KiB the digits are drawn from at a time.
  const ids = Array.from({ length: 600 }, (_, i) => newId('em', start + i));
  const randomParts = new Set(ids.map((id) => id.slice(13)));
  expect(randomParts.size).toBe(600);
  expect([...ids].sort()).toEqual(ids);
  for (const id of ids) expect(id).toMatch(ID);
  // All 32 digits turn up (9,600 draws): the parts are not stuck on a few values.
  expect(new Set([...randomParts].join('')).size).toBe(32);
});

it("sorts an id asked for at an earlier time after the last one made, at that one's time", () => {
  const late = Date.now() + 180_000;
  const first = newId('em', late);
  const second = newId('em', late - 5_000);
  expect(second > first).toBe(true);
  expect(second.slice(3, 13)).toBe(encodeTime(late));
});

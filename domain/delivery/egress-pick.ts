/**
 * The order in which a message tries a pool's sources: drawn by weight, one after the other without
 * replacement, so that over many messages each source takes its weight's share of those it has room for, and a
 * source at its cap passes its share to the others. `random` gives numbers in [0, 1).
 */
export function weightedOrder<T extends { weight: number }>(items: readonly T[], random: () => number): T[] {
  const left = [...items];
  const order: T[] = [];
  while (left.length > 0) {
    const total = left.reduce((sum, s) => sum + s.weight, 0);
    let draw = random() * total;
    let at = left.length - 1;
    for (let i = 0; i < left.length; i++) {
      draw -= left[i].weight;
      if (draw < 0) {
        at = i;
        break;
      }
    }
    order.push(...left.splice(at, 1));
  }
  return order;
}

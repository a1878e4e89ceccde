import { randomFillSync } from 'node:crypto';

/** Fisher–Yates of `items[from..to)`, an array's or a typed array's, with crypto randomness (trend ids must not be guessable). */
export function shuffle(items: { length: number; [i: number]: unknown }, from = 0, to = items.length): void {
  const random = new Uint32Array(to - from);
  randomFillSync(random);
  for (let i = to - from - 1; i > 0; i--) {
    const j = random[i] % (i + 1);
    const t = items[from + i];
    items[from + i] = items[from + j];
    items[from + j] = t;
  }
}

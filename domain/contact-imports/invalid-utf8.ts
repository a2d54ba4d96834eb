/**
 * Finds the bytes of a file that are not UTF-8 as they go by, so that a row holding one is reported rather than
 * read with U+FFFD in its place: `scan` each chunk in order, `end` after the last, then ask `within(start, end)`
 * for byte ranges in increasing order (the offsets passed are dropped). A sequence is invalid where Unicode's
 * table of well-formed UTF-8 says so (stray continuation bytes, overlong forms, surrogates, past U+10FFFF, cut
 * short); its offset is its first byte. A file that opens with UTF-16LE's byte order mark (FF FE) is read as
 * UTF-16 (contact-import.csv.ts) and nothing of it is reported here.
 */
export class InvalidUtf8 {
  #offsets: number[] = [];
  #head = 0;
  #at = 0;
  /** The sequence under way: where it began, continuation bytes still due, and the range of the next one. */
  #start = 0;
  #due = 0;
  #low = 0x80;
  #high = 0xbf;
  /** The file's first two bytes, to tell a UTF-16LE one by its mark. */
  readonly #opening: number[] = [];

  scan(chunk: Buffer): void {
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      const offset = this.#at + i;
      if (offset < 2) this.#opening.push(b);
      if (this.#due > 0) {
        if (b >= this.#low && b <= this.#high) {
          this.#due--;
          this.#low = 0x80;
          this.#high = 0xbf;
          continue;
        }
        // Cut short: the sequence is invalid, and this byte begins afresh.
        this.#offsets.push(this.#start);
        this.#due = 0;
      }
      if (b < 0x80) continue;
      this.#start = offset;
      this.#low = 0x80;
      this.#high = 0xbf;
      if (b >= 0xc2 && b <= 0xdf) this.#due = 1;
      else if (b >= 0xe0 && b <= 0xef) {
        this.#due = 2;
        if (b === 0xe0) this.#low = 0xa0; // overlong
        if (b === 0xed) this.#high = 0x9f; // surrogates
      } else if (b >= 0xf0 && b <= 0xf4) {
        this.#due = 3;
        if (b === 0xf0) this.#low = 0x90; // overlong
        if (b === 0xf4) this.#high = 0x8f; // past U+10FFFF
      } else this.#offsets.push(offset);
    }
    this.#at += chunk.length;
  }

  end(): void {
    if (this.#due > 0) this.#offsets.push(this.#start);
    this.#due = 0;
  }

  /** Whether an invalid sequence begins in the bytes [start, end). */
  within(start: number, end: number): boolean {
    if (this.#opening[0] === 0xff && this.#opening[1] === 0xfe) return false;
    while (this.#head < this.#offsets.length && this.#offsets[this.#head] < start) this.#head++;
    if (this.#head > 4096) {
      this.#offsets = this.#offsets.slice(this.#head);
      this.#head = 0;
    }
    return this.#head < this.#offsets.length && this.#offsets[this.#head] < end;
  }
}

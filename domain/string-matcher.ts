/**
 * Finds every occurrence of a fixed set of strings in one pass over a text (an Aho-Corasick automaton over UTF-16
 * code units), built once. Its cost is linear in the text whatever the number of strings, unlike an alternation
 * regex, which tries the strings at each position.
 */
export class Matcher {
  /** Children by code unit, per node; node 0 is the root. */
  private readonly next: Array<Map<number, number>> = [new Map()];
  private readonly fail: number[] = [0];
  /** Length of the longest string that ends at this node (directly or through its fail chain); 0 when none. */
  private readonly longest: number[] = [0];

  /** `caseless`: ASCII letters match in either case (strings and text are folded to lower case). */
  constructor(
    strings: readonly string[],
    private readonly caseless: boolean,
  ) {
    for (const s of strings) {
      if (s.length === 0) continue;
      let node = 0;
      for (let i = 0; i < s.length; i++) {
        const c = this.unit(s, i);
        let child = this.next[node]!.get(c);
        if (child === undefined) {
          child = this.next.length;
          this.next.push(new Map());
          this.fail.push(0);
          this.longest.push(0);
          this.next[node]!.set(c, child);
        }
        node = child;
      }
      this.longest[node] = Math.max(this.longest[node]!, s.length);
    }
    // Breadth first: a node's fail link points to a shallower node, whose own link is already known.
    const queue: number[] = [...this.next[0]!.values()];
    for (let q = 0; q < queue.length; q++) {
      const node = queue[q]!;
      for (const [c, child] of this.next[node]!) {
        let f = this.fail[node]!;
        while (f !== 0 && !this.next[f]!.has(c)) f = this.fail[f]!;
        const target = this.next[f]!.get(c);
        this.fail[child] = target !== undefined && target !== child ? target : 0;
        this.longest[child] = Math.max(this.longest[child]!, this.longest[this.fail[child]!]!);
        queue.push(child);
      }
    }
  }

  get empty(): boolean {
    return this.next[0]!.size === 0;
  }

  private unit(s: string, i: number): number {
    const c = s.charCodeAt(i);
    return this.caseless && c >= 65 && c <= 90 ? c + 32 : c;
  }

  /**
   * [start, end) of the longest match ending at each position where one ends. A shorter match ending at the same
   * position lies inside the longest one, so these spans cover every occurrence.
   */
  spans(text: string): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    let node = 0;
    for (let i = 0; i < text.length; i++) {
      const c = this.unit(text, i);
      let child = this.next[node]!.get(c);
      while (child === undefined && node !== 0) {
        node = this.fail[node]!;
        child = this.next[node]!.get(c);
      }
      node = child ?? 0;
      const len = this.longest[node]!;
      if (len > 0) out.push([i + 1 - len, i + 1]);
    }
    return out;
  }
}

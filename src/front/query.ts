// Query-string access for handlers (front thread): a parameter given twice is 400 (NOTES 5), unknown
// parameters are ignored (docs/decisions.md). Integer parsing names the parameter in its error.
import { errors } from '../errors.js';

export class Query {
  /** The query of a request without one: shared, since an empty query never parses anything. */
  static readonly empty = new Query('');
  private params: URLSearchParams | null = null;

  constructor(private readonly raw: string) {}

  /** The single value of name, or undefined; 400 when given more than once. */
  get(name: string): string | undefined {
    if (this.raw === '') return undefined;
    this.params ??= new URLSearchParams(this.raw);
    const values = this.params.getAll(name);
    if (values.length > 1) throw errors.givenTwice(name);
    return values[0];
  }

  has(name: string): boolean {
    if (this.raw === '') return false;
    this.params ??= new URLSearchParams(this.raw);
    return this.params.has(name);
  }

  /** An integer from min to max, or undefined when absent. */
  integer(name: string, min: number, max: number, rule?: string): number | undefined {
    const text = this.get(name);
    if (text === undefined) return undefined;
    const value = /^-?\d+$/.test(text) ? Number(text) : NaN;
    // '-0' is not how any integer is written (it would pass as 0 below).
    if (!Number.isSafeInteger(value) || Object.is(value, -0) || value < min || value > max) {
      throw errors.invalid(name, rule ?? `must be an integer from ${min} to ${max}`);
    }
    return value;
  }
}

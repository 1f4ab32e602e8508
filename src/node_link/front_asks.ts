// What the node-link thread asks its own front for another node: this node's member report (GET
// /v1/cluster/members?detail=true on another node), which only the front can make (its in-flight produces, ingress
// log and lifecycle). Node-link thread only; node_link_thread.ts builds it and feeds it the front's answers,
// data_server.ts asks through it.
import type { MemberReportView } from '../protocol/data_messages.js';
import type { FromNodeLink, ToNodeLink } from '../protocol/thread_messages.js';

/** The asking node gives up after 2 s (spec §4 members detail); an ask unanswered past this is dropped. */
const frontAnswerMs = 2_000;

interface Waiting {
  resolve: (report: MemberReportView) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

export class FrontAsks {
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting>();

  constructor(private readonly post: (message: FromNodeLink) => void) {}

  memberReport(): Promise<MemberReportView> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.settle(id, null), frontAnswerMs);
      this.waiting.set(id, { resolve, reject, timer });
      this.post({ kind: 'memberReportAsk', id });
    });
  }

  onAnswer(message: Extract<ToNodeLink, { kind: 'memberReport' }>): void {
    this.settle(message.id, message.report);
  }

  /** Every ask still open fails: the thread is closing. */
  close(): void {
    for (const id of [...this.waiting.keys()]) this.settle(id, null);
  }

  private settle(id: number, report: MemberReportView | null): void {
    const waiting = this.waiting.get(id);
    if (waiting === undefined) return;
    this.waiting.delete(id);
    clearTimeout(waiting.timer);
    if (report === null) waiting.reject(new Error('this node\'s front has no member report to give'));
    else waiting.resolve(report);
  }
}

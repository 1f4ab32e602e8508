// The durable ack state of one partition (frontier and acked set), kept as the cursor "ack" of the partition's
// cursor log (cursor_log.ts), which also reads the acks.log a directory written before cursor logs holds. Runs on
// the partition worker thread that owns the partition; partition_cursor_logs.ts opens the cursor log and closes it,
// partition_read_path.ts writes the ack state through it.
import { ackCursorDecode, ackCursorEncode, ackCursorName, type CursorStore } from './cursor_log.js';
import type { AckState } from '../core/lease_table.js';

/** The lowest unacked offset and the offsets acked above it, strictly ascending (the lease table's shape). */
export type { AckState };

/** A partition's ack state as found at start, and the log its read path writes the next one to. */
export interface RestoredAcks {
  log: AckLog;
  state: AckState | null;
}

export class AckLog {
  private constructor(
    /** The partition's cursor log: other cursors of the partition are written through it too. */
    readonly cursors: CursorStore,
  ) {}

  /** The ack state kept in cursors (a memory cursor log in the simulation); where names them in errors. */
  static over(cursors: CursorStore, where: string): RestoredAcks {
    const cursor = cursors.get(ackCursorName);
    const state = cursor === null ? null : ackCursorDecode(cursor, `${where} cursor ${ackCursorName}`);
    return { log: new AckLog(cursors), state };
  }

  /** Writes the ack state and fdatasyncs it; it is durable when this resolves. */
  async write(state: AckState): Promise<void> {
    await this.cursors.write([[ackCursorName, ackCursorEncode(state)]]);
  }
}

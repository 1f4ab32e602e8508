// The replicated metadata as it crosses a boundary: the records (topics, users, members), the commands of the
// metadata log (a proposal from the front, an entry in a Raft message, a 'committed' broadcast to workers) and the
// whole state (the 'snapshot' message to the front and workers). Plain data only. Shared: the metadata state machine
// (src/metadata) applies these; the front, the workers and the metadata thread's shell read them.

/** One topic as the metadata keeps it (spec §2 Topic; wire names are produced in src/front/topic_view.ts). */
export interface TopicRecord {
  name: string;
  /** 16 hex characters; a recreated topic gets a new one, so its files never collide with the old ones. */
  id: string;
  partitions: number;
  retentionMs: number;
  visibilityTimeoutMs: number;
  maxInFlightPerPartition: number;
  maxAckedAheadPerPartition: number;
  createdAtSec: number;
  /** Absent when the topic was created with security off (spec §5: only admins manage it). */
  owner?: string;
  /** Current owner node (member id) of each partition: owners[p] holds and serves partition p now; length ==
   *  partitions. Everything that routes a request or opens a partition's files reads this one. Filled by the
   *  leader's shell (placement.ts fillOwners) before it proposes; a create from the front carries []. */
  owners: number[];
  /** Target owner of each partition: where placement wants partition p (Redpanda's shard_placement_table keeps
   *  target and current apart the same way). Equal to owners until partition moves exist; a move will set the
   *  target first and the current owner once the copy is done. Set by applyCommand (= owners) on create and growth;
   *  never routed on. */
  targetOwners: number[];
  /** Per partition, the offset an empty partition starts at when its files are created: set when a partition of a
   *  member lost for good is given to another (partition.reassign), so its offsets never go back. Absent (or 0 for
   *  a partition) means 0. */
  startOffsets?: number[];
}

/** A topic as topic.create carries it. targetOwners is absent in every entry written so far (the release before
 *  it had no target) and applies as target = current. */
export type TopicCreateRecord = Omit<TopicRecord, 'targetOwners'> & { targetOwners?: number[] };

/** A node of the cluster as the metadata keeps it. Liveness, voter and leader flags are not replicated state:
 *  the shell keeps them. */
export interface MemberRecord {
  /** The node id; owners in TopicRecord name it. A positive integer. */
  id: number;
  /** "host:port" of the node's HTTP API. */
  apiAddress: string;
  /** "host:port" of the node-to-node transport. */
  internalAddress: string;
  /** When the member was first added; an upsert of a known member keeps it. */
  addedAtMs: number;
  /** Present while the member is being decommissioned (spec §3 Node liveness and decommission): it drains, its
   *  partitions move off, and it takes no new partitions. */
  decommission?: DecommissionRecord;
}

export interface DecommissionRecord {
  startedAtMs: number;
  /** The member is lost for good: its partitions are given to live members, starting empty (NOTES 16, issue 41). */
  acceptDataLoss: boolean;
}

/** Why a move was started (shown in GET /v1/cluster/moves). */
export type MoveReason = 'decommission' | 'operator' | 'rebalance';

/** The phase the metadata records for a move; the destination's worker states (spec §3) are finer and live on the
 *  destination. copying: the destination fetches while the source serves; frozen: the source stages nothing more
 *  for the partition (its workers hold such records until the flip or an unfreeze); flipped: owners[p] is the
 *  destination, the source is asked to set its copy aside, then move.finish removes the record. */
export type MovePhase = 'copying' | 'frozen' | 'flipped';

/** One partition move (spec §2 Cluster member, moves). Keyed in MetadataState.moves by moveKey(topicId, partition). */
export interface PartitionMoveRecord {
  topicId: string;
  /** The topic's name when the move started (names never change under an id). */
  topic: string;
  partition: number;
  source: number;
  destination: number;
  startedAtMs: number;
  reason: MoveReason;
  phase: MovePhase;
}

/** The key of a move in MetadataState.moves. */
export function moveKey(topicId: string, partition: number): string {
  return `${topicId}/${partition}`;
}

export type GrantAction = 'produce' | 'consume' | 'create' | 'admin';
export interface Grant {
  action: GrantAction;
  patterns?: string[];
}

export interface UserRecord {
  username: string;
  /** bcrypt hash; never leaves the node in an answer. */
  passwordHash: string;
  /** Moves on every password change, so cached verifications of the old password stop matching. */
  credentialVersion: number;
  grants: Grant[];
  root: boolean;
  createdAtMs: number;
  updatedAtMs: number;
}

/** The replicated state; crosses a port whole in the 'snapshot' message (structured clone keeps the Maps). */
export interface MetadataState {
  /** Keyed by exact name (NOTES 6: names in paths match case-sensitively). */
  topics: Map<string, TopicRecord>;
  /** Lower-cased name -> exact name, for the case-insensitive uniqueness rule at creation. */
  topicNamesLower: Map<string, string>;
  users: Map<string, UserRecord>;
  /** The last credential version handed out. Every user create and password change takes the next one, so
   *  a version never repeats, not even for a user deleted and created again under its name: a credential
   *  cached for the old account can never match the new one (src/front/auth.ts keys on the version). */
  credentialVersionLast: number;
  /** Keyed by member id. Every partition owner is a member (applyCommand refuses others). */
  members: Map<number, MemberRecord>;
  /** Keyed by topic id: each topic's schema history (spec §2 Schema history); absent while it has no schema. */
  schemas: Map<string, SchemaHistory>;
  /** Keyed by parent topic id: the fan-out links of each parent (spec §1.9, §3 Topic role); absent while the topic
   *  has no child. Applied by src/metadata/fanout.ts. */
  fanout: Map<string, FanoutParent>;
  /** Child topic id -> parent topic id: derived from fanout (rebuilt by the snapshot decode, never encoded), so a
   *  produce or a topic view learns a topic's parent without a scan. */
  fanoutParentOf: Map<string, string>;
  /** Partition moves under way, keyed by moveKey(topicId, partition); at most one per partition. Applied by
   *  src/metadata/moves.ts. */
  moves: Map<string, PartitionMoveRecord>;
  // Seam (issue 26): remotes add their map here, applied by its own module under src/metadata and encoded by
  // snapshot.ts.
}

/** A parent's children, in attach order (spec §2 Topic children). Never empty: a parent whose last child detaches
 *  is standalone again (NOTES 7), so its entry goes. */
export interface FanoutParent {
  /** The parent's name (a topic's name never changes under its id), so views need no search by id. */
  parent: string;
  children: FanoutLink[];
}

/** One child's current attachment (spec §2 Topic: attach_epoch, attach_offsets, fanout_delay_ms). */
export interface FanoutLink {
  /** The child's name, kept beside its id like FanoutParent.parent. */
  child: string;
  childId: string;
  /** New on every attach (16 hex characters from the front): copying tells a fresh attachment from an older one. */
  epoch: string;
  /** The parent's committed high watermark per parent partition at the attach: copying starts there. Partitions the
   *  parent gains later are appended with 0 (every record of theirs comes after the attach). */
  attachOffsets: number[];
  /** A delay child's delay; absent for an ordinary child. */
  delayMs?: number;
}

/** The attach part of a create with parent or of POST .../children, as the front proposes it. */
export interface FanoutAttach {
  parent: string;
  parentId: string;
  epoch: string;
  /** The parent's high watermark per partition, asked of the partitions' owners just before proposing. */
  attachOffsets: number[];
  delayMs?: number;
}

/** A topic's schema versions, oldest first: documents[i] is version i + 1, as canonical JSON text (the form that
 *  is compared, counted against the byte budgets and sent back; src/schema/canonical.ts). */
export interface SchemaHistory {
  documents: string[];
  /** UTF-8 bytes of all documents (spec §8: 4 MiB per topic, 256 MiB per cluster). */
  bytes: number;
}

/** A new schema version a PATCH registers (spec §3 Schema version). */
export interface SchemaChange {
  /** Canonical JSON text of the new version. */
  document: string;
  /** The version the front proved the document compatible with; another version current at apply refuses the
   *  change (schemaChangedUnderRequest) so nothing is registered unchecked. */
  checkedAgainst: number;
  /** schema_base_version, when the request gave one: another current version is 409. */
  baseVersion?: number;
}

/** Topic settings a PATCH may change; absent fields keep their value. Applied in spec order. */
export interface TopicChanges {
  retentionMs?: number;
  maxInFlightPerPartition?: number;
  maxAckedAheadPerPartition?: number;
  partitions?: number;
  /** Applied last (spec §4 PATCH: retention, caps, partitions, schema). */
  schema?: SchemaChange;
  /** Owners of the partitions added by a growing `partitions`, filled by the leader's shell (placement.ts
   *  fillOwners): newOwners[i] owns partition (partitions - newOwners.length + i). When another growth was applied
   *  between the placement and this entry, only the tail for the partitions still missing is used. */
  newOwners?: number[];
}

/** Who asked for a metadata write, as the receiving node authenticated them: it travels beside the command (the
 *  front's and a follower's 'propose'), never into the log, so the leader checks the caller again against its own
 *  state before proposing (src/metadata/caller_check.ts callerRefusal). Absent with security off and for the nodes'
 *  own proposals (member records, the root admin's creation). */
export interface ProposalCaller {
  username: string;
  /** The credential version the request was authenticated under: another one on the leader means the account was
   *  deleted (and perhaps created again) or its password changed since. */
  credentialVersion: number;
}

/** A change proposed to the metadata log. Each variant is applied by applyCommand (src/metadata/state.ts). */
export type MetadataCommand =
  /** POST /v1/topics: the front validated fields and filled defaults, id and createdAtSec. With attach (a create with
   *  parent) the topic is created attached, or not at all (spec §4: a failed attach part undoes the create). */
  | { type: 'topic.create'; topic: TopicCreateRecord; schema?: string; attach?: FanoutAttach }
  /** PATCH /v1/topics/{topic}: groups applied one at a time, earlier groups stay on a later failure. */
  | { type: 'topic.update'; name: string; id: string; changes: TopicChanges }
  /** DELETE /v1/topics/{topic}: workers remove the files once they apply it. */
  | { type: 'topic.delete'; name: string; id: string }
  /** First start of a secured node: the root admin; POST /v1/users. The credential version given is replaced
   *  by the next one of the state (credentialVersionLast). */
  | { type: 'user.create'; user: UserRecord }
  /** DELETE /v1/users/{username}: the root admin is never deleted (403); its topics lose their owner (spec §5,
   *  v3.1.0). */
  | { type: 'user.delete'; username: string }
  /** PUT /v1/users/{username}/grants: replaces every grant; the root admin's never change (403). */
  | { type: 'user.grants'; username: string; grants: Grant[]; updatedAtMs: number }
  /** PUT /v1/users/{username}/password: a new hash and the next credential version, so every replica stops
   *  accepting cached verifications of the old password at once. */
  | { type: 'user.password'; username: string; passwordHash: string; updatedAtMs: number }
  /** A node joins or comes back: upsert by id; a known member gets the new addresses and keeps addedAtMs. A node's
   *  shell proposes its own member.add at first start, before anything else, so a one-node cluster has one too. */
  | { type: 'member.add'; member: MemberRecord }
  /** Forget a member: 404 when unknown, 409 while it owns partitions (they must move off first). */
  | { type: 'member.forget'; id: number }
  /** POST /v1/topics/{parent}/children: links an existing topic under a parent (spec §3 attach rules). */
  | { type: 'fanout.attach'; child: string; childId: string; attach: FanoutAttach }
  /** DELETE /v1/topics/{parent}/children/{child}: the child becomes standalone, keeping messages and history. */
  | { type: 'fanout.detach'; parent: string; parentId: string; child: string; childId: string }
  /** POST /v1/cluster/members/{id}/decommission: the member drains and its partitions move off (NOTES 16). */
  | { type: 'member.decommission'; id: number; startedAtMs: number; acceptDataLoss: boolean }
  /** POST .../decommission/cancel: moves not flipped yet are aborted with it (their targets go back). */
  | { type: 'member.decommissionCancel'; id: number }
  /** Moves planned by the leader's controller or asked by an operator: each sets targetOwners[p] = destination. */
  | { type: 'move.start'; moves: PartitionMoveRecord[] }
  /** The destination caught up: the source stages nothing more for the partition (frozen), or again (copying). */
  | { type: 'move.freeze'; topicId: string; partition: number; destination: number; frozen: boolean }
  /** The destination holds the frozen source's every record: owners[p] = destination. */
  | { type: 'move.flip'; topicId: string; partition: number; destination: number }
  /** The source set its copy aside: the move ends. */
  | { type: 'move.finish'; topicId: string; partition: number; destination: number }
  /** A move not yet flipped ends; the partition stays with its source, untouched. */
  | { type: 'move.abort'; topicId: string; partition: number }
  /** A partition of a member lost for good (accept_data_loss) goes to a live member, empty from startOffset. */
  | { type: 'partition.reassign'; topicId: string; partition: number; from: number; to: number; startOffset: number };
// Seam (issue 26): the commands of remotes ('remote.*') join this union, and applyCommand's switch delegates each
// prefix to its module. Schemas ride on topic.create and topic.update; fan-out links are fanout.ts's.

/**
 * In-process consumer group membership. Members of a group split the partitions of the topics they
 * subscribe to; every join or leave rebalances: partitions that move are first revoked from their
 * current owner (its in-flight batches settle, then onRevoke runs), and only then assigned to the new
 * owner (onAssign, then delivery). So no partition is ever delivered to two members at once.
 * Rebalances of one group run one after another.
 */
import type { TopicPartition } from '../../engine/ports/log.ts';

export interface GroupMember {
  readonly topics: readonly string[];
  assignedPartitions(): TopicPartition[];
  revoke(partitions: TopicPartition[]): Promise<void>;
  assign(partitions: TopicPartition[]): Promise<void>;
}

interface GroupState {
  members: GroupMember[];
  queue: Promise<void>;
}

export function partitionKey(topic: string, partition: number): string {
  return `${topic}/${partition}`;
}

export class GroupCoordinator {
  #groups = new Map<string, GroupState>();
  #partitionCount: (topic: string) => number;

  constructor(partitionCount: (topic: string) => number) {
    this.#partitionCount = partitionCount;
  }

  join(group: string, member: GroupMember): Promise<void> {
    return this.#serialize(group, (state) => {
      if (!state.members.includes(member)) state.members.push(member);
      return this.#rebalance(state.members, undefined);
    });
  }

  leave(group: string, member: GroupMember): Promise<void> {
    return this.#serialize(group, (state) => {
      state.members = state.members.filter((m) => m !== member);
      return this.#rebalance(state.members, member);
    });
  }

  members(group: string): readonly GroupMember[] {
    return this.#groups.get(group)?.members ?? [];
  }

  #serialize(group: string, step: (state: GroupState) => Promise<void>): Promise<void> {
    let state = this.#groups.get(group);
    if (!state) this.#groups.set(group, state = { members: [], queue: Promise.resolve() });
    const current = state;
    const run = current.queue.then(() => step(current));
    current.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Round-robin per topic over the members subscribed to it, in join order: partition p of a topic
   * goes to subscriber p mod n. Simple and deterministic; not sticky (a join may move several).
   */
  #plan(members: GroupMember[]): Map<GroupMember, Set<string>> {
    const plan = new Map<GroupMember, Set<string>>(members.map((m) => [m, new Set<string>()]));
    const topics = [...new Set(members.flatMap((m) => m.topics))].sort();
    for (const topic of topics) {
      const subscribers = members.filter((m) => m.topics.includes(topic));
      const count = this.#partitionCount(topic);
      for (let p = 0; p < count; p++) plan.get(subscribers[p % subscribers.length])!.add(partitionKey(topic, p));
    }
    return plan;
  }

  async #rebalance(members: GroupMember[], leaving: GroupMember | undefined): Promise<void> {
    const plan = this.#plan(members);
    const everyone = leaving ? [...members, leaving] : members;
    await Promise.all(everyone.map((member) => {
      const keep = plan.get(member);
      const lost = member.assignedPartitions().filter((tp) => !keep?.has(partitionKey(tp.topic, tp.partition)));
      return lost.length > 0 ? member.revoke(lost) : undefined;
    }));
    await Promise.all(members.map((member) => {
      const owned = new Set(member.assignedPartitions().map((tp) => partitionKey(tp.topic, tp.partition)));
      const gained: TopicPartition[] = [];
      for (const key of plan.get(member)!) {
        if (owned.has(key)) continue;
        const slash = key.lastIndexOf('/');
        gained.push({ topic: key.slice(0, slash), partition: Number(key.slice(slash + 1)) });
      }
      return gained.length > 0 ? member.assign(gained) : undefined;
    }));
  }
}

// Preempt and requeue (ADR 0017, "Requeue"): a system of a priority class that requeues (yardd --priority-class
// spot=0:preemptible:requeue) is not simply ended by preemption: the decompose that takes its GPUs carries the
// request it is queued again as (QueuedRequest::requeueAs, durable with the operation), and the transaction that
// ends that decompose queues it, under the same name and labels, in the same class. A crash between the two
// cannot lose it: the decompose resumes from its step log and ends the same way.
#pragma once

#include "composer/model/composition.h"
#include "composer/model/error.h"
#include "composer/model/queue.h"
#include "composer/model/topology.h"

namespace switchyard {

// What a system asks for when it is queued again: its shape as it stands, so it gets as much as it had (its whole
// GPUs by count, and by model when they share one; or its MIG instances; or its one share; its drives, NICs and
// other endpoints by kind, model and count; its pooled memory); from what its compose asked for (System::asked),
// the host it was pinned to, a GPU's least memory, MIG-capable GPUs, peer-to-peer, and each endpoint kind's
// affinity, speed and size (a system stored before schema 19 has none of that: any host, any memory, anywhere its
// host reaches, and peer-to-peer required when its whole GPUs, two or more, were under one switch); its class; a
// lease as long as the one it had; its name and labels (requeueAs). Not a queue timeout: it was running, and
// waits until it is admitted or cancelled. Its enqueue time is set when it is queued. kFailedPrecondition for a system that no one request asks for again: whole GPUs beside
// MIG instances or a share, two shares or more, a device the fabric no longer reports, nothing bound.
[[nodiscard]] Result<QueuedRequest> requeueRequestOf(const System& system, const TopologyIndex& devices, const PriorityClass& cls);

}  // namespace switchyard

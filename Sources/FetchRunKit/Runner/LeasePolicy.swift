/// How a worker finds its work: instead of a timetable of its own, a ``Watcher`` with a lease
/// policy asks the store for due sources in batches (``SharedSchedule/leaseDue(limit:until:)``),
/// renews the leases it holds while it fetches, and gives them back when it stops. The store is
/// the schedule, shared by every worker on it; everything else — the fetch, the rules, the
/// commit, the reports — is the watch's.
package struct LeasePolicy: Sendable {
    /// The schedule the workers share.
    package var schedule: any SharedSchedule
    /// Sources leased per query.
    package var batch = 50
    /// How long a lease holds without renewal: the longest a dead worker's sources wait.
    /// Leases are renewed every third of it.
    package var leaseTime: Duration = .seconds(60)
    /// How often to look for due sources when none was found.
    package var pollInterval: Duration = .milliseconds(250)

    package init(schedule: any SharedSchedule, batch: Int = 50, leaseTime: Duration = .seconds(60), pollInterval: Duration = .milliseconds(250)) {
        self.schedule = schedule
        self.batch = max(1, batch)
        self.leaseTime = leaseTime
        self.pollInterval = pollInterval
    }
}

// @testable: unit tests of the flush and retry machine on a manual clock (`FlushMachine`).
@testable import Defaults
import DefaultsTestSupport
import Testing

/// When a store commits what was written in memory, fed events as the store feeds them, with its
/// timer on a manual clock.
@Suite struct FlushMachineTests {
    /// A store's flushing as the store runs it, with the timer on a manual clock and commits
    /// recorded instead of made.
    private struct Timeline {
        var machine = FlushMachine()
        let clock = ManualClock()
        /// When the armed timer fires, if armed.
        var deadline: ManualClock.Instant?
        /// When each commit ran, as offsets from the start.
        var commits: [Duration] = []
        /// Whether changes wait for a commit.
        var isDirty = false

        /// A write: the change waits, and the timer is armed if it was not.
        mutating func write() {
            isDirty = true
            if machine.changed() { carryOut(.arm(after: FlushMachine.coalescingDelay)) }
        }

        /// Moves the clock on; fires the timer if its time came.
        mutating func advance(by duration: Duration) {
            clock.advance(by: duration)
            guard let deadline, deadline <= clock.now else { return }
            self.deadline = nil
            carryOut(machine.timerFired(isDirty: isDirty))
        }

        mutating func carryOut(_ action: FlushMachine.Action) {
            switch action {
            case .none:
                return
            case .arm(let delay):
                #expect(deadline == nil, "a second timer armed while one runs")
                deadline = clock.now.advanced(by: delay)
            case .commit:
                commits.append(clock.now.offset)
                isDirty = false
                machine.commitStarted()
            }
        }

        /// The commit under way fails: its changes wait again.
        mutating func fail() {
            isDirty = true
            carryOut(machine.failed())
        }
    }

    @Test func aBurstOfWritesIsCommittedOnceTheCoalescingDelayHasPassed() {
        var timeline = Timeline()
        for _ in 0..<100 { timeline.write() }
        timeline.advance(by: FlushMachine.coalescingDelay - .milliseconds(1))
        #expect(timeline.commits.isEmpty)
        timeline.advance(by: .milliseconds(1))
        #expect(timeline.commits == [FlushMachine.coalescingDelay])
        timeline.machine.committed()
        // Nothing left: the timer is not armed again by itself.
        timeline.advance(by: .seconds(60))
        #expect(timeline.commits.count == 1)
        #expect(timeline.deadline == nil)
    }

    @Test func aFailedCommitIsRetriedAfterADelayThatDoublesUpToHalfAMinute() {
        var timeline = Timeline()
        timeline.write()
        timeline.advance(by: FlushMachine.coalescingDelay)
        var waits: [Duration] = []
        for _ in 0..<9 {
            let failedAt = timeline.clock.now.offset
            timeline.fail()
            while timeline.commits.last! <= failedAt { timeline.advance(by: .milliseconds(10)) }
            waits.append(timeline.commits.last! - failedAt)
        }
        let expected: [Duration] = [
            .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30),
            .seconds(30), .seconds(30),
        ]
        #expect(waits == expected)
    }

    @Test func aCommitThatSucceedsStartsTheNextFailuresFromTheFirstDelay() {
        var timeline = Timeline()
        timeline.write()
        timeline.advance(by: FlushMachine.coalescingDelay)
        timeline.fail()
        timeline.advance(by: .milliseconds(500))
        timeline.fail()
        #expect(timeline.machine.retryDelay == .seconds(1))
        timeline.advance(by: .seconds(1))
        timeline.machine.committed()
        #expect(timeline.machine.retryDelay == .zero)
        timeline.write()
        timeline.advance(by: FlushMachine.coalescingDelay)
        timeline.fail()
        #expect(timeline.machine.retryDelay == .milliseconds(500))
    }

    @Test func aRefusedCommitIsNotRetried() {
        var timeline = Timeline()
        timeline.write()
        timeline.advance(by: FlushMachine.coalescingDelay)
        timeline.machine.refused()
        timeline.advance(by: .seconds(60))
        #expect(timeline.commits.count == 1)
        #expect(timeline.deadline == nil)
        #expect(!timeline.machine.isCommitting)
    }

    @Test func aFailureWhileTheTimerIsArmedForNewWritesArmsNoSecondTimer() {
        var timeline = Timeline()
        timeline.write()
        timeline.advance(by: FlushMachine.coalescingDelay)
        // A write while the commit runs arms the timer; the commit then fails.
        timeline.write()
        timeline.fail()
        #expect(timeline.deadline == timeline.clock.now.advanced(by: FlushMachine.coalescingDelay))
        timeline.advance(by: FlushMachine.coalescingDelay)
        #expect(timeline.commits.count == 2)
    }

    @Test func aHeldTimerOnlyDisarmsAndTheEndOfTheHoldArmsItForWhatIsWaiting() {
        var timeline = Timeline()
        #expect(timeline.machine.hold(true, isDirty: false) == .none)
        timeline.write()
        timeline.advance(by: .seconds(10))
        #expect(timeline.commits.isEmpty)
        #expect(timeline.deadline == nil)
        timeline.carryOut(timeline.machine.hold(false, isDirty: timeline.isDirty))
        timeline.advance(by: FlushMachine.coalescingDelay)
        #expect(timeline.commits == [.seconds(10) + FlushMachine.coalescingDelay])
    }

    @Test func theEndOfAHoldWithNothingWaitingArmsNothing() {
        var machine = FlushMachine()
        _ = machine.hold(true, isDirty: false)
        #expect(machine.hold(false, isDirty: false) == .none)
        #expect(!machine.isArmed)
    }

    @Test func aCommitAskedForNowLeavesTheTimerArmed() {
        // `synchronize()` right after a write: the write's timer stays, and a write after the
        // commit arms no second one.
        var timeline = Timeline()
        timeline.write()
        #expect(timeline.machine.commitNeeded(isDirty: timeline.isDirty))
        timeline.machine.commitStarted()
        timeline.isDirty = false
        timeline.machine.committed()
        timeline.write()
        #expect(timeline.machine.isArmed)
        timeline.advance(by: FlushMachine.coalescingDelay)
        #expect(timeline.commits.count == 1)
    }

    @Test func aCommitRunningOnAnotherThreadIsWaitedForThoughNothingIsPending() {
        var machine = FlushMachine()
        #expect(!machine.commitNeeded(isDirty: false))
        machine.commitStarted()
        #expect(machine.commitNeeded(isDirty: false))
        _ = machine.changed()
        #expect(machine.timerFired(isDirty: false) == .commit)
        machine.committed()
        _ = machine.changed()
        #expect(machine.timerFired(isDirty: false) == .none)
    }

    @Test func changesPutBackAfterAFailureArmTheTimerOnlyWhenNothingElseDid() {
        var machine = FlushMachine()
        #expect(machine.pending(isDirty: true) == .arm(after: FlushMachine.coalescingDelay))
        #expect(machine.pending(isDirty: true) == .none)
        #expect(machine.timerFired(isDirty: true) == .commit)
        #expect(machine.pending(isDirty: false) == .none)
    }

    @Test func aFailureIsReportedOnceWhileItLastsAndAgainAfterACommitSucceeded() {
        var machine = FlushMachine()
        var reported: [Bool] = []
        reported.append(machine.reportsFailure("disk full"))
        // A retry that fails the same way, then another failure, and its retry.
        reported.append(machine.reportsFailure("disk full"))
        reported.append(machine.reportsFailure("it is a FIFO"))
        reported.append(machine.reportsFailure("it is a FIFO"))
        // Gone and back again.
        machine.committed()
        reported.append(machine.reportsFailure("it is a FIFO"))
        // The backend answered in between.
        machine.refused()
        reported.append(machine.reportsFailure("it is a FIFO"))
        #expect(reported == [true, false, true, false, true, true])
    }

    @Test func aFailureTheBackendReportedIsNotReportedAgainByTheCommitNorTheOtherWayRound() {
        var machine = FlushMachine()
        var reported: [Bool] = []
        reported.append(machine.reportsBackendProblem("it is a FIFO"))
        reported.append(machine.reportsFailure("it is a FIFO"))
        reported.append(machine.reportsFailure("it is a socket"))
        // A commit reported it already.
        reported.append(machine.reportsBackendProblem("it is a socket"))
        machine.backendReadWell()
        machine.committed()
        reported.append(machine.reportsBackendProblem("it is a socket"))
        // The backend read well since it reported it.
        machine.backendReadWell()
        reported.append(machine.reportsFailure("it is a socket"))
        #expect(reported == [true, false, true, false, true, true])
    }

    /// The open reported an unreadable file, and the file's watch finds it so again: one problem.
    /// (A program writing over a settings file linked to /etc/passwd printed it twice, slowed
    /// under ThreadSanitizer so the watch's retries ended before it exited.)
    @Test func aProblemTheBackendReportsAgainIsNotReportedAgainUntilItReadWell() {
        var machine = FlushMachine()
        var reported: [Bool] = []
        reported.append(machine.reportsBackendProblem("it is a symlink"))
        reported.append(machine.reportsBackendProblem("it is a symlink"))
        reported.append(machine.reportsFailure("it is a symlink"))
        reported.append(machine.reportsBackendProblem("it is a symlink"))
        machine.backendReadWell()
        reported.append(machine.reportsBackendProblem("it is a symlink"))
        #expect(reported == [true, false, false, false, true])
    }
}
